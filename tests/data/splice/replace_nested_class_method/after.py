class Outer:
    """Outer."""

    class Inner:
        """Inner."""

        def method(self):
            """Now documented.

            Second paragraph.
            """
            value = 10
            return value

        def other(self):
            return 2

    def method(self):
        return 3
