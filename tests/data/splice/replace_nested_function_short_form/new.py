def helper():
    return "new"
