import os
from os import getenv

from letitloop import durable, step


@durable
def flow():
    home = os.environ["HOME"]  # expect: LIL002
    user = os.getenv("USER")  # expect: LIL002
    shell = os.environ.get("SHELL")  # expect: LIL002
    lang = getenv("LANG")  # expect: LIL002
    stored = step("read_env", os.getenv, "PATH")
    return [home, user, shell, lang, stored]
