"""smolagents agents made durable resume after a real SIGKILL: a CodeAgent, a ToolCallingAgent
and a manager with a managed agent, each on a scripted offline model, in ``.venvs/smolagents``.

Each case runs the agent uninterrupted once (the reference), then in a fresh journal kills it
while its k-th model call is in flight and calls it again: the model calls are the reference's
plus the one in flight, every completed tool call stays done, the e-mail is sent once, and the
answer is the reference's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.conftest import ROOT, framework_python
from tests.adapters.test_adapter_docs import framework_env
from tests.helpers import lil_json, run_lil, wait_until

SCRIPT = ROOT / "tests" / "adapters" / "frameworks" / "smol_agent.py"
MODEL_CALLS = {"code": 4, "tool": 4, "multi": 5}
WORKFLOW = {"code": "CodeAgent", "tool": "ToolCallingAgent", "multi": "manager"}
TIMEOUT = 180  # seconds for one agent process; generous: the machine may be loaded


class Case:
    """One agent's directory: its journal, its call logs and its answer."""

    def __init__(self, root: Path, kind: str) -> None:
        self.kind = kind
        self.out = root / kind
        self.out.mkdir(parents=True)
        self.journal = self.out / "journal.duckdb"
        self.env = {**framework_env(root / "home"), "LIL_JOURNAL": str(self.journal)}

    def lines(self, name: str) -> list[str]:
        path = self.out / name
        return path.read_text().splitlines() if path.exists() else []

    def result(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / "result.json").read_text())
        return data

    def command(self) -> list[str]:
        return [str(framework_python("smolagents")), str(SCRIPT), str(self.out), self.kind]

    def run(self, **env: str) -> dict[str, Any]:
        """Run the agent to its end; its answer (or error)."""
        (self.out / "result.json").unlink(missing_ok=True)
        out = subprocess.run(
            self.command(),
            env=self.env | env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            cwd=self.out,
        )
        assert out.returncode == 0, out.stderr[-4000:]
        return self.result()

    def kill_when(self, log: str, count: int, **env: str) -> None:
        """Start the agent and SIGKILL it once ``log`` holds ``count`` lines (it hangs there)."""
        proc = subprocess.Popen(
            self.command(),
            env=self.env | env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=self.out,
        )

        def reached() -> bool:
            if len(self.lines(log)) >= count:
                return True
            assert proc.poll() is None, f"the agent ended early: {proc.stderr.read()!r}"  # type: ignore[union-attr]
            return False

        try:
            wait_until(reached, TIMEOUT, what=f"{log} to reach {count} lines")
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            proc.stderr.close()  # type: ignore[union-attr]
        assert proc.returncode == -signal.SIGKILL

    def show(self) -> dict[str, Any]:
        """``lil runs show --json`` of the agent's run, from the main environment's CLI."""
        run_id = f"smolagents:{WORKFLOW[self.kind]}:smol-{self.kind}"
        data: dict[str, Any] = lil_json(
            "runs",
            "show",
            run_id,
            "--json",
            "--journal",
            str(self.journal),
            env=self.env,
            timeout=TIMEOUT,
            script=True,
        )
        return data

    def stop(self) -> None:
        from tests.conftest import _kill_owner

        _kill_owner(self.journal)


@pytest.fixture
def cases(tmp_path: Path) -> Iterator[Any]:
    made: list[Case] = []

    def make(kind: str, label: str = "") -> Case:
        case = Case(tmp_path / (label or "run"), kind)
        made.append(case)
        return case

    yield make
    for case in made:
        case.stop()


_REFERENCE: dict[str, tuple[dict[str, Any], list[str], list[str]]] = {}


def reference(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The uninterrupted run of ``kind``: its result, model calls and tool calls (run once)."""
    if kind not in _REFERENCE:
        case = Case(tmp_path_factory.mktemp(f"reference-{kind}"), kind)
        try:
            result = case.run()
        finally:
            case.stop()
        _REFERENCE[kind] = (result, case.lines("calls"), case.lines("tools"))
    return _REFERENCE[kind]


@pytest.mark.parametrize("kind", ["code", "tool", "multi"])
def test_an_uninterrupted_run_is_a_normal_letitloop_run(kind: str, cases: Any) -> None:
    case = cases(kind)
    result = case.run()
    assert "answer" in result, result
    assert len(case.lines("calls")) == MODEL_CALLS[kind]
    assert case.lines("effects") == [case.lines("effects")[0]]  # the e-mail, once

    shown = case.show()
    run, attempts = shown["run"], shown["attempts"]
    assert run["status"] == "completed"
    names = [(a["kind"], a["name"]) for a in attempts]
    models = [n for k, n in names if n.startswith("model:")]
    assert len(models) == MODEL_CALLS[kind]
    assert ("step", "tool:lookup") in names and ("step", "tool:send_email") in names
    assert ("marker", "send_email") in names  # the tool's own marker, nested in its step
    assert ("step", "tool:final_answer") not in names
    if kind == "multi":  # the managed agent is one step holding its own calls
        assert names[:4] == [
            ("step", "model:manager"),
            ("step", "agent:researcher"),
            ("step", "model:researcher"),
            ("step", "tool:lookup"),
        ]
        assert attempts[1]["next_position"] == 5
    # costs from the model's token usage (TokenUsage(100 + i, 10) at 1 and 2 USD per 1M)
    model_steps = [a for a in attempts if a["name"].startswith("model:")]
    assert all(a["tokens_out"] == 10 and a["model"] == "scripted-1" for a in model_steps)
    assert [a["tokens_in"] for a in model_steps if a["name"] == model_steps[0]["name"]][:2] == [
        100,
        101,
    ]
    assert run["tokens"] == sum(a["tokens_in"] + a["tokens_out"] for a in model_steps)
    assert run["cost_micros"] == sum(a["tokens_in"] + 2 * a["tokens_out"] for a in model_steps)
    # everything journaled as JSON: no pickle, so a journal with pickle off holds it too
    assert {a["codec"] for a in attempts} == {"json"}
    assert shown["result"]["codec"] == "json"

    # a completed run called again answers from the journal, without a model call
    assert case.run() == result
    assert len(case.lines("calls")) == MODEL_CALLS[kind]


KILLS = [
    ("code", 1),
    ("code", 2),
    ("code", 3),
    ("code", 4),
    ("tool", 1),
    ("tool", 3),
    ("tool", 4),
    ("multi", 1),
    ("multi", 2),
    ("multi", 3),
    ("multi", 4),
    ("multi", 5),
]


@pytest.mark.parametrize(("kind", "k"), KILLS, ids=[f"{kind}-call{k}" for kind, k in KILLS])
def test_sigkill_during_a_model_call_resumes_at_that_call(
    kind: str, k: int, cases: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    expected, ref_calls, ref_tools = reference(kind, tmp_path_factory)
    case = cases(kind)
    case.kill_when("calls", k, SMOL_HANG_AT=str(k))
    before = case.lines("calls")
    assert before == ref_calls[:k]

    assert case.run() == expected
    calls = case.lines("calls")
    # the reference's calls plus the one in flight, which is the first call of the new process
    assert len(calls) == len(ref_calls) + 1
    assert calls[k:] == ref_calls[k - 1 :]
    assert sorted(case.lines("tools")) == sorted(ref_tools)  # no completed tool call again
    assert len(case.lines("effects")) == 1


@pytest.mark.parametrize("kind", ["code", "tool", "multi"])
def test_sigkill_inside_a_side_effect_never_repeats_it(
    kind: str, cases: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    expected, ref_calls, _ = reference(kind, tmp_path_factory)
    case = cases(kind)
    case.kill_when("effects", 1, SMOL_HANG_IN="send")

    # called again, the marker is in doubt: the run stops with InDoubtError (smolagents would
    # have turned it into an observation and carried on), and nothing is sent again
    stopped = case.run()
    assert stopped.get("error") == "InDoubtError", stopped
    assert "send_email" in stopped["message"]
    assert len(case.lines("effects")) == 1
    assert case.show()["run"]["status"] == "failed"

    # the person (here the tool's reconcile) says it was sent: the run goes on to its answer
    assert case.run(SMOL_RECONCILE="done") == expected
    assert len(case.lines("effects")) == 1
    assert len(case.lines("calls")) == len(ref_calls)  # no model call was in flight


def test_lil_runs_resume_continues_an_agent_run_inside_a_workflow(
    cases: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The agent's run is a child of ``nightly``, a ``@durable`` workflow of the script, so
    ``lil runs resume`` (in the framework's environment) imports it and continues the agent."""
    expected, ref_calls, ref_tools = reference("multi", tmp_path_factory)
    case = cases("multi")
    case.kill_when("calls", 3, SMOL_HANG_AT="3", SMOL_PARENT="1")  # inside the managed agent
    parent = "smol-nightly:nightly-multi"
    out = run_lil(  # resume imports the agent's script: the framework's environment's lil
        "runs",
        "resume",
        parent,
        "--json",
        "--journal",
        str(case.journal),
        env=case.env | {"SMOL_OUT": str(case.out), "SMOL_KIND": "multi"},
        cwd=case.out,
        timeout=TIMEOUT,
        python=framework_python("smolagents"),
        script=True,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert expected["answer"] in json.loads(out.stdout)["result"], out.stdout
    calls = case.lines("calls")
    assert len(calls) == len(ref_calls) + 1 and calls[3:] == ref_calls[2:]
    assert sorted(case.lines("tools")) == sorted(ref_tools)
    assert len(case.lines("effects")) == 1
    child = case.show()["run"]
    assert child["status"] == "completed" and child["parent"] == parent
