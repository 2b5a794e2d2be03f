"""Issue 15's notebook points in a real JupyterLab, clicked in headless Debian Chromium: a
re-asked approval after an edited cell is decided in its widget (2), a renamed notebook keeps
its runs and says so (3), ``RunInspector()`` previews a dataclass output as its fields and
opens a step (5, 8), the payload editor fits its cell (10), and a decision made while the tab
was closed shows its continued output when the notebook is opened again (9).

One JupyterLab and one browser for the whole module. The screenshots are the closing note's
(``LIL_UPDATE_DOCS_IMG=1`` copies them into ``docs/img``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from letitloop import open_journal
from tests.helpers import cells, chromium, lab_api, run_cell, wait_until
from tests.notebook.lab_helpers import jupyter_lab, open_notebook, screenshot

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def write(root: Path, name: str, *cells: str) -> str:
    nb = new_notebook(cells=[new_code_cell(c) for c in cells], metadata={"kernelspec": KERNELSPEC})
    nbformat.write(nb, root / name)
    return name


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from letitloop.journal.duckdb._client import stop_owner

    base = tmp_path_factory.mktemp("lab-first-hour")
    journal = base / "journal" / "journal.duckdb"
    side = base / "side-effects.txt"
    root = base / "lab"
    root.mkdir()
    with jupyter_lab(root, journal, NB_SIDE_EFFECTS=str(side), NB_STEP_SECONDS="0") as server:
        yield {**server, "journal": journal, "side": side}
    stop_owner(journal)


@pytest.fixture(scope="module")
def browser(lab: dict[str, Any]) -> Iterator[Any]:
    with chromium() as browser:
        yield browser


def new_page(browser: Any, height: int = 760) -> Any:
    return browser.new_page(viewport={"width": 1100, "height": height})


def cell(page: Any, index: int) -> Any:
    return cells(page).nth(index)


DRAFT = (
    "%%durable publish --run-id lab-reapproval\n"
    "draft = step('draft', lambda: {{'title': '{title}', 'words': {words}}})\n"
    "decision = approval('publish', draft, schema={{'type': 'object', 'required': ['title']}})\n"
    "if decision.approved:\n"
    "    step('publish', lambda: print('PUBLISHED:', decision.payload['title']))\n"
)


def test_a_reasked_approval_after_an_edited_cell_is_decided_in_the_widget(
    lab: dict[str, Any], browser: Any
) -> None:
    """Point 2 (and the payload editor of point 10): approve, edit the earlier step, run again:
    the new approval is asked, and approving it in its widget works."""
    from playwright.sync_api import expect

    name = write(
        lab["root"],
        "publish.ipynb",
        DRAFT.format(title="First draft", words=120),
        DRAFT.format(title="Second draft", words=95),  # the same cell, its first step edited
    )
    page = new_page(browser, height=1180)  # both cells in the screenshot
    open_notebook(page, lab, name)
    first = cell(page, 0).locator(".lil-approval button", has_text="Approve")
    run_cell(page, 0, first)
    editor = cell(page, 0).locator(".lil-approval textarea")
    box, area = cell(page, 0).bounding_box(), editor.bounding_box()
    assert area["x"] + area["width"] <= box["x"] + box["width"] + 1  # fits the cell
    first.click()
    expect(cell(page, 0)).to_contain_text("PUBLISHED: First draft", timeout=60_000)

    second = cell(page, 1).locator(".lil-approval button", has_text="Approve")
    run_cell(page, 1, second)  # the edited cell asks again
    expect(cell(page, 1).locator(".lil-approval")).to_contain_text("waiting for a decision")
    cell(page, 1).locator(".lil-approval input[placeholder='comment (optional)']").fill(
        "the shorter one"
    )
    second.click()
    widget = cell(page, 1).locator(".lil-approval")
    expect(widget).to_contain_text("approved by", timeout=60_000)
    expect(widget).to_contain_text("PUBLISHED: Second draft", timeout=60_000)
    expect(widget).not_to_contain_text("already")
    screenshot(page, "nb-reapproval.png")
    page.close()
    journal = open_journal(lab["journal"])
    rows = journal.approvals(run_id=journal.find_run("cell.publish:lab-reapproval"))
    assert [r.status for r in rows] == ["approved", "approved"]
    assert {r.comment for r in rows} == {None, "the shorter one"}


def test_the_inspector_previews_a_dataclass_and_opens_a_step(
    lab: dict[str, Any], browser: Any
) -> None:
    """Points 5 and 8: ``RunInspector()`` of the last cell, the output read as its fields."""
    from playwright.sync_api import expect

    name = write(
        lab["root"],
        "answers.ipynb",
        "%%durable answers --run-id lab-preview\n"
        "from nb_helpers import Response, Usage\n"
        "r = step('answer', lambda: Response(text='Paris is the capital of France.',"
        " usage=Usage(input=12, output=9)))\n"
        "n = step('count', len, r.text)\n",
        "from letitloop.notebook_ext import RunInspector\nRunInspector()",
    )
    page = new_page(browser)
    open_notebook(page, lab, name)
    run_cell(page, 0, cell(page, 0).get_by_text("answers: 2/2 steps"))
    inspector = cell(page, 1).locator(".lil-inspector")
    run_cell(page, 1, inspector)
    expect(inspector).to_contain_text("Response(text=", timeout=30_000)
    assert "__lil__" not in inspector.inner_text()
    inspector.locator("button", has_text="0 answer").click()
    detail = inspector.locator(".lil-step-detail")
    expect(detail).to_contain_text("Paris is the capital of France.", timeout=30_000)
    expect(detail).to_contain_text("usage=Usage(input=12, output=9)")
    screenshot(page, "nb-inspector-preview.png")
    page.close()


def test_a_renamed_notebook_keeps_its_runs_in_the_lab(lab: dict[str, Any], browser: Any) -> None:
    """Point 3: Untitled.ipynb renamed to blog.ipynb, a new kernel, run: no step runs again,
    and the cell says whose run it continues."""
    from playwright.sync_api import expect

    name = write(
        lab["root"],
        "Untitled.ipynb",
        "%%durable blog\nfrom nb_helpers import work\n"
        "facts = [step(f'fact-{i}', work, i) for i in range(3)]\nprint('FACTS', facts)\n",
    )
    page = new_page(browser)
    open_notebook(page, lab, name)
    run_cell(page, 0, cell(page, 0).get_by_text("FACTS [0, 1, 4]"))
    page.close()
    before = lab["side"].read_text().splitlines()
    for sess in lab_api(lab, "/api/sessions"):  # the kernel goes away, as on a restart
        if sess["path"] == name:
            lab_api(lab, f"/api/sessions/{sess['id']}", "DELETE")
    lab_api(lab, f"/api/contents/{name}", "PATCH", {"path": "blog.ipynb"})  # Lab's rename
    page = new_page(browser)
    open_notebook(page, lab, "blog.ipynb")
    run_cell(page, 0, cell(page, 0).get_by_text("FACTS [0, 1, 4]"))
    note = cell(page, 0).locator(".lil-note")
    expect(note).to_contain_text("blog.ipynb continues run cell.blog:Untitled-")
    expect(note).to_contain_text("which no longer exists")
    assert lab["side"].read_text().splitlines() == before  # no step ran again
    screenshot(page, "nb-renamed.png")
    page.close()


def test_a_decision_made_while_the_tab_was_closed_shows_on_reopening(
    lab: dict[str, Any], browser: Any
) -> None:
    """Point 9: the notebook is saved and its tab closed; someone approves in the terminal;
    opening the notebook again shows the decision and the run's continued output."""
    from playwright.sync_api import expect

    name = write(
        lab["root"],
        "later.ipynb",
        "%%durable later --run-id lab-closed-tab\n"
        "d = step('draft', lambda: {'n': 1})\n"
        "decision = approval('ship', d)\n"
        "step('ship', lambda: print('SHIPPED by', decision.by))\n",
    )
    page = new_page(browser)
    open_notebook(page, lab, name)
    run_cell(page, 0, cell(page, 0).locator(".lil-approval button", has_text="Approve"))
    page.keyboard.press("Control+s")
    wait_until(
        lambda: "widget-view" in (lab["root"] / name).read_text(),
        60,
        what="the notebook to be saved",
        interval=0.25,
    )
    page.close()  # the tab is closed; the kernel goes on

    journal = open_journal(lab["journal"])
    (pending,) = journal.approvals(status="pending", run_id="cell.later:lab-closed-tab")
    journal.decide_approval(pending.id, approved=True, by="ops@terminal", comment="from ssh")
    run_id = journal.find_run("cell.later:lab-closed-tab")
    wait_until(
        lambda: journal.get_run(run_id).run.status == "completed",
        60,
        what=lambda: journal.get_run(run_id).run,
        interval=0.1,
    )

    page = new_page(browser)
    open_notebook(page, lab, name)
    widget = cell(page, 0).locator(".lil-approval")
    expect(widget).to_contain_text("approved by ops@terminal", timeout=60_000)
    expect(widget).to_contain_text("SHIPPED by ops@terminal", timeout=60_000)
    expect(widget).to_contain_text("the run continued below")
    screenshot(page, "nb-closed-tab.png")
    page.close()
