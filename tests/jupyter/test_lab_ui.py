"""The lab extension in a real JupyterLab, driven in headless Debian Chromium by Playwright: one
JupyterLab (with the server extension, the prebuilt lab extension and jupyter-lsp) and one page
for every test of this module. Screenshots go to docs/img/lab-*.png."""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.helpers import chromium, jupyter_lab, lil_command, run_cell, wait_kernel_idle
from tests.jupyter.conftest import start_workflow

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
IMG = ROOT / "docs" / "img"
KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
TEE = HERE / "lsp_tee.py"  # copies the LSP traffic to lsp.log beside lab.log


def _lsp_config(log: Path) -> dict[str, Any]:
    """jupyter-lsp's config: ``lil lsp`` as docs/editors.md registers it, run through the tee."""
    (lil,) = lil_command(script=True)  # the installed console script, as docs/editors.md says
    server = {
        "version": 2,
        "argv": [sys.executable, str(TEE), str(log), lil, "lsp"],
        "languages": ["python"],
        "mime_types": ["text/x-python", "text/x-ipython"],
        "display_name": "letitloop",
    }
    return {
        "LanguageServerManager": {"language_servers": {"letitloop": server}, "autodetect": False}
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One JupyterLab for the module, on its own journal, with letitloop's two extensions and
    ``lil lsp`` registered with jupyter-lsp (its traffic copied to ``lsp.log``)."""
    from tests.conftest import _kill_owner

    base = tmp_path_factory.mktemp("lab")
    root, journal = base / "root", base / "journal" / "journal.duckdb"
    root.mkdir()
    lsp_log = base / "lsp.log"
    config = _lsp_config(lsp_log)
    try:
        with jupyter_lab(root, journal, state=base, extensions=True, server_config=config) as lab:
            yield {**lab, "url": lab["base"], "journal": journal, "lsp_log": lsp_log}
    finally:
        _kill_owner(journal)


@pytest.fixture(scope="module")
def page(lab: dict[str, Any]) -> Iterator[Any]:
    IMG.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 760})
        page.goto(f"{lab['url']}/lab?token={lab['token']}")
        page.wait_for_selector(
            ".jp-SideBar .lm-TabBar-tab[data-id='letitloop-sidebar']", timeout=90_000
        )
        yield page


def open_sidebar(page: Any, section: str = "runs") -> None:
    if not page.locator("#letitloop-sidebar").is_visible():
        page.locator(".jp-SideBar .lm-TabBar-tab[data-id='letitloop-sidebar']").click()
    page.locator(f"#letitloop-sidebar .lil-tab-{section}").click()


def seen_within(page: Any, selector: str, timeout: float = 30.0) -> float:
    """Wait for ``selector`` and return the wall-clock time it was first seen."""
    page.wait_for_selector(selector, timeout=timeout * 1000)
    return time.time()


def test_sidebar_follows_a_run_started_in_another_process(page: Any, lab: dict[str, Any]) -> None:
    from letitloop import open_journal

    open_sidebar(page)
    gate = lab["root"] / "gate"
    proc = start_workflow(lab["journal"], "slow", str(gate))
    try:
        row = "#letitloop-sidebar .lil-run[data-run-id='etl.slow:s1']"
        seen = seen_within(page, f"{row} .lil-badge-running")
        journal = open_journal(lab["journal"])
        created = journal.get_run("etl.slow:s1").run.created
        assert seen - created < 1.0, f"the sidebar showed the run {seen - created:.2f}s late"
        page.wait_for_selector(f"{row} .lil-run-current:has-text('at wait_gate')", timeout=5000)
        page.screenshot(path=str(IMG / "lab-sidebar.png"))
        gate.touch()
        seen = seen_within(page, f"{row} .lil-badge-completed")
        assert proc.wait(30) == 0
        done = journal.get_run("etl.slow:s1").run.updated
        assert seen - done < 1.0, f"the sidebar showed the end {seen - done:.2f}s late"
    finally:
        proc.kill()
        proc.wait()
    page.locator("#letitloop-sidebar .lil-search").fill("nothing-like-this")
    page.wait_for_selector("#letitloop-sidebar .lil-empty", timeout=5000)
    page.locator("#letitloop-sidebar .lil-search").fill("slow")
    page.wait_for_selector(row, timeout=5000)
    page.locator("#letitloop-sidebar .lil-search").fill("")


def test_approving_from_the_inbox_unblocks_a_waiting_script(
    page: Any, lab: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "published.json"
    open_sidebar(page)
    proc = start_workflow(lab["journal"], "publish", str(out))
    try:
        page.wait_for_selector(
            ".jp-toast-message:has-text('waiting for your approval')", timeout=30_000
        )
        page.wait_for_selector(".lm-TabBar-tab[data-id='letitloop-sidebar'][data-lil-waiting='1']")
        open_sidebar(page, "inbox")
        card = page.locator("#letitloop-sidebar .lil-approval-card").first
        card.locator(".lil-approval-payload").fill('{"title": "From the lab"}')
        card.locator(".lil-approval-comment").fill("looks good")
        page.screenshot(path=str(IMG / "lab-inbox.png"))
        card.locator(".lil-approve").click()
        # the notification names who decided: the Jupyter user of this page, as journaled
        toast = page.locator(".jp-toast-message:has-text('(by jupyter:')").first
        toast.wait_for(timeout=30_000)
        assert proc.wait(60) == 0, proc.stdout.read() if proc.stdout else ""
    finally:
        proc.kill()
        proc.wait()
    from letitloop import open_journal

    (decided,) = open_journal(lab["journal"]).approvals(run_id="blog.publish:post-1")
    user = decided.decided_by.split(" ")[0]  # jupyter:USERNAME (the toast cuts a long line)
    assert user.startswith("jupyter:") and f"(by {user}" in toast.inner_text()
    assert json.loads(out.read_text()) == {"approved": True, "payload": {"title": "From the lab"}}
    page.wait_for_selector(".lm-TabBar-tab[data-id='letitloop-sidebar'][data-lil-waiting='0']")
    # the run view of the run that just finished: its timeline, previews and cost meter
    open_sidebar(page)
    page.locator("#letitloop-sidebar .lil-run[data-run-id='blog.publish:post-1']").click()
    view = page.locator(".lil-run-view").last
    view.locator(".lil-step-name:has-text('2. publish')").wait_for(timeout=10_000)
    assert view.locator(".lil-badge-completed").first.is_visible()
    assert "Hello" in view.locator(".lil-preview").first.inner_text()
    # issue 29, point 8: a completed run offers only what applies (the server's rule): nothing
    view.locator(".lil-actions").wait_for(state="attached")
    buttons = view.locator(".lil-actions .lil-action").all_inner_texts()
    assert buttons == [], buttons
    page.screenshot(path=str(IMG / "lab-run-view.png"))


def test_a_run_view_shows_its_blackboard_and_conversation(page: Any, lab: dict[str, Any]) -> None:
    """The lab's run view draws the board by key and version and the agents' thread as a
    conversation, from the run view every surface reads (operate.view_json)."""
    from tests.jupyter.conftest import run_workflow

    run_workflow(lab["journal"], "board")
    open_sidebar(page)
    page.locator("#letitloop-sidebar .lil-run[data-run-id='team.write:w1']").click()
    view = page.locator(".lil-run-view").last
    view.locator(".lil-board").wait_for(timeout=10_000)
    rows = {
        r.locator(".lil-board-name").inner_text(): r.locator(".lil-board-version").inner_text()
        for r in view.locator(".lil-board-key").all()
    }
    assert rows["📌 plan"] == "v1" and rows["draft"] == "v2", rows
    assert "second try" in view.locator(".lil-board").inner_text()
    turns = view.locator(".lil-conversation .lil-turn").all_inner_texts()
    assert turns[0] == "writer: here is the draft", turns
    assert any(t.startswith("writer → critic: ") and "check the facts" in t for t in turns), turns
    view.locator(".lil-board").scroll_into_view_if_needed()
    page.screenshot(path=str(IMG / "lab-board.png"))


QUEUE_FLOW = """
import pathlib
import time
from letitloop import Queue, durable, step

QUEUE = Queue("lab-q", concurrency=1)


def wait(gate):
    while not pathlib.Path(gate).exists():
        time.sleep(0.05)
    return "opened"


@durable
def hold(n, gate):
    return step("wait", wait, gate)
"""


def test_the_queues_section_shows_queues_workers_and_who_holds_which_run(
    page: Any, lab: dict[str, Any]
) -> None:
    """A real ``lil worker`` holds one of three queued runs: the sidebar's queues section shows
    the queue's depth, the worker (pid@host, its heartbeat) and the run it holds."""
    import os
    import subprocess

    root, gate = lab["root"], lab["root"] / "queue-gate"
    (root / "labqueue.py").write_text(QUEUE_FLOW)
    env = {**os.environ, "LIL_JOURNAL": str(lab["journal"]), "PYTHONPATH": f"{root}:{ROOT}"}
    code = "import labqueue\nfor n in range(3):\n    labqueue.QUEUE.enqueue(labqueue.hold, n, GATE)"
    subprocess.run(
        [sys.executable, "-c", code.replace("GATE", repr(str(gate)))], cwd=root, env=env,
        check=True, timeout=120,
    )  # fmt: skip
    lil = str(Path(sys.executable).with_name("lil"))
    worker = subprocess.Popen(
        [lil, "worker", "--queue", "lab-q", "--concurrency", "1"], cwd=root, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        open_sidebar(page, "queues")
        queue = "#letitloop-sidebar .lil-queue[data-queue='lab-q']"
        page.wait_for_selector(f"{queue} .lil-queue-depth:has-text('2 queued')", timeout=30_000)
        assert page.locator(f"{queue} .lil-queue-running").inner_text() == "1 running"
        row = page.locator(f"#letitloop-sidebar .lil-worker[data-worker^='{worker.pid}@']")
        row.wait_for(timeout=30_000)
        assert row.locator(".lil-worker-runs").inner_text() == "1 in hand"
        held = row.locator(".lil-worker-run").inner_text()
        assert held.startswith("labqueue.hold:"), held
        assert "heartbeat" in row.locator(".lil-worker-beat").inner_text()
        page.screenshot(path=str(IMG / "lab-queues.png"))
        gate.touch()  # the runs finish: the section follows (it re-reads every few seconds)
        page.wait_for_selector(f"{queue} .lil-queue-depth:has-text('0 queued')", timeout=60_000)
    finally:
        worker.terminate()
        worker.wait(60)


def test_durable_cell_badge_shows_replayed_after_a_kernel_restart(
    page: Any, lab: dict[str, Any]
) -> None:
    cells = [
        new_code_cell("%%durable ingest\nrows = step('load', lambda: [1, 2, 3])\nsum(rows)"),
        new_code_cell("print('a plain cell')"),
    ]
    nbformat.write(new_notebook(cells=cells, metadata=KERNEL), lab["root"] / "badges.ipynb")
    page.goto(f"{lab['url']}/lab/tree/badges.ipynb?token={lab['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    wait_kernel_idle(lab, "badges.ipynb", timeout=90)
    run_cell(page, 0, page.locator(".lil-cell-badge.lil-badge-completed").first, 30_000)
    assert page.locator(".jp-Cell").nth(1).locator(".lil-cell-badge").count() == 0
    kernel = wait_kernel_idle(lab, "badges.ipynb", timeout=90)
    req = urllib.request.Request(
        f"{lab['url']}/api/kernels/{kernel}/restart?token={lab['token']}", method="POST"
    )
    urllib.request.urlopen(req, timeout=60)
    time.sleep(1.0)
    wait_kernel_idle(lab, "badges.ipynb", timeout=90)
    run_cell(page, 0, page.locator(".lil-cell-badge.lil-badge-replayed").first, 30_000)
    assert "durable · replayed" in page.locator(".lil-cell-badge").first.inner_text()
    page.screenshot(path=str(IMG / "lab-cell-badges.png"))
    page.locator(".lil-cell-badge").first.click()
    page.locator(".lil-run-view .lil-step-name:has-text('0. load')").last.wait_for(timeout=10_000)


def test_a_splice_proposal_applied_from_the_lab_changes_the_file(
    page: Any, lab: dict[str, Any]
) -> None:
    from letitloop import open_journal
    from letitloop.splice import propose_splice

    source = lab["root"] / "agent.py"
    source.write_text("def greet(name):\n    return 'hi ' + name\n")
    proposal = propose_splice(
        source,
        "greet",
        "def greet(name):\n    return f'hello {name}'\n",
        reason="friendlier greeting",
        journal=open_journal(lab["journal"]),
    )
    open_sidebar(page, "splices")
    page.locator(f"#letitloop-sidebar .lil-splice[data-proposal-id='{proposal.id}']").click()
    view = page.locator(f"#lil-splice-{proposal.id}")
    view.locator(".lil-diff-line.lil-add:has-text(\"return f'hello {name}'\")").wait_for()
    page.screenshot(path=str(IMG / "lab-splice.png"))
    view.locator(".lil-splice-apply").click()
    view.locator(f".lil-splice-message:has-text('applied {proposal.id}')").wait_for()
    assert "return f'hello {name}'" in source.read_text()


LSP_CELL = (
    "import time\n"
    "from letitloop import durable, step\n\n\n"
    "@durable\n"
    "def clocked():\n"
    "    return time.time()\n"
)


def test_jupyter_lsp_delivers_an_lil001_diagnostic_on_a_notebook_cell(
    page: Any, lab: dict[str, Any]
) -> None:
    """`lil lsp`, registered with jupyter-lsp as docs/editors.md says, marks a non-deterministic
    call in a durable function of a notebook cell, with LIL001's message."""
    cells = [new_code_cell(LSP_CELL)]
    nbformat.write(new_notebook(cells=cells, metadata=KERNEL), lab["root"] / "lsp.ipynb")
    page.goto(f"{lab['url']}/lab/tree/lsp.ipynb?token={lab['token']}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    mark = page.locator(".jp-NotebookPanel:visible .cm-lintRange").first
    mark.wait_for(timeout=90_000)
    assert mark.inner_text() == "time.time()"
    mark.hover()
    tooltip = page.locator(".cm-tooltip-lint, .cm-tooltip-hover").first
    tooltip.wait_for(timeout=15_000)
    text = tooltip.inner_text()
    # LIL001's message, from the letitloop server (the tooltip shows the source, not the code)
    assert "time.time() gives a different value on replay: journal it in a step" in text, text
    assert "letitloop" in text
    page.screenshot(path=str(IMG / "lab-lsp.png"))


def _lsp_traffic(lab: dict[str, Any], tail: int = 4000) -> str:
    """The end of what jupyterlab-lsp and ``lil lsp`` said to each other (for failures)."""
    path = lab["lsp_log"]
    return path.read_text(errors="replace")[-tail:] if path.exists() else "(no LSP traffic)"


DURABLE_CELL = (
    "%%durable clock\n"
    "import time\n"
    "stamp = time.time()\n"
    "rows = step('load', lambda: [1, 2, 3])\n"
    "sum(rows)"
)


def test_lil_lsp_marks_and_hovers_a_durable_cell_in_the_lab(page: Any, lab: dict[str, Any]) -> None:
    """A ``%%durable`` cell (after a plain one) reaches ``lil lsp`` as a document of its own
    (the lab extension's extractor): ``time.time()`` outside a step gets LIL001's mark and
    message in the cell, and Ctrl+hover on the step shows the journal's record of the run."""
    cells = [new_code_cell("x = 1"), new_code_cell(DURABLE_CELL)]
    nbformat.write(new_notebook(cells=cells, metadata=KERNEL), lab["root"] / "clock.ipynb")
    page.goto(f"{lab['url']}/lab/tree/clock.ipynb?reset&token={lab['token']}")  # no old tabs
    page.wait_for_selector(".jp-NotebookPanel:visible .jp-Cell", timeout=90_000)
    wait_kernel_idle(lab, "clock.ipynb", timeout=90)
    badge = page.locator(".lil-cell-badge.lil-badge-completed").first
    run_cell(page, 1, badge, 30_000)  # a run in the journal
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(1)
    mark = cell.locator(".cm-lintRange").first
    try:
        mark.wait_for(timeout=90_000)
    except Exception as exc:
        raise AssertionError(
            f"no mark in the %%durable cell; LSP traffic:\n{_lsp_traffic(lab)}"
        ) from exc
    assert mark.inner_text() == "time.time()"
    assert (
        page.locator(".jp-NotebookPanel:visible .jp-Cell").first.locator(".cm-lintRange").count()
        == 0
    )
    mark.hover()
    tooltip = page.locator(".cm-tooltip-lint").first
    tooltip.wait_for(timeout=15_000)
    text = tooltip.inner_text()
    assert "time.time() gives a different value on replay: journal it in a step" in text, text
    assert "letitloop" in text
    # Ctrl+hover (jupyterlab-lsp's default) on the step: its attempts in the journal
    hover = page.locator(".lsp-hover:visible", has_text="workflow cell.clock").first  # rendered
    target = cell.locator(".cm-line span", has_text="'load'").first
    page.mouse.move(700, 700)  # away: the lint tooltip covers the step's line
    tooltip.wait_for(state="hidden", timeout=15_000)
    page.keyboard.down("Control")  # held, so every mouse move asks for the hover
    try:
        for attempt in range(20):
            target.hover(position={"x": 3 + attempt % 3, "y": 5})
            try:
                hover.wait_for(timeout=1500)
                break
            except Exception as exc:
                if attempt == 19:
                    raise AssertionError(f"no hover; LSP traffic:\n{_lsp_traffic(lab)}") from exc
        shown = hover.inner_text()
        assert "step load" in shown and "workflow cell.clock" in shown, shown
        assert "completed" in shown and "[\n  1,\n  2,\n  3\n]" in shown, shown  # journaled output
        page.screenshot(path=str(IMG / "lab-lsp-durable.png"))
    finally:
        page.keyboard.up("Control")
