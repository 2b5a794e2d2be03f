from letitloop import durable, step


@durable
def sync(user_id):
    user = step("fetch_user", fetch_user, user_id, fields=["plan"])
    return user
