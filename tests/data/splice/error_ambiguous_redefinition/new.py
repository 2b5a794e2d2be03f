def handler():
    return 3
