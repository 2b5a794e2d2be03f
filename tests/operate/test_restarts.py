"""Restarts: which runs a crashed process had started (found through the contract, as ``lil
watch`` finds them), on memory, DuckDB and PostgreSQL; a restart journaled against one of them
reads back among its decisions."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import pytest

from letitloop import durable, step
from letitloop.kernel import runs_started_by
from letitloop.operate import decision_json, decisions


def test_runs_started_by_a_process_and_their_restarts(backend_journal: Any) -> None:
    journal = backend_journal
    began = time.time()
    tries: list[int] = []

    @durable(journal=journal, name="restarts.ok", run_id="a")
    def ok() -> int:
        return step("one", int, "1")

    @durable(journal=journal, name="restarts.flaky", run_id="b")
    def flaky() -> int:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("first try fails")
        return step("one", int, "2")

    ok()
    with pytest.raises(RuntimeError):
        flaky()
    me = f"{os.getpid()}@{socket.gethostname()}"
    assert sorted(runs_started_by(journal, me, began)) == ["restarts.flaky:b", "restarts.ok:a"]
    assert runs_started_by(journal, f"1@{socket.gethostname()}", began) == []
    assert runs_started_by(journal, me, time.time() + 60) == []  # nothing updated since then

    journal.note_restart("restarts.flaky:b", "lil watch 7@box", "restart 1: x.py killed by SIGKILL")
    assert flaky() == 2  # its second try
    (restart,) = [d for d in decisions(journal, "restarts.flaky:b") if d.kind == "restart"]
    assert restart.ts >= began and restart.by == "lil watch 7@box"
    assert decision_json(restart)["text"] == (
        "restarted by lil watch 7@box: restart 1: x.py killed by SIGKILL"
    )
