class A:
    # going away
    def one(self):
        return 1
