"""SVG snapshots of the main screens. The journal is built by real workflows with fixed run ids;
the ``FrozenClock`` shows every time and duration the same way (each written by operate's rules,
the times in UTC here), so the pictures are stable.

Refresh the baselines deliberately (``pytest tests/tui --snapshot-update``) when Textual or a
screen's layout changes; ``docs/img/`` holds copies for ``docs/tui.md``.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tui_workflows as wf
from tui_helpers import in_doubt, settle

from letitloop.errors import ApprovalPending
from letitloop.journal.duckdb._client import open_journal
from letitloop.splice import propose_splice
from letitloop.tui._app import LilApp
from letitloop.tui._model import FrozenClock

SIZE = (140, 36)


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    """The frozen instant is written in local time, as every time: draw the pictures in UTC."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def frozen_app(journal_path: Path) -> LilApp:
    return LilApp(journal_path, clock=FrozenClock())


def fill(journal_path: Path) -> None:
    wf.pipeline(journal_path, "p1")()
    wf.pipeline(journal_path, "p2", name="etl.other")()
    with pytest.raises(ZeroDivisionError):
        wf.failing(journal_path)()
    with pytest.raises(ApprovalPending):
        wf.editable(journal_path)()


def run_before(*keys: str, open_run: str | None = None) -> Any:
    async def before(pilot: Any) -> None:
        app = pilot.app
        await settle(app, pilot)
        if open_run:
            app.open_run(open_run)
            await settle(app, pilot)
        for key in keys:
            await pilot.press(key)
            await settle(app, pilot)

    return before


def test_runs_screen(journal_path: Path, snap_compare: Any) -> None:
    fill(journal_path)
    app = frozen_app(journal_path)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before())


def test_run_detail_screen(journal_path: Path, snap_compare: Any) -> None:
    fill(journal_path)
    app = frozen_app(journal_path)
    before = run_before(open_run="etl.pipeline:p1")
    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_approvals_screen(journal_path: Path, snap_compare: Any) -> None:
    fill(journal_path)
    app = frozen_app(journal_path)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before("2"))


def test_effects_screen(journal_path: Path, tmp_path: Path, snap_compare: Any) -> None:
    in_doubt(journal_path, tmp_path / "sent.txt")
    app = frozen_app(journal_path)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before("3"))


def test_splices_screen(
    journal_path: Path, tmp_path: Path, snap_compare: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=0xC0FFEE))
    src = tmp_path / "pricing.py"
    src.write_text("def price(x):\n    return x * 2\n\n\ndef other():\n    return 1\n")
    propose_splice(
        src,
        "price",
        "def price(x):\n    return round(x * 2.5, 2)\n",
        reason="new pricing rule",
        by="agent@ci",
        journal=open_journal(journal_path),
    )
    app = frozen_app(journal_path)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before("4"))


def test_docs_screenshots_are_the_snapshots() -> None:
    """``docs/tui.md`` shows copies of the baselines: they must not drift apart."""
    baselines = Path(__file__).parent / "__snapshots__" / "test_snapshots"
    docs = Path(__file__).parents[2] / "docs" / "img"
    for name in ("runs", "run_detail", "approvals", "effects", "splices"):
        shot = docs / f"tui-{name.replace('_', '-')}-screen.svg"
        baseline = baselines / f"test_{name}_screen.svg"
        assert shot.read_bytes() == baseline.read_bytes(), f"copy {baseline} to {shot}"
