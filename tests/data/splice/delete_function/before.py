import os


# the first
def a():
    return 1


# the second
@cached
def b():
    return 2


def c():
    return 3
