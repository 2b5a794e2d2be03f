def last():
    value = 2
    return value
