def parse(value):
    return type(value)(value)
