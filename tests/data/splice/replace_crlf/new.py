def greet(name):
    """Say hello."""
    text = """hello
there"""
    return text + name
