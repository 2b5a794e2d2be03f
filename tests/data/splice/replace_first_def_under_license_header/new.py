# Entry point.
def main():
    print("hello, world")
