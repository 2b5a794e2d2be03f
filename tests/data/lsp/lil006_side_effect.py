import os
import shutil
import subprocess
from pathlib import Path

from letitloop import atomic_marker, durable, step


def send(message):
    return message


@durable
def flow(path: str):
    Path(path).write_text("report")  # expect: LIL006
    with open(path, "a") as fh:  # expect: LIL006
        fh.write("more")  # expect: LIL006
    with open(path) as fh:
        text = fh.read()
    subprocess.run(["true"])  # expect: LIL006
    os.remove(path)  # expect: LIL006
    shutil.rmtree("/tmp/nothing", ignore_errors=True)  # expect: LIL006
    with atomic_marker("notify") as should_execute:
        if should_execute:
            Path(path).write_text("sent")
            os.remove(path)
    return step("send", send, text)
