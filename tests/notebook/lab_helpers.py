"""The notebook's browser tests: their JupyterLab (``tests/helpers.py``'s, its kernels able to
import this directory's ``nb_helpers``) and page helpers."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests import helpers
from tests.helpers import wait_kernel_idle

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@contextmanager
def jupyter_lab(root: Path, journal: Path, **extra_env: str) -> Iterator[dict[str, Any]]:
    """JupyterLab serving ``root`` (kernels load letitloop, use ``journal`` and can import this
    directory's ``nb_helpers``), stopped after: ``tests/helpers.py``'s, state in ``root``."""
    with helpers.jupyter_lab(root, journal, pythonpath=[HERE], env=extra_env) as lab:
        yield lab


def open_notebook(page: Any, lab: dict[str, Any], path: str) -> None:
    """Open a notebook in the Lab page and wait until its kernel is really connected."""
    from playwright.sync_api import expect

    page.goto(f"{lab['base']}/lab/tree/{path}?reset&token={lab['token']}")  # no old tabs
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    wait_kernel_idle(lab, path)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=120_000)


def screenshot(page: Any, name: str, target: Any = None) -> Path:
    """A PNG in the test artifacts; also into docs/img when LIL_UPDATE_DOCS_IMG=1."""
    out = Path(os.environ.get("LIL_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    (target or page).screenshot(path=str(path))
    if os.environ.get("LIL_UPDATE_DOCS_IMG") == "1":
        shutil.copy(path, ROOT / "docs" / "img" / name)
    return path
