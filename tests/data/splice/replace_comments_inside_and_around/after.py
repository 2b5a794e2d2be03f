def first():
    return 1
# a flush-left note about second


def second():
    # only step
    return 2  # simpler
    # dead code below
    # return 2
# a note after second, flush left

def third():
    return 3
