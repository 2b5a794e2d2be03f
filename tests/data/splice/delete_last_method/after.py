class A:
    def one(self):
        return 1


x = A()
