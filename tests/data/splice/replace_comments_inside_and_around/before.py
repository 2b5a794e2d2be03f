def first():
    return 1
# a flush-left note about second


def second():
    # step one
    x = 1  # trailing
    # step two
    return x
    # dead code below
    # return 2
# a note after second, flush left

def third():
    return 3
