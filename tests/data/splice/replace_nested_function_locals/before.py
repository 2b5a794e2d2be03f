def outer():
    factor = 2

    def inner(x):
        return x * factor

    return inner
