"""Tools."""


def one():
    return 1
