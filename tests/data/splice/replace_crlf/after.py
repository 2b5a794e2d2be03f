"""A file saved on Windows."""


def greet(name):
    """Say hello."""
    text = """hello
there"""
    return text + name


def bye():
    return "bye"
