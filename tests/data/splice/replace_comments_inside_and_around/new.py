def second():
    # only step
    return 2  # simpler
