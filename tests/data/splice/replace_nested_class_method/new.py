def method(self):
    """Now documented.

    Second paragraph.
    """
    value = 10
    return value
