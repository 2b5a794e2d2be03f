"""examples/notebook: the notebook's own cells in a real Jupyter kernel, SIGKILLed in the middle
of the loop, then `jupyter execute` (the README's command) in fresh kernels: the loop resumes,
the approval decided from the terminal continues the cell, and the side effect happens once."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from letitloop import open_journal
from tests.examples.cookbook import Example, run_it
from tests.helpers import wait_until

RUN = "jupyter execute durable_cells.ipynb"


def _kill_the_kernel_mid_loop(ex: Example) -> int:
    """Run the notebook's cells up to its loop in a kernel, SIGKILL the kernel once five steps
    are journaled; how many were."""
    nb = nbformat.read(ex.dir / "durable_cells.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    loop = next(i for i, source in enumerate(code) if source.startswith("%%durable summaries"))
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(ex.dir), env=ex.env)
    kc = km.client()
    kc.start_channels()
    journal = open_journal(ex.journal_path)
    try:
        kc.wait_for_ready(timeout=60)
        for source in code[:loop]:
            assert kc.execute_interactive(source, timeout=60)["content"]["status"] == "ok"
        kc.execute(code[loop])

        def steps_done() -> int | None:
            runs = journal.list_runs(workflow="cell.summaries") if ex.journal_path.exists() else []
            return runs[0].steps_done if runs and runs[0].steps_done >= 5 else None

        done = wait_until(steps_done, 120, what="the loop to reach 5 steps")
        os.kill(km.provisioner.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        km.provisioner.process.wait()  # type: ignore[union-attr]
    finally:
        kc.stop_channels()
        km.cleanup_resources()
    return done


@pytest.mark.slow  # four kernels: 20 to 40 s
def test_kernel_killed_mid_loop_then_approved_from_the_terminal(
    example: Callable[..., Example],
) -> None:
    ex = example("notebook")
    assert run_it(ex.readme)[1] == RUN
    done_before = _kill_the_kernel_mid_loop(ex)
    assert 5 <= done_before < 13  # fetch and 4 or more of the 12 model calls

    ex.ok(RUN, timeout=300)  # a fresh kernel runs every cell; a cell error fails it
    journal = open_journal(ex.journal_path)
    (loop,) = journal.list_runs(workflow="cell.summaries")
    assert loop.status == "completed" and loop.steps_done == 13
    attempts = journal.get_run(loop.run_id).attempts
    completed = [a.position for a in attempts if a.status == "completed"]
    assert sorted(completed) == list(range(13))  # no step completed twice
    unfinished = [a for a in attempts if a.status != "completed"]
    assert len(unfinished) <= 1  # at most the call in flight when the kernel died
    assert all(a.position == done_before for a in unfinished)

    (publish,) = journal.list_runs(workflow="cell.publish")
    assert publish.status == "suspended" and not (ex.dir / "digest.md").exists()
    listed = ex.ok("lil approvals list")
    approval_id = re.search(r"^(\w{10})\s+publish\s+pending", listed, re.M)
    assert approval_id, listed
    ex.ok("lil approvals approve ID", ID=approval_id.group(1))

    ex.ok(RUN, timeout=300)  # the publish cell finds the decision and goes on
    assert journal.get_run(publish.run_id).run.status == "completed"
    digest = (ex.dir / "digest.md").read_text().splitlines()
    assert len(digest) == 1 and digest[0].count(" / ") == 2

    ex.ok(RUN, timeout=300)  # a third time: everything replays, nothing is posted again
    assert (ex.dir / "digest.md").read_text().splitlines() == digest
    again = journal.get_run(loop.run_id).attempts
    assert len(again) == len(attempts)  # no model call in the later kernels


def test_what_the_cells_show(example: Callable[..., Example]) -> None:
    """The outputs a reader sees: the loop's count of model calls, the approval widget, the
    inspector widget, the retried step's value (executed in place, as the lab would)."""
    ex = example("notebook")
    nb = nbformat.read(ex.dir / "durable_cells.ipynb", as_version=4)
    old = dict(os.environ)
    os.environ.update(ex.env)
    try:
        NotebookClient(
            nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ex.dir)}}
        ).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    shown = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            texts = [o.get("text", "") for o in cell.outputs]
            texts += [str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs]
            widgets = [
                o
                for o in cell.outputs
                if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
            ]
            shown[cell.source.split("\n", 1)[0]] = ("".join(texts), len(widgets))
    assert "12 summaries, 12 model calls in this kernel" in shown["%%durable summaries"][0]
    text, widgets = shown["%%durable publish"]
    assert widgets == 1 and "publish" in text  # the approval widget, waiting
    text, widgets = shown["from letitloop.notebook_ext import RunInspector"]
    assert widgets == 1 and "cell.summaries:" in text
    assert "'page 1'" in shown["%%durable retried"][0]
