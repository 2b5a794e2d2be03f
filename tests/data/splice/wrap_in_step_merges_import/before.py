from letitloop import durable


@durable
def sync(user_id):
    user = fetch_user(user_id, fields=["plan"])
    return user
