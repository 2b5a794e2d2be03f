def first():
    return 1


def last():
    value = 2
    return value