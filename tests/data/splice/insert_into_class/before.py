class Repo:
    """Storage."""

    def save(self, item):
        self.items.append(item)


def helper():
    pass
