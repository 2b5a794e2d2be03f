from letitloop import atomic_marker, durable, step


def work(x):
    return x


@durable
def flow(items: list[str]):
    out = []
    for item in items:
        out.append(step(f"fetch_{item}", work, item))  # expect: LIL004
    name = "store"
    step(name, work, out)  # expect: LIL004
    with atomic_marker("notify" + name) as go:  # expect: LIL004
        if go:
            pass
    return step("done", work, out)
