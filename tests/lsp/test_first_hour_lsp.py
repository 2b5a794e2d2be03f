"""Issue 15, point 16 without an editor: the step name a quick fix proposes comes from what the
call means, and "Make @durable" is offered only for a function that does durable work. The
end-to-end checks are in test_server_code.py, test_server_journal.py and test_neovim.py."""

from __future__ import annotations

import pytest

from letitloop.lsp._actions import fix_for, refactors
from letitloop.lsp._analysis import analyze
from letitloop.lsp._meaning import does_durable_work, step_name

NAMES = [
    ("os.environ.get", "read_env"),
    ("os.getenv", "read_env"),
    ("os.environ[]", "read_env"),
    ("time.time", "now"),
    ("time.monotonic", "now"),
    ("datetime.datetime.now", "now"),
    ("datetime.date.today", "today"),
    ("uuid.uuid4", "new_uuid"),
    ("os.urandom", "random_bytes"),
    ("random.random", "random"),
    ("random.choice", "random_choice"),
    ("secrets.token_hex", "new_token"),
    ("requests.get", "http_get"),
    ("httpx.post", "http_post"),
    ("requests.Session", "http_request"),
    ("openai.OpenAI.chat.completions.create", "call_llm"),
    ("client.chat.completions.create", "call_llm"),
    ("subprocess.run", "run_command"),
    ("os.remove", "remove_file"),
    ("shutil.copy", "copy_file"),
    ("open", "write_file"),
    ("crm.fetch", "fetch_crm"),
    ("slack.send", "send_slack"),
    ("report.write_text", "write_text_report"),
    ("db.commit", "commit_db"),
    ("summarize_with_llm", "summarize_with_llm"),
    ("client.fetchUser", "fetch_user"),
]


@pytest.mark.parametrize(("call", "name"), NAMES, ids=[c for c, _ in NAMES])
def test_step_names_come_from_the_calls_meaning(call: str, name: str) -> None:
    assert step_name(call) == name


FLOW = """\
import os
import time as clock
from os import environ

import requests
from letitloop import durable, step


@durable
def sync(user_id):
    token = os.environ.get("CRM_TOKEN")
    region = environ["REGION"]
    stamp = clock.time()
    page = requests.post("https://crm.example", json={"id": user_id})
    os.remove("/tmp/cache.json")
    return token, region, stamp, page
"""


def test_quick_fixes_propose_meaningful_names() -> None:
    """Was ``step('get', os.environ.get, ...)``, ``step('time', ...)``, ``step('post', ...)``."""
    titles = {}
    for finding in analyze(FLOW).findings:
        action = fix_for(FLOW, finding)
        titles[finding.callee] = action.title if action else None
    assert titles == {
        "os.environ.get": "Journal this call: wrap it in step('read_env')",
        "os.environ[]": None,  # a subscript is not a call: step() cannot wrap it
        "time.time": "Journal this call: wrap it in step('now')",
        "requests.post": "Journal this call: wrap it in step('http_post')",
        "os.remove": "Run this at most once: wrap it in atomic_marker('remove_file')",
    }


HELPERS = """\
import random
import subprocess

from letitloop import atomic_marker, step


def pure(x):
    return {"x": x * 2}


def formats(rows):
    return ", ".join(str(r) for r in rows)


def calls_step(x):
    return step("double", pure, x)


def marks(x):
    with atomic_marker("notify") as should:
        if should:
            print(x)


def rolls():
    return random.randint(1, 6)


def deploys():
    subprocess.run(["make", "deploy"], check=True)


def saves(text):
    with open("out.txt", "w") as f:
        f.write(text)


def reads(path):
    with open(path) as f:
        return f.read()


class Service:
    def ping(self):
        return "pong"

    def push(self, sock, data):
        sock.sendall(data)
"""


def test_make_durable_is_offered_only_for_durable_work() -> None:
    wanted = {"calls_step", "marks", "rolls", "deploys", "saves", "Service.push"}
    for name in ("pure", "formats", "calls_step", "marks", "rolls", "deploys", "saves", "reads"):
        assert does_durable_work(HELPERS, name) is (name in wanted), name
    assert does_durable_work(HELPERS, "Service.push")
    assert not does_durable_work(HELPERS, "Service.ping")
    assert not does_durable_work(HELPERS, "missing")
    analysis = analyze(HELPERS)
    lines = HELPERS.splitlines()
    offered = set()
    for name in ("pure", "formats", "rolls", "deploys", "reads"):
        line = next(i for i, text in enumerate(lines) if text.startswith(f"def {name}(")) + 1
        titles = [a.title for a in refactors(HELPERS, analysis, line, 4, line)]
        offered |= {t.removeprefix("Make ").removesuffix(" @durable") for t in titles}
    assert offered == {"rolls", "deploys"}
