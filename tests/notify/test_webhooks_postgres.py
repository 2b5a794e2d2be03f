"""Webhooks from a PostgreSQL journal: one client at a time delivers (an advisory lock), and when
it is SIGKILLed another client takes over and delivers what was journaled meanwhile."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from standardwebhooks import Webhook

from tests.helpers import ROOT, child_env, wait_until
from tests.notify.receiver import Receiver

HERE = Path(__file__).parent
SECRET = "pg-secret"
HOLD = (
    "from letitloop.journal import open_journal; import time; open_journal(None); time.sleep(120)"
)


def test_one_client_delivers_and_another_takes_over(pg_dsn: str) -> None:
    receiver = Receiver()
    env = child_env(pg_dsn, LIL_NOTIFY_URL=receiver.url, LIL_NOTIFY_SECRET=SECRET)
    holders: list[subprocess.Popen[bytes]] = []

    def hold() -> None:
        holders.append(
            subprocess.Popen(
                [sys.executable, "-c", HOLD], cwd=ROOT, env=env, start_new_session=True
            )
        )

    def flows(*names: str) -> None:
        """The runs, in a client without notifications: it writes, the holders deliver."""
        quiet = {k: v for k, v in env.items() if not k.startswith("LIL_NOTIFY")}
        done = subprocess.run(
            [sys.executable, str(HERE / "notify_flows.py"), *names],
            cwd=ROOT,
            env=quiet,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]

    try:
        hold()
        hold()  # two clients configured: only the one holding the lock delivers
        time.sleep(3.0)  # both started (the first scan sets the cursor at the journal's end)
        flows("fail", "dead", "budget")
        wait_until(
            lambda: len(receiver.deliveries()) >= 3, 30, what=receiver.deliveries, interval=0.1
        )
        time.sleep(2.0)
        got = receiver.deliveries()
        keys = [h["x-lil-idempotency-key"] for h, _ in got]
        assert len(keys) == len(set(keys)) == 3, keys
        for headers, body in got:
            Webhook(SECRET.encode()).verify(body, headers)  # Standard Webhooks' own check
        events = sorted(json.loads(body)["event"] for _, body in got)
        assert events == ["budget_stop", "dead_letter", "run_failed"]
        for proc in holders:  # every deliverer dies; the next event waits in the journal
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        holders.clear()
        flows("approve")
        time.sleep(1.5)
        assert len(receiver.deliveries()) == 3  # no client delivers now
        hold()  # a new client takes the lock and delivers what was journaled meanwhile
        wait_until(
            lambda: len(receiver.deliveries()) >= 4, 30, what=receiver.deliveries, interval=0.1
        )
        time.sleep(1.0)
        last = json.loads(receiver.deliveries()[-1][1])
        assert last["event"] == "approval_waiting" and len(receiver.deliveries()) == 4
        from letitloop.journal import open_journal

        listed = open_journal(pg_dsn).notifications()
        assert sorted(n.state for n in listed) == ["delivered"] * 4
    finally:
        for proc in holders:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        receiver.close()
