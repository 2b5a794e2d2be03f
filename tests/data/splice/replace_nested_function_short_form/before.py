class Handler:
    def handle(self):
        def helper():
            return "old"

        return helper()
