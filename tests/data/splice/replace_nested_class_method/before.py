class Outer:
    """Outer."""

    class Inner:
        """Inner."""

        def method(self):
            return 1

        def other(self):
            return 2

    def method(self):
        return 3
