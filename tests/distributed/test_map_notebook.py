"""The notebook's progress line shows one bar for a running step.map, in a real kernel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from letitloop.kernel._fanout import MapUpdate
from letitloop.notebook_ext._progress import Progress

ROOT = Path(__file__).resolve().parents[2]
CELL = (
    "%%durable fanout\n"
    "def square(i):\n"
    "    return i * i\n"
    "squares = step.map('square', square, range(6), max_in_flight=2)\n"
    "print('SUM', sum(squares))\n"
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_counts_done_running_failed_replayed_and_links_the_dashboard() -> None:
    clock = Clock()
    progress = Progress("cell", shell=None, clock=clock, live=False)
    progress.observe_map(MapUpdate("embed", 100, 60, 3, 1, 40, "http://127.0.0.1:8787/status"))
    text = progress.map_text()
    assert text == "map 'embed' [############--------] 60/100 · 3 running · 1 failed · 40 replayed"
    html = progress._bundle()["text/html"]
    assert "<progress value='60' max='100'>" in html
    assert "href='http://127.0.0.1:8787/status'" in html and "1 failed" in html


def test_a_kernel_shows_the_map_bar_and_replays_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LIL_JOURNAL", str(tmp_path / "journal.duckdb"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = new_notebook(
        cells=[new_code_cell("%load_ext letitloop"), new_code_cell(CELL), new_code_cell(CELL)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    try:
        NotebookClient(
            nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        from tests.conftest import _kill_owner

        _kill_owner(tmp_path / "journal.duckdb")
    first, second = (_rendered(nb.cells[i]) for i in (1, 2))
    assert "SUM 55" in first and "SUM 55" in second
    assert "<progress value='6' max='6'>" in first and "0 replayed" in first
    # the re-run replays the finished map as one step: no item is looked at again
    assert "1 replayed" in second and "<progress" not in second


def _rendered(cell: object) -> str:
    parts = []
    for out in getattr(cell, "outputs", []):
        parts.append(out.get("text", ""))
        data = out.get("data", {})
        parts.append(data.get("text/html", "") + data.get("text/plain", ""))
    return "\n".join(parts) + os.linesep
