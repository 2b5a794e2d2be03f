"""``letitloop.report()``: the analytics drawn as SVG charts, in a real Jupyter kernel (the
output a notebook shows) and rendered here (every chart well-formed, names escaped)."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import synthetic
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

import letitloop
from letitloop.journal import open_journal

ROOT = Path(__file__).resolve().parents[2]


def svgs(page: str) -> list[ET.Element]:
    return [ET.fromstring(s) for s in re.findall(r"<svg .*?</svg>", page, re.S)]


def test_report_in_a_real_kernel(journal_path: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    synthetic.fill(open_journal(journal_path))
    monkeypatch.setenv("LIL_JOURNAL", str(journal_path))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = new_notebook(
        cells=[new_code_cell("import letitloop\nletitloop.report(since='2026-10-01')")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    )
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    (result,) = [o for o in nb.cells[0].outputs if o.output_type == "execute_result"]
    page = result["data"]["text/html"]
    assert "letitloop report" in page and "since 2026-10-01 00:00" in page
    charts = svgs(page)
    assert len(charts) == 5  # cost per day, attempts per day, cost per workflow, latency, failures
    assert "Cost per workflow and model" in page and "gpt-4o-mini" in page
    assert "60 runs (5 failed), 342 step attempts (47 failed)" in result["data"]["text/plain"]


def test_charts_draw_the_numbers(journal_path: Path) -> None:
    synthetic.fill(open_journal(journal_path))
    shown = letitloop.report(str(journal_path))
    page = shown._repr_html_()
    per_day, attempts, cost, latency, failures = svgs(page)
    ns = "{http://www.w3.org/2000/svg}"
    day_bars = [r for r in per_day.iter(f"{ns}rect")]
    assert len(day_bars) == 7  # one per day
    tips = [r.find(f"{ns}title").text for r in day_bars]  # type: ignore[union-attr]
    assert tips[0].startswith("2026-11-01: $")  # type: ignore[union-attr]
    heights = [float(r.get("height", 0)) for r in day_bars]
    assert max(heights) == 84.0 and min(heights) > 0  # the peak day fills the plot
    red = [r for r in attempts.iter(f"{ns}rect") if r.get("fill") == "#cf222e"]
    assert len(red) == 7  # failures every day, stacked on the attempts
    assert len(list(cost.iter(f"{ns}rect"))) == 9  # 3 workflows x 3 models
    labels = [t.text for t in latency.iter(f"{ns}text")]
    assert labels[0] == "summarize"  # slowest first
    assert [t.text for t in failures.iter(f"{ns}text")][:2] == ["notify", "19.1%"]
    assert shown.text().splitlines()[1].startswith("60 runs (5 failed)")


def test_names_are_escaped_and_an_empty_journal_says_so(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    assert "No runs in this journal" in letitloop.report(journal)._repr_html_()
    run = next(synthetic.records(synthetic.Shape(runs=1)))
    for rec in run:
        if rec["k"] == "run":
            rec["wf"] = "<script>alert(1)</script>"
    journal.import_records(run)
    page = letitloop.report(journal)._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert len(svgs(page)) >= 4  # still well-formed SVG
    assert os.environ.get("LIL_JOURNAL") != str(journal_path)
