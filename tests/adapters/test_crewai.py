"""The CrewAI adapter: a crew and a flow on a scripted offline model, SIGKILLed and called again.

Each case runs ``frameworks/crew_pipeline.py`` in ``.venvs/crewai`` on a real journal (its owner
process), kills it with a real SIGKILL during the k-th model call (or inside the side effect's
marker block), and kicks it off again in a new process. CrewAI imports in about 3 s, so the
cases are few: each one checks the model calls made, the side effects, the tools run, the
result against an uninterrupted run's, and what the journal recorded.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.conftest import ROOT, framework_python
from tests.adapters.test_adapter_docs import framework_env
from tests.conftest import _kill_owner, modules_after
from tests.helpers import lil_ok, run_lil

SCRIPT = ROOT / "tests" / "adapters" / "frameworks" / "crew_pipeline.py"
CREW_CALLS = ["research:0", "research:1", "research:2", "write:0"]  # the script, in order
FLOW_CALLS = ["fetch:0", "summarize:0"]
RUN = {"crew": "crewai:crew:otters", "flow": "crewai:OtterFlow:otters"}


class Pipeline:
    """One journal and output folder; ``run()`` starts the script in a fresh interpreter."""

    def __init__(self, root: Path, mode: str) -> None:
        self.root, self.mode = root, mode
        self.journal = root / "journal.duckdb"
        self.out = root / "out"
        root.mkdir(parents=True, exist_ok=True)

    def run(self, *extra: str) -> subprocess.CompletedProcess[str]:
        env = {**framework_env(self.root / "home"), "LIL_JOURNAL": str(self.journal)}
        return subprocess.run(
            [str(framework_python("crewai")), str(SCRIPT), self.mode, str(self.out), *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
            cwd=self.root,
        )

    def result(self, *extra: str) -> dict[str, Any]:
        done = self.run(*extra)
        assert done.returncode == 0, done.stderr[-4000:]
        return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    def killed(self, *extra: str) -> None:
        done = self.run(*extra)
        assert done.returncode == -signal.SIGKILL, (done.returncode, done.stderr[-4000:])

    def lines(self, name: str) -> list[str]:
        path = self.out / name
        return path.read_text().splitlines() if path.exists() else []

    def lil(self, *args: str) -> str:
        """The stdout of the installed ``lil ARGS`` on this pipeline's journal (exit 0)."""
        return lil_ok(*args, "--journal", str(self.journal), cwd=self.root, timeout=60, script=True)

    def shown(self) -> dict[str, Any]:
        return json.loads(self.lil("runs", "show", RUN[self.mode], "--json"))  # type: ignore[no-any-return]


@pytest.fixture
def pipelines(tmp_path: Path) -> Iterator[Any]:
    made: list[Pipeline] = []

    def make(mode: str, name: str = "p") -> Pipeline:
        made.append(Pipeline(tmp_path / f"{name}-{mode}", mode))
        return made[-1]

    yield make
    for p in made:
        _kill_owner(p.journal)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The crew's and the flow's results when nothing is killed."""
    root = tmp_path_factory.mktemp("uninterrupted")
    crew, flow = Pipeline(root, "crew"), Pipeline(root / "f", "flow")
    try:
        results = {"crew": crew.result(), "flow": flow.result()}
        assert crew.lines("calls") == CREW_CALLS
        assert flow.lines("calls") == FLOW_CALLS
        yield results
    finally:
        _kill_owner(crew.journal)
        _kill_owner(flow.journal)


@pytest.mark.parametrize("k", [3, 4], ids=["mid-task-after-side-effect", "second-agent"])
def test_crew_resumes_after_sigkill(pipelines: Any, uninterrupted: dict[str, Any], k: int) -> None:
    p = pipelines("crew")
    p.killed(str(k))
    assert p.lines("calls") == CREW_CALLS[:k]
    result = p.result()
    # only the call in flight ran again: model calls = the script's count + 1
    assert p.lines("calls") == CREW_CALLS[:k] + CREW_CALLS[k - 1 :]
    assert len(p.lines("calls")) == len(CREW_CALLS) + 1
    assert p.lines("sent") == ["otters"]  # the side effect, once
    assert p.lines("lookups") == ["otters"]  # a completed tool call replays, not run again
    # the same answer, task outputs (restored onto the tasks too) and token totals
    assert result == uninterrupted["crew"]
    assert result["task_outputs"] == ["otters hold hands while asleep", result["raw"]]

    shown = p.shown()
    assert shown["run"]["status"] == "completed"
    steps = [(a["name"], a["status"]) for a in shown["attempts"] if a["status"] == "completed"]
    assert [n for n, _ in steps] == [
        "task:research",
        "model:researcher",
        "tool:lookup",
        "model:researcher",
        "tool:send_note",
        "send_note",
        "model:researcher",
        "task:write",
        "model:writer",
    ]
    # costs from the model's token usage: 4 answered calls of 100 in / 20 out at $1/$2 per 1M
    assert shown["run"]["tokens"] == 4 * 120
    assert shown["run"]["cost_micros"] == 4 * 140
    table = p.lil("runs", "show", RUN["crew"])
    assert "task:write" in table and "model:writer" in table and "tool:lookup" in table


def test_side_effect_in_flight_is_in_doubt_not_repeated(
    pipelines: Any, uninterrupted: dict[str, Any]
) -> None:
    p = pipelines("crew")
    p.killed("--kill-in-tool")  # after the note was sent, before the marker recorded it
    assert p.lines("sent") == ["otters"]
    stopped = p.run()
    # CrewAI turns tool errors into observations and retries failed tasks: the stop got through
    assert stopped.returncode != 0
    assert "InDoubtError" in stopped.stderr and "send_note" in stopped.stderr
    assert p.lines("sent") == ["otters"]
    assert p.lines("calls") == CREW_CALLS[:2]  # no model call after the stop
    p.lil("effects", "resolve", RUN["crew"], "send_note", "--done")
    assert p.result() == uninterrupted["crew"]
    assert p.lines("sent") == ["otters"]
    assert p.lines("calls") == CREW_CALLS


@pytest.mark.parametrize("why", ["approval", "budget"])
def test_crew_suspends_and_continues_when_called_again(
    pipelines: Any, uninterrupted: dict[str, Any], why: str
) -> None:
    """A tool asking ``approval()``, or a token budget, stops the crew as a normal letitloop
    run: suspended, decided with ``lil``, and the next kickoff goes on from there."""
    p = pipelines("crew")
    args = ["--approval"] if why == "approval" else ["--tokens", "200"]
    assert p.result(*args) == {
        "suspended": "ApprovalPending" if why == "approval" else "BudgetExceeded"
    }
    assert p.shown()["run"]["status"] == "suspended"
    assert p.lines("calls") == CREW_CALLS[:2]  # the stop got through CrewAI's retries
    assert p.lines("sent") == []
    if why == "approval":
        (pending,) = json.loads(p.lil("approvals", "list", "--json"))
        assert pending["name"] == "send_note" and pending["payload"] == {"text": "otters"}
        p.lil("approvals", "approve", pending["id"])
    else:
        p.lil("runs", "budget", RUN["crew"], "--tokens", "100000")
    assert p.result(*args) == uninterrupted["crew"]
    assert p.lines("calls") == CREW_CALLS  # no model call was made twice
    assert p.lines("sent") == ["otters"] and p.lines("lookups") == ["otters"]


def test_flow_resumes_after_sigkill(pipelines: Any, uninterrupted: dict[str, Any]) -> None:
    p = pipelines("flow")
    p.killed("2")  # in summarize's model call: fetch finished, its state changed
    result = p.result()
    assert p.lines("calls") == FLOW_CALLS + FLOW_CALLS[1:]  # fetch was skipped
    assert p.lines("sent") == ["sea otters hold hands"]
    # publish reads state.notes, which only the skipped fetch set: the state was restored
    assert result == uninterrupted["flow"]
    assert result["raw"] == "SUMMARY(sea otters hold hands) after 1 note(s)"
    shown = p.shown()
    names = [a["name"] for a in shown["attempts"] if a["status"] == "completed"]
    assert names == [
        "flow:fetch",
        "model:scripted-1",
        "notify",
        "flow:summarize",
        "model:scripted-1",
        "flow:publish",
    ]
    assert shown["run"]["tokens"] == 2 * 120


def test_lil_runs_resume_continues_a_crew_inside_a_workflow(
    pipelines: Any, uninterrupted: dict[str, Any]
) -> None:
    p = pipelines("crew")
    env = {**framework_env(p.root / "home"), "LIL_JOURNAL": str(p.journal), "CREW_OUT": str(p.out)}
    script = SCRIPT.parent / "crew_nightly.py"
    python = framework_python("crewai")
    killed = subprocess.run(
        [str(python), str(script)],
        env={**env, "CREW_KILL_AT": "3"},
        capture_output=True,
        timeout=240,
    )
    assert killed.returncode == -signal.SIGKILL
    resumed = run_lil(  # resume imports the workflow: CrewAI's environment's lil
        "runs",
        "resume",
        "crew_nightly.nightly:nightly",
        env=env,
        cwd=p.root,
        timeout=240,
        python=python,
        script=True,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert uninterrupted["crew"]["raw"] in resumed.stdout
    assert p.lines("calls") == CREW_CALLS[:3] + CREW_CALLS[2:]
    assert p.lines("sent") == ["otters"]
    assert p.shown()["run"]["parent"] == "crew_nightly.nightly:nightly"


def test_importing_the_adapters_does_not_import_crewai(tmp_path: Path) -> None:
    assert not any(m.split(".")[0] == "crewai" for m in modules_after("import letitloop.adapters"))
    code = (
        "import sys, letitloop, letitloop.adapters\n"
        "assert 'crewai' not in sys.modules, 'imported crewai'\n"
        "import letitloop.adapters.crewai\n"
        "assert 'crewai' in sys.modules\n"
    )
    done = subprocess.run(
        [str(framework_python("crewai")), "-c", code],
        capture_output=True,
        text=True,
        env=framework_env(tmp_path),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_without_crewai_the_adapter_says_what_to_install() -> None:
    import sys

    try:
        import crewai  # noqa: F401
    except ImportError:
        pass
    else:
        raise AssertionError("the main environment should not have CrewAI (it has its own)")
    done = subprocess.run(
        [sys.executable, "-c", "import letitloop.adapters.crewai"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 1
    assert "ConfigError" in done.stderr and "letitloop[crewai]" in done.stderr


def test_what_cannot_be_journaled_is_refused(tmp_path: Path) -> None:
    """Streaming, async kickoffs and non-crews fail with the fix, before anything runs."""
    code = """
import sys
sys.argv = ["crew_pipeline.py", "crew", sys.argv[1]]
from letitloop.errors import ConfigError
from letitloop.adapters.crewai import durable_crew
import crew_pipeline as cp

def refused(call, words):
    try:
        call()
    except ConfigError as exc:
        assert all(w in str(exc) for w in words), str(exc)
    else:
        raise AssertionError(f"not refused: {words}")

crew = cp.make_crew(cp.Scripted(model="scripted-1"))
durable = durable_crew(crew, run_id="r")
refused(lambda: durable.akickoff(), ["akickoff", "asyncio.to_thread"])
refused(lambda: durable.kickoff_for_each([{}]), ["kickoff_for_each", "once per input"])
crew.stream = True
refused(lambda: durable_crew(crew), ["stream=True", "stream=False"])
refused(lambda: durable_crew(object()), ["Crew or Flow", "object"])
print("ok")
"""
    done = subprocess.run(
        [str(framework_python("crewai")), "-c", code, str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={**framework_env(tmp_path), "LIL_JOURNAL": str(tmp_path / "j.duckdb")},
        timeout=120,
        cwd=SCRIPT.parent,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_a_failed_step_runs_again_once_its_nested_marker_is_resolved() -> None:
    """The kernel rule the adapter's nesting relies on (tasks hold model and tool steps, tools
    hold markers): only a record after a failed step's nested steps means the run went past
    it, so once the marker in doubt inside it is resolved, the step runs again."""
    from letitloop import MemoryJournal, atomic_marker, durable, step

    effects: list[str] = []
    fail = [True]

    def tool() -> str:
        with atomic_marker("send", reconcile=lambda marker: "done") as first:
            if first:
                effects.append("sent")
                if fail:
                    fail.pop()
                    raise ConnectionError("the connection dropped after sending")
        return "sent"

    @durable(journal=MemoryJournal(), run_id="nested")
    def task() -> str:
        return step("tool:send", tool)

    with pytest.raises(ConnectionError):
        task()
    assert task() == "sent"  # not the journaled ConnectionError: the step ran again
    assert effects == ["sent"]  # reconcile said the effect happened: not repeated


def test_task_outputs_go_on_the_blackboard_once_across_a_kill(pipelines: Any) -> None:
    """durable_crew(board=True): each finished task's output is the board's task/<name>; the
    run killed in the writer's model call and kicked off again writes each one once."""
    p = pipelines("crew")
    p.killed("4", "--board")
    result = p.result("--board")
    assert result["board"] == [
        ["task/research", 1, "otters hold hands while asleep"],
        ["task/write", 1, result["raw"]],
    ]
    assert len(p.lines("calls")) == len(CREW_CALLS) + 1
    shown = p.shown()
    assert [k["key"] for k in shown["board"]] == ["task/research", "task/write"]
