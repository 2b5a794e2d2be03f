"""AutoGen AgentChat teams that really resume: real subprocesses in ``.venvs/autogen`` on
AutoGen's own offline model (``ReplayChatCompletionClient``), SIGKILLed inside a model call or a
tool call and called again (``tests/adapters/frameworks/autogen_team.py``)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.conftest import ROOT, framework_python
from tests.adapters.test_adapter_docs import framework_env
from tests.helpers import as_json, invoke_lil, ok, run_lil

SCRIPT = ROOT / "tests" / "adapters" / "frameworks" / "autogen_team.py"
CALLS = {"team": 4, "stream": 4, "agent": 2, "human": 2}  # model calls each shape makes


@pytest.fixture
def out(tmp_path: Path) -> Iterator[Path]:
    """The scripts' folder: journal, call log, side-effect log; the owner is stopped after."""
    yield tmp_path
    from tests.conftest import _kill_owner

    _kill_owner(tmp_path / "journal")


def run(out: Path, shape: str, kill: str = "0") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(framework_python("autogen")), str(SCRIPT), str(out), shape, kill],
        capture_output=True,
        text=True,
        env=framework_env(out / "home"),
        timeout=180,
        cwd=out,
    )


def finish(out: Path, shape: str, kill: str = "0") -> dict[str, Any]:
    proc = run(out, shape, kill)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def killed(out: Path, shape: str, kill: str) -> None:
    proc = run(out, shape, kill)
    assert proc.returncode == -9, (proc.returncode, proc.stderr[-4000:])


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def lil_json(out: Path, *args: str) -> Any:
    """``lil ARGS --json`` on the journal in ``out``, in this process: its answer."""
    return as_json(invoke_lil(*args, "--json", journal=out / "journal"))


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each shape's uninterrupted run: its result, its model calls, its side effects."""
    from tests.conftest import _kill_owner

    found = {}
    for shape in ("team", "agent", "human"):
        out = tmp_path_factory.mktemp(f"baseline-{shape}")
        try:
            found[shape] = {
                "result": finish(out, shape),
                "calls": lines(out / "calls"),
                "sent": lines(out / "sent"),
                "asked": lines(out / "asked"),
            }
        finally:
            _kill_owner(out / "journal")
    found["stream"] = found["team"]
    return found


def test_uninterrupted_runs_call_each_model_once(baseline: dict[str, dict[str, Any]]) -> None:
    team = baseline["team"]
    assert team["calls"] == ["writer:0", "critic:0", "writer:1", "critic:1"]
    assert team["sent"] == ["ed"]
    sources = [m[1] for m in team["result"]["messages"]]
    assert sources == ["user", "writer", "writer", "writer", "critic", "writer", "critic"]
    assert team["result"]["messages"][-1][2] == "APPROVE"
    assert baseline["human"]["asked"] == ["critique 1", "APPROVE"]
    assert baseline["human"]["result"]["messages"][-1] == ["TextMessage", "critic", "APPROVE"]
    assert baseline["agent"]["calls"] == ["mailer:0", "mailer:1"]
    assert baseline["agent"]["result"]["messages"][-1] == ["TextMessage", "mailer", "mailed ed"]


@pytest.mark.parametrize(
    ("shape", "kill"),
    [("team", "1"), ("team", "2"), ("team", "3"), ("team", "4"), ("agent", "1"), ("agent", "2")]
    + [("stream", "3"), ("human", "1"), ("human", "2")],
)
def test_killed_in_a_model_call_resumes_without_repeating_one(
    out: Path, shape: str, kill: str, baseline: dict[str, dict[str, Any]]
) -> None:
    killed(out, shape, kill)
    assert len(lines(out / "calls")) == int(kill)
    result = finish(out, shape)
    calls = lines(out / "calls")
    # every completed call replays from the journal; only the one in flight runs again, so the
    # offline model is asked for the same answers in the same order, plus that one
    assert len(calls) == CALLS[shape] + 1
    assert calls[: int(kill)] == baseline[shape]["calls"][: int(kill)]
    assert calls[int(kill) :] == baseline[shape]["calls"][int(kill) - 1 :]
    assert lines(out / "sent") == ["ed"]  # the side effect happened once
    assert lines(out / "asked") == baseline[shape]["asked"]  # a person: each question once
    assert result == baseline[shape]["result"]  # same messages, same speakers, same order
    again = finish(out, shape)  # a completed run called again: its journaled result, no call
    assert again == result
    assert len(lines(out / "calls")) == CALLS[shape] + 1


def test_killed_after_the_side_effect_does_not_repeat_it(
    out: Path, baseline: dict[str, dict[str, Any]]
) -> None:
    killed(out, "team", "after-tool")
    assert lines(out / "sent") == ["ed"]
    result = finish(out, "team")
    assert lines(out / "sent") == ["ed"]  # the tool's child run replayed its marker
    assert lines(out / "calls") == baseline["team"]["calls"]  # no model call repeated
    assert result == baseline["team"]["result"]


def test_killed_inside_the_side_effect_stops_in_doubt_until_resolved(
    out: Path, baseline: dict[str, dict[str, Any]]
) -> None:
    killed(out, "team", "in-tool")
    proc = run(out, "team")
    # AutoGen would turn the tool's error into a chat message and go on: the run stops instead
    assert proc.returncode == 1
    assert "InDoubtError" in proc.stderr and "lil effects resolve" in proc.stderr
    assert lines(out / "sent") == ["ed"]
    assert lines(out / "calls") == ["writer:0"]  # nothing asked the model past the tool
    (doubt,) = lil_json(out, "effects", "list")
    ok(
        invoke_lil(
            "effects", "resolve", doubt["run_id"], "send_email", "--done", journal=out / "journal"
        )
    )
    result = finish(out, "team")
    assert lines(out / "sent") == ["ed"]
    assert lines(out / "calls") == baseline["team"]["calls"]
    assert result == baseline["team"]["result"]


def test_a_tool_asking_approval_suspends_the_team_and_continues_once_approved(
    out: Path, baseline: dict[str, dict[str, Any]]
) -> None:
    proc = run(out, "team", "approve")
    assert proc.returncode == 1 and "ApprovalPending" in proc.stderr, proc.stderr[-3000:]
    statuses = {r["run_id"]: r["status"] for r in lil_json(out, "runs", "list")}
    assert statuses["autogen:RoundRobinGroupChat:essay"] == "suspended"
    assert lines(out / "sent") == []
    (pending,) = lil_json(out, "approvals", "list")
    ok(invoke_lil("approvals", "approve", pending["id"], journal=out / "journal"))
    result = finish(out, "team", "approve")
    assert lines(out / "sent") == ["ed"]
    assert lines(out / "calls") == baseline["team"]["calls"]
    assert result == baseline["team"]["result"]


def test_the_run_is_a_letitloop_run_with_model_and_tool_steps_and_costs(out: Path) -> None:
    killed(out, "team", "2")
    finish(out, "team")
    shown = lil_json(out, "runs", "show", "essay")
    assert shown["run"]["run_id"] == "autogen:RoundRobinGroupChat:essay"
    assert shown["run"]["status"] == "completed"
    done = [(a["name"], a["kind"]) for a in shown["attempts"] if a["status"] == "completed"]
    assert done == [
        ("model:writer", "step"),
        ("tool:send_email", "child"),
        ("model:critic", "step"),
        ("model:writer", "step"),
        ("model:critic", "step"),
    ]
    first = next(a for a in shown["attempts"] if a["name"] == "model:writer")
    assert (first["tokens_in"], first["tokens_out"], first["model"]) == (10, 5, "gpt-4o")
    # gpt-4o's price: 10 * 2.50 + 5 * 10.00 micro-dollars
    assert first["cost_micros"] == 75
    assert shown["run"]["cost_micros"] > 75 and shown["run"]["tokens"] > 15
    statuses = {r["run_id"]: r["status"] for r in lil_json(out, "runs", "list")}
    assert statuses == {
        "autogen:RoundRobinGroupChat:essay": "completed",
        "autogen:RoundRobinGroupChat.tool:essay.0.1": "completed",
    }


def test_importing_the_adapters_package_does_not_import_autogen() -> None:
    code = (
        "import letitloop, letitloop.adapters, sys, json\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('autogen'))))"
    )
    proc = subprocess.run(
        [str(framework_python("autogen")), "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
    )
    assert json.loads(proc.stdout) == []
    proc = subprocess.run(  # the same interpreter does have it: the check above means something
        [str(framework_python("autogen")), "-c", "import letitloop.adapters.autogen"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr


def test_without_autogen_the_adapter_says_which_extra_to_install() -> None:
    from tests.conftest import modules_after

    assert not any(m.startswith("autogen") for m in modules_after("import letitloop.adapters"))
    proc = subprocess.run(  # the main environment has no AutoGen
        ["python", "-c", "import letitloop.adapters.autogen"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": f"{ROOT / '.venv' / 'bin'}:/usr/bin:/bin"},
        cwd=ROOT,
    )
    assert proc.returncode == 1
    assert "ConfigError" in proc.stderr and "letitloop[autogen]" in proc.stderr


def test_a_selector_team_suspended_and_approved_in_the_same_process(out: Path) -> None:
    """The selector's own model call is journaled; calling the same team object again after it
    stopped (AutoGen cannot rerun a team whose agent raised) rewinds it and replays."""
    proc = subprocess.run(
        [str(framework_python("autogen")), str(ROOT / SCRIPT.parent / "autogen_selector.py")]
        + [str(out)],
        capture_output=True,
        text=True,
        env=framework_env(out / "home"),
        timeout=180,
        cwd=out,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["pending"] == "autogen:SelectorGroupChat.tool:sel.0.2"
    assert report["sent_before"] == [] and report["sent"] == ["ed"]
    assert [m[0] for m in report["messages"]] == [
        *("user", "writer", "writer", "writer"),
        *("critic", "writer", "critic"),
    ]
    assert report["messages"][-1] == ["critic", "APPROVE"]
    assert report["stop"] == "Text 'APPROVE' mentioned"
    assert report["counters"] == [1, 2]  # each offline model answered each question once
    assert "takes an AgentChat team or agent" in report["errors"][0]
    assert "needs a run_id" in report["errors"][1] and "fix:" in report["errors"][1]
    shown = lil_json(out, "runs", "show", "sel")
    names = [a["name"] for a in shown["attempts"] if a["status"] == "completed"]
    assert names[:3] == ["model:SelectorGroupChat", "model:writer", "tool:send"]


def test_a_budget_suspends_the_team_before_the_model_call_that_would_pass_it(
    out: Path, baseline: dict[str, dict[str, Any]]
) -> None:
    proc = run(out, "team", "budget")  # 30 tokens: the third model call would pass them
    assert proc.returncode == 1 and "BudgetExceeded" in proc.stderr, proc.stderr[-3000:]
    assert lines(out / "calls") == baseline["team"]["calls"][:2]
    shown = lil_json(out, "runs", "show", "essay")
    assert shown["run"]["status"] == "suspended" and shown["run"]["tokens"] == 43
    ok(invoke_lil("runs", "budget", "essay", "--tokens", "1000", journal=out / "journal"))
    assert finish(out, "team", "budget") == baseline["team"]["result"]
    assert lines(out / "calls") == baseline["team"]["calls"]
    assert lines(out / "sent") == ["ed"]


def test_lil_runs_resume_continues_a_team_run_inside_a_durable_workflow(out: Path) -> None:
    """A team run in a ``@durable_async`` workflow is its child run, in the workflow's journal;
    ``lil runs resume`` (in the framework's environment) imports the script and continues it."""
    env = {**framework_env(out / "home"), "AG_OUT": str(out), "AG_KILL": "3"}
    script = SCRIPT.parent / "autogen_flow.py"
    python = framework_python("autogen")
    proc = subprocess.run(
        [str(python), str(script)], capture_output=True, text=True, env=env, timeout=180, cwd=out
    )
    assert proc.returncode == -9, proc.stderr[-3000:]
    statuses = {r["run_id"]: r["status"] for r in lil_json(out, "runs", "list")}
    assert statuses == {
        "essay-flow:flow": "interrupted",
        "autogen:RoundRobinGroupChat:essay": "interrupted",
    }
    env["AG_KILL"] = "0"
    proc = run_lil(
        "--journal",
        str(out / "journal"),
        "runs",
        "resume",
        "flow",
        env=env,
        cwd=out,
        timeout=180,
        python=python,
        script=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "essay-flow:flow completed" in proc.stdout
    assert "writer:draft 2" in proc.stdout and "critic:APPROVE" in proc.stdout
    assert len(lines(out / "calls")) == 4 + 1  # two replayed, the killed one again, one more


def test_the_team_talks_on_a_blackboard_thread_and_its_tools_write_the_board(
    out: Path, baseline: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """durable_team(board=True): the team's messages are the turns of the thread "team" and a
    tool (a child run) writes the team's board; killed in the 3rd model call and called again,
    each is written once, and lil runs show has the conversation."""
    monkeypatch.setenv("AUTOGEN_BOARD", "1")
    killed(out, "team", "3")
    result = finish(out, "team")
    assert result == baseline["team"]["result"]
    shown = lil_json(out, "runs", "show", "autogen:RoundRobinGroupChat:essay")
    turns = [(t["agent"], t["text"]) for t in shown["conversations"][0]["turns"]]
    assert turns == [(m[1], m[2]) for m in result["messages"]]
    assert [(k["key"], k["version"]) for k in shown["board"]][:1] == [("mail", 1)]
