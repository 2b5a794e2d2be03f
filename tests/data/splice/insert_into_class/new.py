@property
def size(self):
    return len(self.items)
