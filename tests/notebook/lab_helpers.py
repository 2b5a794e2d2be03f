"""The notebook's browser tests: their JupyterLab (``tests/lab_server.py``'s) and page helpers."""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests import lab_server
from tests.lab_server import CHROME_ARGS, CHROMIUM

__all__ = ["CHROME_ARGS", "CHROMIUM", "api", "cells", "jupyter_lab", "open_notebook", "run_cell"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@contextmanager
def jupyter_lab(root: Path, journal: Path, **extra_env: str) -> Iterator[dict[str, Any]]:
    """JupyterLab serving ``root`` (kernels load letitloop, use ``journal`` and can import this
    directory's ``nb_helpers``), stopped after: ``tests/lab_server.py``'s, state in ``root``."""
    with lab_server.jupyter_lab(root, journal, pythonpath=[HERE], env=extra_env) as lab:
        yield lab


def api(lab: dict[str, Any], path: str, method: str = "GET", body: Any = None) -> Any:
    """A call to the server's REST API (contents, sessions), as the Lab page makes them."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        f"{lab['base']}{path}?token={lab['token']}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read()
    return json.loads(text) if text else None


def wait_kernel_idle(lab: dict[str, Any], path: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for sess in api(lab, "/api/sessions"):
            if sess.get("path") == path and sess["kernel"].get("execution_state") == "idle":
                return
        time.sleep(0.25)
    raise TimeoutError(f"no idle kernel for {path}")


def open_notebook(page: Any, lab: dict[str, Any], path: str) -> None:
    """Open a notebook in the Lab page and wait until its kernel is really connected."""
    from playwright.sync_api import expect

    page.goto(f"{lab['base']}/lab/tree/{path}?reset&token={lab['token']}")  # no old tabs
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    wait_kernel_idle(lab, path)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=120_000)


def run_cell(page: Any, index: int, until: Any, timeout: float = 60_000) -> None:
    """Run cell ``index`` with Shift+Enter until the locator ``until`` is visible (a key press
    sent before the kernel is connected is dropped: try again, three times at most)."""
    from playwright.sync_api import expect

    for attempt in range(3):
        target = cells(page).nth(index)
        target.scroll_into_view_if_needed()
        target.locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(until).to_be_visible(timeout=timeout)
            return
        except AssertionError:
            if attempt == 2:
                raise


def cells(page: Any) -> Any:
    """The cells of the notebook on show (other tabs' cells are in the page too, hidden)."""
    return page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell")


def screenshot(page: Any, name: str, target: Any = None) -> Path:
    """A PNG in the test artifacts; also into docs/img when LIL_UPDATE_DOCS_IMG=1."""
    out = Path(os.environ.get("LIL_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    (target or page).screenshot(path=str(path))
    if os.environ.get("LIL_UPDATE_DOCS_IMG") == "1":
        shutil.copy(path, ROOT / "docs" / "img" / name)
    return path
