"""Durable workflows the TUI tests run for real, in the test process and in subprocesses.

python tui_workflows.py JOURNAL killed     run ``notify`` and SIGKILL it inside its marker
python tui_workflows.py JOURNAL approval   run ``publish``: wait for an approval, then finish
python tui_workflows.py JOURNAL slow GATE  run ``slow``: step 1, wait until GATE exists, step 2
python tui_workflows.py JOURNAL quick      run ``quick`` and SIGKILL it inside its second step
python tui_workflows.py JOURNAL charge     run ``charger`` and SIGKILL it inside its marker
python tui_workflows.py JOURNAL cell       run ``edited_cell`` and SIGKILL it inside its marker
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from letitloop import Budget, Retry, atomic_marker, durable, record_cost, step


class RateLimited(Exception):
    """A transient error (retried by the default classifier)."""


def pipeline(journal: Path, key: str = "p1", name: str = "etl.pipeline") -> Any:
    """Three steps with JSON outputs and a recorded cost."""

    def work(label: str, value: int) -> dict[str, Any]:
        record_cost(usd=0.0001 * value)
        return {"label": label, "value": value * 10, "tags": ["a", "b"]}

    @durable(journal=journal, name=name, run_id=key)
    def run() -> list[int]:
        a = step("fetch", work, "fetch", 1)
        b = step("transform", work, "transform", 2)
        c = step("store", work, "store", 3)
        return [a["value"], b["value"], c["value"]]

    return run


def failing(journal: Path, key: str = "f1") -> Any:
    @durable(journal=journal, name="etl.failing", run_id=key)
    def run() -> None:
        step("load", lambda: "loaded")
        step("divide", lambda: 1 / 0)

    return run


def dead_letter(journal: Path, fail_times: int, key: str = "d1") -> tuple[Any, list[int]]:
    """A step that raises RateLimited ``fail_times`` times, with 2 attempts per budget."""
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= fail_times:
            raise RateLimited("429 slow down")
        return "ok"

    @durable(journal=journal, name="agent.dead", run_id=key)
    def run() -> str:
        return step("call_model", call, retry=Retry(attempts=2, backoff=0.0, jitter=False))

    return run, calls


def budgeted(journal: Path, key: str = "b1") -> Any:
    """Each step costs $0.00002; a budget of $0.00005 stops the run before its third step."""

    def call(i: int) -> int:
        record_cost(usd=0.00002)
        return i

    @durable(journal=journal, name="agent.budget", run_id=key, budget=Budget(usd=0.00005))
    def run() -> list[int]:
        return [step(f"s{i}", call, i, estimate=0.00002) for i in range(4)]

    return run


def notifier(journal: Path | str, sent: Path | str, kill_inside: bool = False) -> Any:
    """A marker around an e-mail (a line in ``sent``); optionally die inside the block."""

    @durable(journal=journal, name="shop.notify", run_id="order-1")
    def notify() -> int:
        total = step("price", lambda: 42)
        with atomic_marker("send_email") as should_send:
            if should_send:
                with open(sent, "a", encoding="utf-8") as f:
                    f.write("email\n")
                if kill_inside:
                    os.kill(os.getpid(), signal.SIGKILL)
        step("archive", lambda t: f"archived {t}", total)
        return total

    return notify


def quick(journal: Path | str, kill: bool = False) -> Any:
    """Three steps of a few milliseconds; with ``kill`` the process dies inside the second."""

    def second() -> int:
        if kill:
            os.kill(os.getpid(), signal.SIGKILL)
        return 2

    @durable(journal=journal, name="etl.quick", run_id="q1")
    def run() -> int:
        return int(step("first", lambda: 1)) + step("second", second) + step("third", lambda: 3)

    return run


def _closed() -> None:
    raise RuntimeError("the warehouse is closed")


def charger(journal: Path | str, kill: bool = False) -> Any:
    """A marker around a card charge, then a step that fails: with ``kill`` the process dies
    inside the marker's block (its first attempt); called again after a ``redo``, the block
    completes in its second attempt and the run fails after it."""

    @durable(journal=journal, name="shop.charge", run_id="c1")
    def charge() -> None:
        step("quote", lambda: 10)
        with atomic_marker("charge_card") as go:
            if go and kill:
                os.kill(os.getpid(), signal.SIGKILL)
        step("ship", _closed)

    return charge


def edited_cell(journal: Path | str, edited: bool = False) -> Any:
    """A notebook-like cell (``on_change="rerun"``): first it dies inside its marker; edited,
    the marker is gone (its attempt superseded) and the cell fails later on."""

    @durable(journal=journal, name="shop.cell", run_id="n1", on_change="rerun")
    def cell() -> None:
        step("load", lambda: 1)
        if not edited:
            with atomic_marker("send_report") as go:
                if go:
                    os.kill(os.getpid(), signal.SIGKILL)
            return
        step("draft", lambda: "draft")
        step("send_later", _closed)

    return cell


def slow(journal: Path | str, gate: Path | str) -> Any:
    """Step one, then wait for ``gate`` to exist (the test creates it), then step two."""

    def wait_for_gate() -> str:
        deadline = time.time() + 60
        while not Path(gate).exists() and time.time() < deadline:
            time.sleep(0.02)
        return "gate open"

    @durable(journal=journal, name="live.slow", run_id="s1")
    def run() -> str:
        step("first", lambda: "one")
        step("wait", wait_for_gate)
        return step("last", lambda: "done")

    return run


def publisher(journal: Path | str) -> Any:
    """Asks for approval of a post and blocks until someone decides."""
    from letitloop import approval  # type: ignore[attr-defined]

    @durable(journal=journal, name="blog.publish", run_id="post-1")
    def publish() -> str:
        draft = step("draft", lambda: {"title": "Hello", "words": 120})
        decision = approval("publish", payload=draft, timeout="10m", on_timeout="reject")
        if not decision.approved:
            return "rejected"
        return step("post", lambda: f"posted {draft['title']}")

    return publish


SCHEMA = {
    "type": "object",
    "required": ["title"],
    "properties": {"title": {"type": "string"}, "words": {"type": "integer"}},
}


def editable(journal: Path | str, key: str = "post-2") -> Any:
    """Asks for approval with a schema and suspends (``wait=False``) until it is decided."""
    from letitloop import approval  # type: ignore[attr-defined]

    @durable(journal=journal, name="blog.edit", run_id=key)
    def publish() -> dict[str, Any]:
        draft = step("draft", lambda: {"title": "Draft", "words": 99})
        decision = approval("publish", payload=draft, schema=SCHEMA, wait=False)
        return {"approved": decision.approved, "payload": decision.payload, "by": decision.by}

    return publish


def writer(journal: Path, key: str = "w1") -> Any:
    """A step whose output is a long markdown text."""

    @durable(journal=journal, name="agent.writer", run_id=key)
    def run() -> str:
        return step("write", lambda: "# Report\n\n" + "word " * 3000)

    return run


# -- importable workflows (module level), so ``lil runs resume`` can run them again -------------


@durable(name="agent.spend", budget=Budget(usd=0.00005))
def spend(count: int) -> list[int]:
    """Each step costs $0.00002: the budget suspends the run before its third step."""

    def call(i: int) -> int:
        record_cost(usd=0.00002)
        return i

    return [step(f"s{i}", call, i, estimate=0.00002) for i in range(count)]


if __name__ == "__main__":
    journal, what = sys.argv[1], sys.argv[2]
    if what == "killed":
        notifier(journal, sys.argv[3], kill_inside=True)()
        sys.exit("not killed")
    elif what == "approval":
        print(publisher(journal)(), flush=True)
    elif what == "slow":
        print(slow(journal, sys.argv[3])(), flush=True)
    elif what in ("quick", "charge", "cell"):
        killed = {"quick": quick(journal, kill=True), "charge": charger(journal, kill=True)}
        (killed[what] if what in killed else edited_cell(journal))()
        sys.exit("not killed")
