def start(self, force=False):
    if self.ready or force:
        for hook in self.hooks:
            hook()
        return True
    return False
