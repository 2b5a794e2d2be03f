class Handler:
    def handle(self):
        def helper():
            return "new"

        return helper()
