class Load:
    pass
