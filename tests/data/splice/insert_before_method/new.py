def load(self, key):
    return self.items[key]
