"""The approval widget in a real JupyterLab, clicked in headless Chromium (Debian's) through
Playwright: the click decides the approval and the run continues in the same kernel."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from letitloop import open_journal
from tests.helpers import chromium, jupyter_lab, run_cell, wait_kernel_idle

ROOT = Path(__file__).resolve().parents[2]
CELL = (
    "%%durable publish --run-id web\n"
    "draft = step('draft', lambda: {'title': 'Hello from the lab'})\n"
    "decision = approval('publish', draft)\n"
    "if decision.approved:\n"
    "    step('publish', lambda: print('PUBLISHED:', decision.payload['title']))\n"
)
SCREENSHOTS = Path(os.environ.get("LIL_TEST_ARTIFACTS", ROOT / "test-artifacts"))


@pytest.fixture
def lab(tmp_path: Path, journal_path: Path) -> Iterator[dict[str, Any]]:
    root = tmp_path / "lab"
    root.mkdir()
    with jupyter_lab(root, journal_path, ready_within=60) as server:
        yield server


def test_click_approve_continues_the_run(lab: dict[str, Any], journal_path: Path) -> None:
    from playwright.sync_api import expect

    nb = new_notebook(
        cells=[new_code_cell(CELL)],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(nb, lab["root"] / "publish.ipynb")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1100, "height": 700})
        page.goto(f"{lab['base']}/lab/tree/publish.ipynb?token={lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        wait_kernel_idle(lab, "publish.ipynb", timeout=90)
        expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=90_000)
        approve = page.locator(".lil-approval button", has_text="Approve")
        run_cell(page, 0, approve, 30_000)
        journal = open_journal(journal_path)
        run_id = journal.find_run("cell.publish:web")
        assert journal.get_run(run_id).run.status == "suspended"
        page.locator(".lil-approval input[placeholder='comment (optional)']").fill("ship it")
        page.screenshot(path=str(SCREENSHOTS / "notebook-approval-pending.png"))
        approve.click()
        expect(page.locator(".lil-approval")).to_contain_text("approved by", timeout=30_000)
        expect(page.locator(".lil-approval")).to_contain_text(
            "PUBLISHED: Hello from the lab", timeout=30_000
        )
        expect(approve).to_be_disabled()
        page.screenshot(path=str(SCREENSHOTS / "notebook-approval-done.png"))
    info = journal.get_run(run_id).run
    assert info.status == "completed" and info.steps_done == 3
    row = journal.approvals(run_id=run_id)[0]
    assert row.status == "approved" and row.comment == "ship it"
