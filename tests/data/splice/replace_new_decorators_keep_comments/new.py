@route("/items", methods=["GET"])
@cached
def items(self):
    return list(self.store)
