def fetch(self):
    return 2
