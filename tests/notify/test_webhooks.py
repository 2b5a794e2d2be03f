"""Webhooks from the DuckDB owner's outbox, delivered to a local HTTP server.

Real processes journal runs that need a person (failed, dead-lettered, stopped by the budget);
the owner signs and posts one notification per event. The signature verifies over the exact
body; an owner SIGKILLed between the event and its delivery delivers it after it is started
again, exactly once per idempotency key; a receiver that is down is retried, then the
notification is reported as failed by ``lil notify list`` and ``lil journal doctor``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from tests.helpers import (
    ROOT,
    child_env,
    free_port,
    journal_owner_pid,
    run_lil,
    wait_gone,
    wait_until,
)
from tests.notify.receiver import Receiver

HERE = Path(__file__).parent
SECRET = "s3cret-for-tests"


def _env(journal: Path, url: str) -> dict[str, str]:
    return child_env(journal, LIL_NOTIFY_URL=url, LIL_NOTIFY_SECRET=SECRET)


def _settings(journal: Path, **table: object) -> None:
    """[tool.letitloop.notify] beside the journal: short backoffs for the test."""
    journal.parent.mkdir(parents=True, exist_ok=True)
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in table.items())
    (journal.parent / "pyproject.toml").write_text(f"[tool.letitloop.notify]\n{lines}\n")


def _flows(env: dict[str, str], *names: str) -> str:
    done = subprocess.run(
        [sys.executable, str(HERE / "notify_flows.py"), *names],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_signed_webhooks_for_each_event_people_act_on(journal_path: Path) -> None:
    _settings(journal_path, backoff=0.2, max_backoff=0.5)
    receiver = Receiver()
    try:
        env = _env(journal_path, receiver.url)
        out = _flows(env, "fail", "dead", "budget")
        assert "fail ValueError" in out and "dead DeadLetteredError" in out
        wait_until(
            lambda: len(receiver.deliveries()) >= 3, 30, what=receiver.deliveries, interval=0.1
        )
        time.sleep(1.5)  # nothing more comes: the dead letter's failed run is not said twice
        got = receiver.deliveries()
        events = {}
        for headers, body in got:
            Webhook(SECRET.encode()).verify(body, headers)  # Standard Webhooks' own check
            doc = json.loads(body)
            assert headers["webhook-id"] == headers["x-lil-idempotency-key"] == doc["id"]
            events[doc["event"]] = doc
        assert sorted(events) == ["budget_stop", "dead_letter", "run_failed"], got
        assert len(got) == 3
        assert events["run_failed"]["run_id"].endswith(":notify-fail")
        assert "the CRM said no" in events["run_failed"]["text"]
        assert events["dead_letter"]["step"] == "flaky"
        tampered = got[0][1].replace(b"letitloop", b"letitl00p")
        with pytest.raises(WebhookVerificationError):
            Webhook(SECRET.encode()).verify(tampered, got[0][0])
        listed = json.loads(run_lil("notify", "list", "--json", env=env).stdout)
        assert sorted(n["state"] for n in listed) == ["delivered"] * 3
        table = run_lil("notify", "list", env=env).stdout  # the state --state filters on, as a word
        assert table.count(" delivered ") == 3 and "completed" not in table
    finally:
        receiver.close()


def test_approvals_and_effects_in_doubt_notify_too(journal_path: Path) -> None:
    receiver = Receiver()
    try:
        env = _env(journal_path, receiver.url)
        assert "approve ApprovalPending" in _flows(env, "approve")
        killed = subprocess.run(
            [sys.executable, str(HERE / "notify_flows.py"), "doubt"], cwd=ROOT, env=env
        )
        assert killed.returncode == -signal.SIGKILL
        assert "doubt InDoubtError" in _flows(env, "doubt")  # called again: in doubt
        wait_until(
            lambda: len(receiver.deliveries()) >= 2, 30, what=receiver.deliveries, interval=0.1
        )
        time.sleep(1.0)
        docs = [json.loads(body) for _, body in receiver.deliveries()]
        assert sorted(d["event"] for d in docs) == ["approval_waiting", "effect_in_doubt"]
        (asked,) = [d for d in docs if d["event"] == "approval_waiting"]
        assert asked["step"] == "publish" and asked["run_id"].endswith(":notify-approve")
    finally:
        receiver.close()


def test_slack_bodies(journal_path: Path) -> None:
    _settings(journal_path, format="slack", events=["run_failed"])
    receiver = Receiver()
    try:
        _flows(_env(journal_path, receiver.url), "fail", "dead")
        wait_until(lambda: receiver.deliveries(), 30, interval=0.1)
        time.sleep(1.0)
        (_headers, body), *more = receiver.deliveries()
        assert not more  # only the events asked for
        doc = json.loads(body)
        assert list(doc) == ["text"] and "run failed" in doc["text"], doc
    finally:
        receiver.close()


def test_owner_sigkill_between_event_and_delivery_delivers_once(journal_path: Path) -> None:
    _settings(journal_path, backoff=0.2, max_backoff=0.5, max_tries=100)
    port = free_port()  # nobody listens yet: every delivery fails until the receiver starts
    url = f"http://127.0.0.1:{port}/hook"
    env = _env(journal_path, url)
    _flows(env, "fail", "dead", "budget")
    listed = json.loads(run_lil("notify", "list", "--json", env=env).stdout)
    wait_until(
        lambda: len(json.loads(run_lil("notify", "list", "--json", env=env).stdout)) == 3,
        30,
        interval=0.1,
    )
    listed = json.loads(run_lil("notify", "list", "--json", env=env).stdout)
    assert {n["state"] for n in listed} == {"pending"}, listed
    keys = {n["key"] for n in listed}
    os.kill(journal_owner_pid(journal_path), signal.SIGKILL)
    receiver = Receiver(port)
    try:
        time.sleep(1.0)
        assert receiver.deliveries() == []  # the owner is dead: nobody delivers
        run_lil("runs", "list", env=env)  # any client starts a new owner, which delivers
        wait_until(
            lambda: len(receiver.deliveries()) >= 3, 30, what=receiver.deliveries, interval=0.1
        )
        time.sleep(1.5)
        got = [h["x-lil-idempotency-key"] for h, _ in receiver.deliveries()]
        assert sorted(got) == sorted(keys)  # each once, with the key made before the kill
    finally:
        receiver.close()


def test_a_receiver_that_is_down_is_retried_then_reported(journal_path: Path) -> None:
    _settings(journal_path, backoff=0.1, max_backoff=0.2, max_tries=3)
    receiver = Receiver(status=503)
    try:
        env = _env(journal_path, receiver.url)
        _flows(env, "fail")
        wait_until(lambda: len(receiver.deliveries()) >= 3, 30, interval=0.1)
        time.sleep(1.0)
        assert len(receiver.deliveries()) == 3  # max_tries, then it stops
        keys = {h["x-lil-idempotency-key"] for h, _ in receiver.deliveries()}
        assert len(keys) == 1  # the same notification each time
        listed = json.loads(
            run_lil("notify", "list", "--state", "failed", "--json", env=env).stdout
        )
        assert [(n["tries"], n["last_error"]) for n in listed] == [(3, "HTTP 503")]
        shown = run_lil("notify", "list", env=env)
        assert "could not be delivered" in shown.stdout and "HTTP 503" in shown.stdout
        doctor = run_lil("journal", "doctor", env=env)
        assert "notification" in doctor.stdout + doctor.stderr, doctor.stdout
        receiver.status = 200
        assert run_lil("notify", "retry", keys.pop(), env=env).returncode == 0
        wait_until(lambda: len(receiver.deliveries()) == 4, 30, interval=0.1)
        states = json.loads(run_lil("notify", "list", "--json", env=env).stdout)
        assert [n["state"] for n in states] == ["delivered"]
    finally:
        receiver.close()


def test_the_owner_stays_up_for_retries_then_goes_idle(journal_path: Path) -> None:
    _settings(journal_path, backoff=1.0, max_backoff=2.0, max_tries=3)
    receiver = Receiver(status=503)
    try:
        env = _env(journal_path, receiver.url) | {"LIL_OWNER_IDLE": "1"}
        _flows(env, "fail")  # the client leaves at once; the tries take about 3 s
        pid = journal_owner_pid(journal_path)
        wait_until(lambda: len(receiver.deliveries()) >= 3, 20, interval=0.1)  # every try was made
        assert len(receiver.deliveries()) == 3
        wait_gone(pid, 20, what="the owner to go idle once the notification failed")
    finally:
        receiver.close()


def test_owner_sigkill_after_the_post_resends_the_same_key_and_bytes(journal_path: Path) -> None:
    _settings(journal_path, backoff=0.2, max_backoff=0.5, max_tries=100)
    receiver = Receiver()
    killed: list[int] = []

    def kill_the_owner_once(headers: dict[str, str], body: bytes) -> None:
        if not killed:  # the receiver has it; the owner dies before it records that
            killed.append(journal_owner_pid(journal_path))
            os.kill(killed[0], signal.SIGKILL)

    receiver.on_post = kill_the_owner_once
    try:
        env = _env(journal_path, receiver.url)
        _flows(env, "fail")
        wait_until(lambda: killed and len(receiver.deliveries()) >= 1, 30, interval=0.1)
        run_lil("runs", "list", env=env)  # a new owner: the notification is still pending
        wait_until(
            lambda: len(receiver.deliveries()) >= 2, 30, what=receiver.deliveries, interval=0.1
        )
        time.sleep(1.0)
        (first_h, first), (again_h, again) = receiver.deliveries()
        # the same notification: a receiver that drops keys it has seen acts on it once
        assert first_h["x-lil-idempotency-key"] == again_h["x-lil-idempotency-key"]
        assert first_h["webhook-id"] == again_h["webhook-id"] and first == again
        for headers in (first_h, again_h):  # each attempt signs its own time with the body
            Webhook(SECRET.encode()).verify(again, headers)
        listed = json.loads(run_lil("notify", "list", "--json", env=env).stdout)
        assert [(n["state"], n["tries"]) for n in listed] == [("delivered", 1)]
    finally:
        receiver.close()
