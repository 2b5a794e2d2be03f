"""Restarts: which runs a crashed process had started (found through the contract, as ``lil
watch`` finds them), and the restarts a run view lists, on memory, DuckDB and PostgreSQL."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import pytest

from letitloop import durable, step
from letitloop.kernel import runs_started_by
from letitloop.operate import Restart, restarts_of, run_view, view_json


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
    view = run_view(journal, "restarts.flaky:b")
    assert view.run.attempt == 2
    assert [(r.by, r.reason) for r in view.restarts] == [
        ("lil watch 7@box", "restart 1: x.py killed by SIGKILL")
    ]
    assert isinstance(view.restarts[0], Restart) and view.restarts[0].ts >= began
    assert view_json(view)["restarts"][0]["reason"] == "restart 1: x.py killed by SIGKILL"
    one_try = journal.get_run("restarts.ok:a")
    assert restarts_of(journal, one_try) == []  # one try: never restarted into
