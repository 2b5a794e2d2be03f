class Api:
    # GET /items
    @route("/items")
    def items(self):
        return []
