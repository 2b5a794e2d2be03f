import random
import time as clock
import uuid
from datetime import date, datetime
from os import urandom

import secrets
from letitloop import durable, step


def fetch(x):
    return x


@durable
def flow(user_id: int):
    started = clock.time()  # expect: LIL001
    today = date.today()  # expect: LIL001
    now = datetime.now()  # expect: LIL001
    token = uuid.uuid4()  # expect: LIL001
    salt = urandom(8)  # expect: LIL001
    pick = random.choice([1, 2, 3])  # expect: LIL001
    secret = secrets.token_hex(8)  # expect: LIL001
    fine = step("stamp", clock.time)
    also_fine = step("jitter", lambda: random.random())
    rng = random.Random(42)
    return step("fetch", fetch, [started, today, now, token, salt, pick, secret, fine, also_fine, rng])


def not_durable():
    return clock.time()
