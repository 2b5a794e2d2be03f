def send(to, subject, body):
    pass
