# models

class Point:
    """A point."""

    x: int
    y: int


ORIGIN = Point()
