"""Issue 15's notebook points, each in a real IPython kernel (nbclient / jupyter_client) on a
real journal file and owner process: a renamed notebook keeps its runs (3), a failing cell shows
the user's frames and the root cause with a Retry button (7), a decision made with no frontend
connected lands in the widget's kernel-side state (9), ``%load_ext`` names (10)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from letitloop import open_journal
from tests.helpers import run_lil, wait_until

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")

BLOG = (
    "%%durable blog\n"
    "from nb_helpers import work\n"
    "draft = step('draft', work, 3)\n"
    "decision = approval('publish', {'draft': draft})\n"
    "if decision.approved:\n"
    "    step('publish', work, 4)\n"
    "print('DONE', draft)\n"
)


@pytest.fixture
def kernel_env(monkeypatch: pytest.MonkeyPatch, journal_path: Path, tmp_path: Path) -> Path:
    side = tmp_path / "side-effects.txt"
    monkeypatch.setenv("LIL_JOURNAL", str(journal_path))
    monkeypatch.setenv("NB_SIDE_EFFECTS", str(side))
    monkeypatch.setenv("NB_STEP_SECONDS", "0")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(HERE)]))
    return side


def run_notebook(path: Path, monkeypatch: pytest.MonkeyPatch, allow_errors: bool = False) -> Any:
    """Run every cell of the notebook file at ``path`` in a new kernel that believes it is that
    notebook (JupyterLab tells its kernels through ``JPY_SESSION_NAME``)."""
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    return nb


def texts(nb: Any, index: int) -> str:
    """Everything a cell shows as text: streams, plain-text displays, tracebacks."""
    parts = []
    for o in nb.cells[index].outputs:
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type in ("display_data", "execute_result"):
            parts.append(o.data.get("text/plain", ""))
        elif o.output_type == "error":
            parts.append(ANSI.sub("", "\n".join(o.traceback)))
    return "\n".join(parts)


def side_effects(path: Path) -> list[int]:
    return [int(line.split()[0]) for line in path.read_text().splitlines()] if path.exists() else []


def write_notebook(path: Path, *sources: str) -> Path:
    cells = [new_code_cell("%load_ext letitloop"), *(new_code_cell(s) for s in sources)]
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC}), path)
    return path


def test_a_renamed_notebook_keeps_its_runs_and_a_new_one_beside_it_does_not(
    kernel_env: Path, journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point 3: Untitled.ipynb renamed to blog.ipynb, kernel restart, run all: no step runs
    again and no approval is asked again, and the cell says whose run it continues. A new
    Untitled.ipynb created afterwards gets runs of its own."""
    untitled = write_notebook(tmp_path / "Untitled.ipynb", BLOG)
    first = run_notebook(untitled, monkeypatch)
    assert "waiting" in texts(first, 1) or "pending" in texts(first, 1)
    journal = open_journal(journal_path)
    (pending,) = journal.approvals(status="pending")
    journal.decide_approval(pending.id, approved=True, by="reviewer@test")
    done = run_notebook(untitled, monkeypatch)  # the decision continues the run on re-run
    assert "DONE 9" in texts(done, 1) and side_effects(kernel_env) == [3, 4]

    blog = tmp_path / "blog.ipynb"
    untitled.rename(blog)  # what JupyterLab's rename does: the same file, a new path
    renamed = run_notebook(blog, monkeypatch)
    shown = texts(renamed, 1)
    assert "DONE 9" in shown  # the cell's names are bound again from the journal
    assert side_effects(kernel_env) == [3, 4]  # no step ran again
    assert journal.approvals(status="pending") == []  # no approval asked again
    assert "blog.ipynb continues run cell.blog:Untitled-" in shown and "no longer exists" in shown
    (run,) = journal.list_runs(workflow="cell.blog")
    assert run.status == "completed"

    again = run_notebook(blog, monkeypatch)  # and it stays that notebook's run
    assert "DONE 9" in texts(again, 1) and side_effects(kernel_env) == [3, 4]

    fresh = write_notebook(tmp_path / "Untitled.ipynb", BLOG)  # a new notebook, old name
    other = run_notebook(fresh, monkeypatch)
    assert side_effects(kernel_env) == [3, 4, 3]  # its own run: its first step runs
    assert "continues run" not in texts(other, 1)
    assert len(journal.approvals(status="pending")) == 1  # it asks for its own approval
    assert len(journal.list_runs(workflow="cell.blog")) == 2
    still = run_notebook(blog, monkeypatch)  # blog.ipynb still has its own, finished run
    assert "DONE 9" in texts(still, 1) and side_effects(kernel_env) == [3, 4, 3]


def test_a_copied_notebook_beside_the_original_never_shares_its_run(
    kernel_env: Path, journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point 3, the other half: a copy that exists next to its original runs its own steps."""
    cell = (
        "%%durable loop\nfrom nb_helpers import work\n"
        "x = [step(f'i{i}', work, i) for i in (1, 2)]\n"
    )
    original = write_notebook(tmp_path / "a.ipynb", cell)
    run_notebook(original, monkeypatch)
    copy = tmp_path / "b.ipynb"
    shutil.copy(original, copy)
    copied = run_notebook(copy, monkeypatch)
    assert side_effects(kernel_env) == [1, 2, 1, 2]
    assert "continues run" not in texts(copied, 1)
    assert len(open_journal(journal_path).list_runs(workflow="cell.loop")) == 2


FLAKY = (
    "%%durable flaky\n"
    "class RateLimitError(Exception):\n"
    "    pass\n"
    "def call_model():\n"
    "    raise RateLimitError('429: slow down')\n"
    "answer = step('ask', call_model, retry=Retry(attempts=2, backoff=0.01, jitter=False))\n"
)


def test_a_dead_lettered_cell_shows_the_users_frames_the_root_cause_and_retry(
    kernel_env: Path, journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Points 7 and 10: ``Retry`` is in the namespace after ``%load_ext``; the traceback of a
    dead-lettered step is the user's frames and the RateLimitError behind it, not the
    extension's; a Retry widget is offered in the cell."""
    path = write_notebook(tmp_path / "flaky.ipynb", FLAKY)
    nb = run_notebook(path, monkeypatch, allow_errors=True)
    (error,) = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert error.ename == "DeadLetteredError"
    shown = ANSI.sub("", "\n".join(error.traceback))
    assert "RateLimitError: 429: slow down" in shown  # the root cause
    assert "raise RateLimitError('429: slow down')" in shown  # the user's frame that raised
    assert "answer = step('ask', call_model" in shown  # the cell's line
    assert "letitloop/" not in shown and "run_cell_magic" not in shown, shown
    assert len(shown.splitlines()) < 30, shown
    widgets = [
        o
        for o in nb.cells[1].outputs
        if o.output_type == "display_data"
        and "application/vnd.jupyter.widget-view+json" in o.data
        and "lil runs retry" in o.data["text/plain"]
    ]
    assert len(widgets) == 1  # the Retry widget, offered before the error


def test_a_failing_step_shows_two_frames_not_forty(
    kernel_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point 7: a plain error in a step: the cell's line and the function's, nothing between."""
    code = "%%durable oops\ndef parse(s):\n    return int(s)\nn = step('parse', parse, 'x')\n"
    nb = run_notebook(write_notebook(tmp_path / "oops.ipynb", code), monkeypatch, True)
    (error,) = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    shown = ANSI.sub("", "\n".join(error.traceback))
    assert error.ename == "ValueError" and "invalid literal for int()" in shown
    assert "return int(s)" in shown and "n = step('parse', parse, 'x')" in shown
    assert "letitloop/" not in shown and len(shown.splitlines()) < 20, shown
    assert "Cell In[2]" in shown, shown  # the cell's real execution count


def test_load_ext_puts_the_policy_names_in_the_namespace(
    kernel_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point 10: Retry, Invalid and Budget, like step and approval."""
    probe = "print(sorted(n for n in ('Retry', 'Invalid', 'Budget', 'step') if n in globals()))"
    nb = run_notebook(write_notebook(tmp_path / "names.ipynb", probe), monkeypatch)
    assert "['Budget', 'Invalid', 'Retry', 'step']" in texts(nb, 1)


def test_a_decision_made_with_no_frontend_lands_in_the_widget_state(
    kernel_env: Path, journal_path: Path, tmp_path: Path
) -> None:
    """Point 9: the browser tab is closed (no frontend on the kernel at all) when someone
    approves from the terminal. The run continues, and its output is kept in the widget's
    kernel-side state, which is what a reopened tab renders."""

    cell = (
        "%%durable later --run-id closed-tab\n"
        "d = step('draft', lambda: {'n': 1})\n"
        "decision = approval('ship', d)\n"
        "step('ship', lambda: print('SHIPPED', decision.by))\n"
    )
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        kc.execute_interactive("%load_ext letitloop", timeout=60)
        assert kc.execute_interactive(cell, timeout=60)["content"]["status"] == "ok"
        kc.execute_interactive("w = _", timeout=60)  # the cell's value: the approval widget
        journal = open_journal(journal_path)
        (pending,) = journal.approvals(status="pending")
        cli = run_lil("approvals", "approve", pending.id, journal=journal_path, timeout=60)
        assert cli.returncode == 0, cli.stderr
        run_id = journal.find_run("cell.later:closed-tab")
        wait_until(
            lambda: journal.get_run(run_id).run.status == "completed",
            60,
            what=lambda: journal.get_run(run_id).run,
        )
        seen: list[str] = []

        def shipped() -> str | None:
            seen.clear()
            kc.execute_interactive(
                "print(repr(w.output.outputs)); print(w.status.value)",
                output_hook=lambda m: seen.append(str(m["content"].get("text", ""))),
                timeout=60,
            )
            state = "".join(seen)
            return state if "SHIPPED" in state else None

        # the continued output, kept in the kernel
        state = wait_until(shipped, 30, what=lambda: f"SHIPPED in the widget: {seen}", interval=0.1)
        assert "approved</b> by" in state and "the run continued below" in state
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
