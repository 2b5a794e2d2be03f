def lookup(key):
    return key.lower()
