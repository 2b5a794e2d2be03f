from letitloop import atomic_marker, durable, step


def work(x):
    return x


def helper_called_by_flow(x):
    return step("helper", work, x)


def orphan(x):
    return step("orphan", work, x)  # expect: LIL005


def orphan_marker():
    with atomic_marker("send") as go:  # expect: LIL005
        if go:
            pass


@durable
def flow(x):
    return helper_called_by_flow(x)


top = step("top_level", work, 1)  # expect: LIL005
