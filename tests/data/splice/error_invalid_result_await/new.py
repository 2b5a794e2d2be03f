def load():
    return await fetch()
