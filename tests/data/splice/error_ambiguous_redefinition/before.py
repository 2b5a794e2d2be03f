def handler():
    return 1


def handler():
    return 2
