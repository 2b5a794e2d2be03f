class A:
    def one(self):
        return 1

    def two(self):
        return 2


x = A()
