def outer():
    factor = 2

    # scale it
    def inner(x):
        return x * factor + 1

    return inner
