def two():
    return 2
