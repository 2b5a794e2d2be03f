def size(self, value):
    if value < 0:
        raise ValueError("size must be >= 0")
    self._size = value
