class Repo:
    """Storage."""

    def load(self, key):
        return self.items[key]

    # the only writer
    def save(self, item):
        self.items.append(item)
