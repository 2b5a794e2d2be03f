def Load():
    return 2
