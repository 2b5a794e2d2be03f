class Repo:
    """Storage."""

    # the only writer
    def save(self, item):
        self.items.append(item)
