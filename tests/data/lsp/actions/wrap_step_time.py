import os
import time

import requests

from letitloop import durable, step


def fetch(user_id):
    return {"id": user_id}


def notify(user):
    return step("notify", print, user)


@durable
def sync_customer(user_id: int) -> str:
    user = step("fetch_user", fetch, user_id)
    stamp = ("héllo 🎉", step("now", time.time))
    page = requests.get("https://example.com")
    os.remove("/tmp/report.txt")
    return f"{user} {stamp} {page}"
