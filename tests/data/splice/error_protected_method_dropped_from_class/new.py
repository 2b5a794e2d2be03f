class Api:
    def ping(self):
        return "PONG"
