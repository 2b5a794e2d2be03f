class Repo:
    """Storage."""

    def save(self, item):
        self.items.append(item)

    @property
    def size(self):
        return len(self.items)


def helper():
    pass
