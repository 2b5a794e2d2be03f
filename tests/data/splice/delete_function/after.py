import os


# the first
def a():
    return 1


def c():
    return 3
