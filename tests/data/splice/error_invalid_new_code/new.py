def load(:
    return 2
