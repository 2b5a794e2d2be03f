def hello(self):
    return "hello"
