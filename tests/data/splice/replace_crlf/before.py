"""A file saved on Windows."""


def greet(name):
    return "hi " + name


def bye():
    return "bye"
