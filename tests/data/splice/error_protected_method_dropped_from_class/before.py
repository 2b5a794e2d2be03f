class Api:
    def ping(self):
        return "pong"

    def version(self) -> str:
        return "1"
