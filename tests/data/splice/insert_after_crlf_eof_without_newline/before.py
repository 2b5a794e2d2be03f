def one():
    return 1