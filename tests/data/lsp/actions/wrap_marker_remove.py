import os
import time

import requests

from letitloop import atomic_marker, durable, step


def fetch(user_id):
    return {"id": user_id}


def notify(user):
    return step("notify", print, user)


@durable
def sync_customer(user_id: int) -> str:
    user = step("fetch_user", fetch, user_id)
    stamp = ("héllo 🎉", time.time())
    page = requests.get("https://example.com")
    with atomic_marker("remove_file") as should_execute:
        if should_execute:
            os.remove("/tmp/report.txt")
    return f"{user} {stamp} {page}"
