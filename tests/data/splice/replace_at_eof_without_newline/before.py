def first():
    return 1


def last():
    return 2