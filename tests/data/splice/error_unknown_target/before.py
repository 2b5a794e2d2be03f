class Service:
    def fetch(self):
        return 1
