def send(to, body):
    pass
