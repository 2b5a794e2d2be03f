"""The ``lil`` CLI against real journals, populated by running real durable workflows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import cli_workflows as wf
import pytest

from letitloop.cli import COMMANDS, lil
from letitloop.cli._doctor import check_filesystem, mount_for
from letitloop.cli._shared import parse_duration
from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb._client import open_journal
from tests.helpers import (
    as_json,
    child_env,
    clean_failure,
    invoke_lil,
    lil_command,
    ok,
    run_lil,
    wait_gone,
    wait_until,
)

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _no_env_journal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIL_JOURNAL", raising=False)


def subprocess_env(**extra: str) -> dict[str, str]:
    """A child's environment that can import this folder's workflows."""
    return child_env(pythonpath=[HERE], **extra)


def in_doubt_run(journal: Path, sent: Path) -> None:
    """Run the notifier in a subprocess that SIGKILLs itself inside the marker block."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "cli_workflows.py"), str(journal), str(sent)],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr
    assert sent.read_text().count("email") == 1
    wait_until(  # the owner notices the dead process's closed socket
        lambda: open_journal(journal).get_run(wf.NOTIFY_RUN).run.status == "interrupted",
        10,
        what="the killed run to show as interrupted",
        interval=0.02,
    )


# -- the entry points -------------------------------------------------------------------------


def test_help_runs_as_a_module_and_does_not_import_duckdb() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "letitloop", "--help"],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("runs", "effects", "journal", "demo", "--journal"):
        assert name in proc.stdout
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
    assert "duckdb" not in imported
    assert "letitloop.cli._runs" not in imported  # command modules load only when used


def test_lazy_command_help_matches_the_commands() -> None:
    for name, (_, _, short) in COMMANDS.items():
        command = lil.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None
        assert (command.help or "").split("\n")[0].strip() == short


def test_subprocess_honors_lil_journal(journal_path: Path) -> None:
    wf.pipeline(journal_path, [])()
    proc = run_lil("runs", "list", "--json", journal=journal_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)
    assert [(r["run_id"], r["status"]) for r in runs] == [("tests.pipeline:p1", "completed")]


# -- runs -------------------------------------------------------------------------------------


def test_runs_list_table_and_json(journal_path: Path) -> None:
    wf.pipeline(journal_path, [])()
    with pytest.raises(ZeroDivisionError):
        wf.failing(journal_path)()
    table = ok(invoke_lil("runs", "list", journal=journal_path))
    header = table.splitlines()[0].split()
    assert header[:3] == ["run", "id", "workflow"] and "updated" in header
    lines = {line.split()[0]: line.split() for line in table.splitlines()[1:]}
    assert lines["tests.pipeline:p1"][1:4] == ["tests.pipeline", "completed", "3/3"]
    assert lines["tests.failing:f1"][1:4] == ["tests.failing", "failed", "1/2"]
    assert "ago" in lines["tests.pipeline:p1"][-2:] or "now" in lines["tests.pipeline:p1"][-1]

    runs = as_json(invoke_lil("runs", "list", "--json", journal=journal_path))
    by_id = {r["run_id"]: r for r in runs}
    assert by_id["tests.pipeline:p1"]["steps_done"] == 3
    assert by_id["tests.failing:f1"]["error"]["message"] == "division by zero"

    failed = as_json(
        invoke_lil("runs", "list", "--status", "failed", "--json", journal=journal_path)
    )
    assert [r["run_id"] for r in failed] == ["tests.failing:f1"]
    one = as_json(
        invoke_lil("runs", "list", "--limit", "1", "--json", "--journal", str(journal_path))
    )
    assert len(one) == 1
    by_wf = as_json(
        invoke_lil("runs", "list", "--workflow", "tests.pipeline", "--json", journal=journal_path)
    )
    assert [r["run_id"] for r in by_wf] == ["tests.pipeline:p1"]


def test_runs_show_table_and_json(journal_path: Path) -> None:
    wf.pipeline(journal_path, [])()
    text = ok(invoke_lil("runs", "show", "p1", journal=journal_path))  # the key is enough
    assert "tests.pipeline:p1" in text and "completed" in text
    rows = [line.split() for line in text.splitlines() if line.split()[:1] in (["0"], ["1"], ["2"])]
    assert [r[3] for r in rows] == ["fetch", "transform", "store"]
    assert all(r[4] == "completed" for r in rows)
    assert '"label": "transform"' in text or '"transform"' in text  # the output preview
    assert "result:" in text and "10" in text and "30" in text

    data = as_json(invoke_lil("runs", "show", "tests.pipeline:p1", "--json", journal=journal_path))
    assert data["run"]["status"] == "completed"
    assert [a["name"] for a in data["attempts"]] == ["fetch", "transform", "store"]
    assert json.loads(data["attempts"][2]["preview"]) == {"label": "store", "value": 30}
    assert json.loads(data["result"]["preview"]) == [10, 20, 30]


def test_runs_show_failed_run_shows_the_error(journal_path: Path) -> None:
    with pytest.raises(ZeroDivisionError):
        wf.failing(journal_path)()
    text = ok(invoke_lil("runs", "show", "tests.failing:f1", journal=journal_path))
    assert "failed" in text
    assert "error" in text and "ZeroDivisionError: division by zero" in text
    divide = next(line for line in text.splitlines() if " divide " in line)
    assert "failed" in divide and "ZeroDivisionError" in divide
    traceback = ok(invoke_lil("runs", "show", "f1", "--traceback", journal=journal_path))
    assert "Traceback (most recent call last)" in traceback
    data = as_json(invoke_lil("runs", "show", "f1", "--json", journal=journal_path))
    assert data["run"]["error"]["type"].endswith("ZeroDivisionError")
    assert data["attempts"][1]["error"]["message"] == "division by zero"
    assert data["result"] is None


def test_unknown_run_is_a_clean_error(journal_path: Path) -> None:
    wf.pipeline(journal_path, [])()
    clean_failure(
        invoke_lil("runs", "show", "nope", journal=journal_path), "no run matches 'nope'", "fix:"
    )


def test_reset_then_rerun_executes_again(journal_path: Path) -> None:
    calls: list[str] = []
    run = wf.pipeline(journal_path, calls)
    assert run() == [10, 20, 30]
    assert run() == [10, 20, 30]
    assert calls == ["fetch", "transform", "store"]  # the second call replayed

    refused = invoke_lil("runs", "reset", "p1", journal=journal_path, input="n\n")
    assert refused.exit_code == 1 and "Aborted" in refused.output
    assert run() == [10, 20, 30] and len(calls) == 3  # still completed: nothing was reset

    text = ok(invoke_lil("runs", "reset", "p1", "--yes", journal=journal_path))
    assert "reset tests.pipeline:p1" in text and "runs every step again" in text
    status = as_json(invoke_lil("runs", "list", "--json", journal=journal_path))[0]["status"]
    assert status == "reset"
    assert run() == [10, 20, 30]
    assert calls == ["fetch", "transform", "store"] * 2

    data = as_json(invoke_lil("runs", "reset", "p1", "--yes", "--json", journal=journal_path))
    assert data["was"]["status"] == "completed" and data["now"]["epoch"] == 2


def test_gc_deletes_old_completed_runs_only(journal_path: Path) -> None:
    wf.pipeline(journal_path, [], key="old")()
    with pytest.raises(ZeroDivisionError):
        wf.failing(journal_path)()
    time.sleep(1.5)
    wf.pipeline(journal_path, [], key="new")()

    text = ok(invoke_lil("runs", "gc", "--older-than", "1s", "--yes", journal=journal_path))
    assert "deleted 1 run" in text
    left = {
        r["run_id"] for r in as_json(invoke_lil("runs", "list", "--json", journal=journal_path))
    }
    assert left == {"tests.pipeline:new", "tests.failing:f1"}
    assert "nothing to delete" in ok(
        invoke_lil("runs", "gc", "--yes", journal=journal_path)
    )  # 7d default

    data = as_json(
        invoke_lil(
            "runs",
            "gc",
            "--older-than",
            "1s",
            "--status",
            "failed",
            "--json",
            "--yes",
            journal=journal_path,
        )
    )
    assert data == {**data, "deleted": 1, "runs": ["tests.failing:f1"], "statuses": ["failed"]}
    left = {
        r["run_id"] for r in as_json(invoke_lil("runs", "list", "--json", journal=journal_path))
    }
    assert left == {"tests.pipeline:new"}


def test_durations() -> None:
    assert parse_duration("30m") == 1800
    assert parse_duration("12h") == 12 * 3600
    assert parse_duration("7d") == 7 * 86400
    assert parse_duration("1.5s") == 1.5
    assert parse_duration("90") == 90
    with pytest.raises(ValueError):
        parse_duration("soon")
    bad = invoke_lil("runs", "gc", "--older-than", "soon")
    assert bad.exit_code == 2 and "not a duration" in bad.output


# -- effects ----------------------------------------------------------------------------------


def test_effects_list_shows_the_marker_in_doubt(journal_path: Path, tmp_path: Path) -> None:
    wf.pipeline(journal_path, [])()  # a completed run has nothing in doubt
    assert "no side effect in doubt" in ok(invoke_lil("effects", "list", journal=journal_path))
    sent = tmp_path / "sent.txt"
    in_doubt_run(journal_path, sent)

    text = ok(invoke_lil("effects", "list", journal=journal_path))
    row = next(line.split() for line in text.splitlines() if line.startswith(wf.NOTIFY_RUN))
    assert row[1:5] == ["1", "send_email", "1", "started"]
    assert "stopped inside the block" in text
    assert f"lil effects resolve {wf.NOTIFY_RUN} send_email --done" in text

    (item,) = as_json(invoke_lil("effects", "list", "order-1", "--json", journal=journal_path))
    assert item["run_id"] == wf.NOTIFY_RUN and item["marker"] == "send_email"
    assert item["position"] == 1 and item["status"] == "started"
    assert item["resolve"]["redo"] == f"lil effects resolve {wf.NOTIFY_RUN} send_email --redo"
    assert as_json(invoke_lil("effects", "list", "p1", "--json", journal=journal_path)) == []


def test_resolve_done_lets_the_run_continue_without_rerunning(
    journal_path: Path, tmp_path: Path
) -> None:
    sent = tmp_path / "sent.txt"
    in_doubt_run(journal_path, sent)
    from letitloop import InDoubtError

    with pytest.raises(InDoubtError):  # unresolved, the run refuses to guess
        wf.notifier(journal_path, sent)()

    text = ok(
        invoke_lil(
            "effects",
            "resolve",
            "order-1",
            "send_email",
            "--done",
            "--by",
            "alice",
            journal=journal_path,
        )
    )
    assert "'send_email' (position 1)" in text and "as done" in text and "by alice" in text
    assert "no side effect in doubt" in ok(invoke_lil("effects", "list", journal=journal_path))
    assert wf.notifier(journal_path, sent)() == 42
    assert sent.read_text().count("email") == 1  # the block was not run again
    detail = as_json(invoke_lil("runs", "show", "order-1", "--json", journal=journal_path))
    assert detail["run"]["status"] == "completed"
    marker = detail["attempts"][1]
    assert (marker["resolution"], marker["resolved_by"]) == ("done", "alice")

    again = invoke_lil(
        "effects", "resolve", "order-1", "send_email", "--redo", journal=journal_path
    )
    clean_failure(again, "already resolved as 'done' by alice")


def test_resolve_redo_by_position_runs_the_block_again(journal_path: Path, tmp_path: Path) -> None:
    sent = tmp_path / "sent.txt"
    in_doubt_run(journal_path, sent)
    data = as_json(
        invoke_lil(
            "effects", "resolve", wf.NOTIFY_RUN, "1", "--redo", "--json", journal=journal_path
        )
    )
    assert data["marker"] == "send_email" and data["resolution"] == "redo"
    assert wf.notifier(journal_path, sent)() == 42
    assert sent.read_text().count("email") == 2


def test_resolve_needs_a_decision_and_an_existing_marker(
    journal_path: Path, tmp_path: Path
) -> None:
    in_doubt_run(journal_path, tmp_path / "sent.txt")
    missing = invoke_lil("effects", "resolve", "order-1", "send_email", journal=journal_path)
    assert missing.exit_code == 2 and "--done" in missing.output
    clean_failure(
        invoke_lil("effects", "resolve", "order-1", "nope", "--done", journal=journal_path),
        "no marker",
    )


def test_resolving_twice_the_same_way_is_an_error(journal_path: Path, tmp_path: Path) -> None:
    in_doubt_run(journal_path, tmp_path / "sent.txt")
    ok(invoke_lil("effects", "resolve", "order-1", "send_email", "--done", journal=journal_path))
    again = invoke_lil(
        "effects", "resolve", "order-1", "send_email", "--done", journal=journal_path
    )
    clean_failure(again, "already resolved")


# -- journal ----------------------------------------------------------------------------------


def test_journal_status_without_owner_does_not_start_one(journal_path: Path) -> None:
    text = ok(invoke_lil("journal", "status", journal=journal_path))
    assert str(journal_path) in text and "no owner is running" in text
    data = as_json(invoke_lil("journal", "status", "--json", journal=journal_path))
    assert data["owner"] is None and data["exists"] is False
    paths = JournalPaths(journal_path)
    assert not paths.socket.exists() and not paths.pid_file.exists()


def test_journal_status_stop_and_status_again(journal_path: Path) -> None:
    wf.pipeline(journal_path, [])()
    pid = open_journal(journal_path).owner_pid
    text = ok(invoke_lil("journal", "status", journal=journal_path))
    assert f"pid {pid}" in text and "1 runs, 3 attempts" in text and "log" in text
    data = as_json(invoke_lil("journal", "status", "--json", journal=journal_path))
    owner = data["owner"]
    assert owner["pid"] == pid and owner["runs"] == 1 and owner["attempts"] == 3
    assert owner["events"] > 0 and owner["output_bytes"] > 0
    assert owner["log_end"] >= owner["folded_lsn"]

    assert f"stopped owner pid {pid}" in ok(invoke_lil("journal", "stop", journal=journal_path))
    wait_gone(pid, what=f"the stopped owner {pid} to end")
    assert "no owner is running" in ok(invoke_lil("journal", "status", journal=journal_path))
    assert (
        as_json(invoke_lil("journal", "stop", "--json", journal=journal_path))["stopped"] is False
    )


def test_journal_sql(journal_path: Path) -> None:
    wf.pipeline(journal_path, [])()
    with pytest.raises(ZeroDivisionError):
        wf.failing(journal_path)()
    query = "SELECT run_id, status FROM runs ORDER BY run_id"
    text = ok(invoke_lil("journal", "sql", query, journal=journal_path))
    assert "tests.failing:f1" in text and "(2 rows)" in text
    data = as_json(invoke_lil("journal", "sql", query, "--json", journal=journal_path))
    assert {k: data[k] for k in ("columns", "rows", "truncated")} == {
        "columns": ["run_id", "status"],
        "rows": [["tests.failing:f1", "failed"], ["tests.pipeline:p1", "completed"]],
        "truncated": False,
    }
    refused = invoke_lil("journal", "sql", "DELETE FROM runs", journal=journal_path)
    clean_failure(refused, "only a single SELECT", "fix:")
    assert (
        len(as_json(invoke_lil("journal", "sql", query, "--json", journal=journal_path))["rows"])
        == 2
    )


def test_doctor_passes_on_a_tmp_journal(journal_path: Path) -> None:
    text = ok(invoke_lil("journal", "doctor", journal=journal_path))
    checks = [line for line in text.splitlines() if line[:1] in "✓✗"]
    assert len(checks) == 9 and all(line.startswith("✓") for line in checks)
    assert "chosen by the --journal option" in text and "all checks passed" in text
    data = as_json(invoke_lil("journal", "doctor", "--json", journal=journal_path))
    assert data["ok"] is True
    assert [c["name"] for c in data["checks"]] == [
        "journal path",
        "directory writable",
        "local file system",
        "owner answers",
        "protocol version",
        "quarantine",
        "notifications",
        "log segments",
        "key directory",
    ]


def test_doctor_fails_with_a_fix(tmp_path: Path) -> None:
    result = invoke_lil("journal", "doctor", "--journal", "postgres://db/journal")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "✗ journal path" in result.stdout and "fix:" in result.stdout
    mounts = tmp_path / "mounts"
    mounts.write_text(f"/dev/vda / ext4 rw 0 0\nsrv:/export {tmp_path} nfs4 rw 0 0\n")
    assert mount_for(tmp_path / "x", str(mounts)) == (str(tmp_path), "nfs4")
    check = check_filesystem(tmp_path, str(mounts))
    assert not check.ok and check.fix and "network" in check.detail


# -- demo -------------------------------------------------------------------------------------


def test_demo_passes_end_to_end(tmp_path: Path) -> None:
    proc = run_lil("demo", "--dir", str(tmp_path / "demo"), env=subprocess_env(), timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "zero duplicated side effects" in proc.stdout
    assert "notifications sent           1" in proc.stdout
    log = (tmp_path / "demo" / "side_effects.log").read_text().split("\n")
    names = [line.split()[0] for line in log if line]
    assert len(names) == 12 and len(set(names)) == 12
    assert not JournalPaths(tmp_path / "demo" / "demo-journal" / "journal.duckdb").socket.exists()


def test_demo_json_story(tmp_path: Path) -> None:
    data = as_json(
        invoke_lil("demo", "--dir", str(tmp_path), "--steps", "5", "--seed", "3", "--json")
    )
    assert data["ok"] is True and data["duplicated_side_effects"] == []
    assert data["notifications_sent"] == 1 and data["result_matches_uninterrupted_run"] is True
    assert data["replayed"] == data["done_before"] and len(data["done_before"]) >= 1
    assert set(data["re_executed"]) <= set(data["in_flight"])
    assert (
        len(data["done_before"]) + len(data["re_executed"]) + len(data["executed_first_time"]) == 5
    )


def test_a_reader_that_went_away_stops_lil_quietly(journal_path: Path) -> None:
    """`lil ... | head`: when the pipe's reader is gone, lil exits as a process killed by
    SIGPIPE would (141), with no `error:` line blaming the journal."""
    wf.pipeline(journal_path, [])()  # a run to list
    read, write = os.pipe()
    os.close(read)  # the reader went away before lil wrote anything
    try:
        done = subprocess.run(
            [*lil_command(), "runs", "list", "--journal", str(journal_path)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env=child_env(),
        )
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""
