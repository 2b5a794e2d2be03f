"""Approvals between real processes: a workflow process blocks on ``approval()`` and the real
``lil approvals`` CLI, run as another process, decides it (real owner, real DuckDB journal)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from letitloop import open_journal
from tests.helpers import wait_gone, wait_until

from .conftest import RUN_ID, Lab, result_of


def pending(lab: Lab) -> str:
    journal = open_journal(lab.journal_path)
    rows = wait_until(lambda: journal.approvals(status="pending"), 30, what="a pending approval")
    assert len(rows) == 1 and rows[0].run_id == RUN_ID and rows[0].name == "publish"
    assert rows[0].payload == {"title": "Hello"}
    return str(rows[0].id)


def test_waiting_script_is_released_within_a_second_of_approve(lab: Lab) -> None:
    proc = lab.start("publish", "Hello", "--timeout", "120")
    aid = pending(lab)
    time.sleep(0.5)  # the workflow is now blocked inside approval()
    assert proc.poll() is None and lab.names() == ["draft"]
    cli = lab.lil("approvals", "approve", aid[:6], "-m", "ship it", "--payload", '{"title": "Hi"}')
    assert cli.returncode == 0, cli.stderr
    assert f"approved {aid}" in cli.stdout
    rc, out, err = result_of(proc)
    assert rc == 0, err
    result = json.loads(out.split("RESULT ", 1)[1])
    assert result["approved"] is True and result["payload"] == {"title": "Hi"}
    assert result["comment"] == "ship it" and "@" in result["by"]
    published = [t for name, _, t in lab.steps() if name == "publish"]
    assert len(published) == 1
    assert published[0] - result["at"] < 1.0  # released within 1 s of the decision
    row = open_journal(lab.journal_path).approvals(status="approved")[0]
    assert row.edited == {"title": "Hi"} and row.decided_by == result["by"]


def test_reject_from_the_cli_continues_with_a_rejection(lab: Lab) -> None:
    proc = lab.start("publish", "Hello")
    aid = pending(lab)
    cli = lab.lil("approvals", "reject", aid, "-m", "wrong audience", "--by", "ana@review")
    assert cli.returncode == 0, cli.stderr
    rc, out, err = result_of(proc)
    assert rc == 0, err
    result = json.loads(out.split("RESULT ", 1)[1])
    assert result == result | {"approved": False, "by": "ana@review", "comment": "wrong audience"}
    assert lab.names() == ["draft"]  # nothing published
    shown = lab.lil("approvals", "show", aid, "--json")
    assert json.loads(shown.stdout)["status"] == "rejected"


@pytest.mark.parametrize("on_timeout", ["reject", "approve"])
def test_timeout_applies_on_timeout(lab: Lab, on_timeout: str) -> None:
    started = time.time()
    proc = lab.start("publish", "Hello", "--timeout", "1.0", "--on-timeout", on_timeout)
    rc, out, err = result_of(proc)
    assert rc == 0, err
    result = json.loads(out.split("RESULT ", 1)[1])
    assert result["timed_out"] is True and result["by"] == "timeout"
    assert result["approved"] is (on_timeout == "approve")
    assert started + 1.0 <= result["at"] < started + 15  # decided as of the deadline
    assert lab.names() == (["draft", "publish"] if on_timeout == "approve" else ["draft"])


def test_two_concurrent_deciders_exactly_one_wins(lab: Lab) -> None:
    proc = lab.start("publish", "Hello")
    aid = pending(lab)
    deciders = [
        lab.start_lil("approvals", verb, aid, "--by", who)
        for verb, who in (("approve", "ana@x"), ("reject", "bo@y"))
    ]
    outcomes = [(d.wait(timeout=60), d.stdout.read(), d.stderr.read()) for d in deciders]  # type: ignore[union-attr]
    codes = sorted(code for code, _, _ in outcomes)
    assert codes == [0, 1], outcomes
    winner = 0 if outcomes[0][0] == 0 else 1
    loser_err = outcomes[1 - winner][2]
    verb = "approved" if winner == 0 else "rejected"
    assert f"was already {verb} by {('ana@x', 'bo@y')[winner]}" in loser_err
    assert "fix:" in loser_err
    _rc, out, _ = result_of(proc)
    assert json.loads(out.split("RESULT ", 1)[1])["approved"] is (winner == 0)
    row = open_journal(lab.journal_path).approvals(status=verb)[0]
    assert row.decided_by == ("ana@x", "bo@y")[winner]


def test_on_timeout_suspend_exits_then_a_second_call_finishes(lab: Lab) -> None:
    proc = lab.start("publish", "Hello", "--timeout", "0.5", "--on-timeout", "suspend")
    rc, out, err = result_of(proc)
    assert rc == 3 and "SUSPENDED" in out, err
    assert "timed out without a decision" in out
    journal = open_journal(lab.journal_path)
    assert journal.get_run(RUN_ID).run.status == "suspended"
    aid = journal.approvals(status="pending")[0].id
    assert lab.lil("approvals", "approve", aid).returncode == 0  # a late decision is welcome
    rc, out, err = result_of(
        lab.start("publish", "Hello", "--timeout", "0.5", "--on-timeout", "suspend")
    )
    assert rc == 0, err
    assert json.loads(out.split("RESULT ", 1)[1])["approved"] is True
    assert lab.names() == ["draft", "publish"]  # the draft step did not run again


def test_lil_runs_resume_continues_a_suspended_run_in_a_fresh_process(lab: Lab) -> None:
    rc, out, _ = result_of(lab.start("publish", "Hello", "--wait", "no"))
    assert rc == 3 and "is pending" in out
    journal = open_journal(lab.journal_path)
    aid = journal.approvals(status="pending")[0].id
    early = lab.lil("runs", "resume", RUN_ID)
    assert early.returncode == 3 and "suspended again" in early.stdout  # still undecided
    assert lab.lil("approvals", "approve", aid, "--payload", '{"title": "Final"}').returncode == 0
    resumed = lab.lil("runs", "resume", RUN_ID[-12:], "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["result"]["payload"] == {"title": "Final"}
    assert lab.names() == ["draft", "publish"]
    pids = {pid for _, pid, _ in lab.steps()}
    assert len(pids) == 2  # draft in the first process, publish in the resuming one
    assert journal.get_run(RUN_ID).run.status == "completed"


def test_timeout_passes_while_no_process_runs(lab: Lab) -> None:
    rc, _out, _ = result_of(lab.start("publish", "Hello", "--timeout", "4", "--wait", "no"))
    assert rc == 3
    journal = open_journal(lab.journal_path)
    row = journal.approvals(status="pending")[0]
    wait_until(lambda: time.time() > row.deadline + 0.2, 30, what="the deadline")
    late = lab.lil("approvals", "approve", row.id)
    assert late.returncode == 1 and "timed out at" in late.stderr
    resumed = lab.lil("runs", "resume", RUN_ID, "--json")
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)["result"]
    assert result["approved"] is False and result["timed_out"] is True
    assert result["at"] == pytest.approx(row.deadline)  # as of the deadline, not of the resume


def test_resume_explains_what_it_cannot_do(lab: Lab, tmp_path: Path) -> None:
    script = tmp_path / "inline.py"
    script.write_text(
        "from letitloop import durable, suspend\n"
        "def make():\n"
        "    @durable(run_id='x')\n"
        "    def inner():\n"
        "        suspend('later')\n"
        "    return inner\n"
        "try:\n    make()()\nexcept Exception as e:\n    print(type(e).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], env=lab.env, capture_output=True, text=True, timeout=60
    )
    assert "Suspended" in done.stdout, done.stderr
    resumed = lab.lil("runs", "resume", "inline.make.<locals>.inner:x")
    assert resumed.returncode == 1
    assert "cannot be resumed by name" in resumed.stderr and "fix:" in resumed.stderr


def test_explicit_suspend_then_resume_continues_past_it(lab: Lab) -> None:
    rc, out, _ = result_of(lab.start("paused", "41"))
    assert rc == 3 and "waiting for the data team" in out
    journal = open_journal(lab.journal_path)
    info = journal.get_run("human_workflows.paused:paused-1").run
    assert info.status == "suspended" and "data team" in (info.error or {}).get("message", "")
    resumed = lab.lil("runs", "resume", "paused-1", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["result"] == 42
    assert lab.names() == ["before", "after"]


def test_a_decision_reaches_the_waiter_across_an_owner_crash(lab: Lab) -> None:
    from letitloop.journal._config import JournalPaths

    proc = lab.start("publish", "Hello", "--timeout", "120")
    aid = pending(lab)
    owner = json.loads(JournalPaths(lab.journal_path).pid_file.read_text())["pid"]
    os.kill(owner, signal.SIGKILL)
    wait_gone(owner, 30, what="the owner to die")
    cli = lab.lil("approvals", "approve", aid)  # starts a new owner
    assert cli.returncode == 0, cli.stderr
    rc, out, err = result_of(proc, timeout=30)
    assert rc == 0, err
    assert json.loads(out.split("RESULT ", 1)[1])["approved"] is True
    assert lab.names() == ["draft", "publish"]


def test_lil_runs_cancel_stops_a_running_process(lab: Lab) -> None:
    lab.env["HUMAN_STEP_DELAY"] = "0.3"
    proc = lab.start("ten", "")  # ten slow steps, no kills
    wait_until(lambda: len(lab.names()) >= 2, 30, what="two steps")
    cancel = lab.lil("runs", "cancel", "ten-steps", "--reason", "not needed")
    assert cancel.returncode == 0, cancel.stderr
    rc, _out, err = result_of(proc)
    assert rc == 1 and "RunCancelledError" in err and "cancelled by" in err
    journal = open_journal(lab.journal_path)
    info = journal.get_run("human_workflows.ten_steps:ten-steps").run
    assert info.status == "cancelled" and "not needed" in info.error["message"]
    ran = len(lab.names())
    again = lab.start("ten", "")
    rc, _out, err = result_of(again)
    assert rc == 1 and "lil runs reset" in err
    assert len(lab.names()) == ran  # nothing ran after the cancel
