"""Benchmark of ``lil-tui`` on a big journal: 10,000 runs and 1,000,000 events by default.

    python benchmarks/tui.py                       # build the journal (once) and measure
    python benchmarks/tui.py --runs 1000 --events-per-run 100 --journal /tmp/small/j.duckdb

The journal is built by appending records through the journal client (``journal.append`` with
the record formats of ``letitloop/journal/_records.py``) from a pool of processes, since running
10,000 real workflows of 49 steps each would take much longer; each run is a ``run`` record,
49 steps (``step`` + ``ok``) and a ``done`` or ``fail`` record: 100 events. Then, in this process,
the app is opened headless (``App.run_test``) and measured:

    open            start of the app -> the newest runs on screen; then -> every run read;
                    beside it, interleaved, a bare Textual app with the same widgets and a
                    200-row table (Textual's own floor) and, in fresh interpreters, the import
                    of the app against the import of Textual and those widgets
    scroll          one page-down / end / home key press handled and painted (median)
    event-to-screen a step record appended by another client -> that run's row shows it (median)

It prints medians and the ratio to the bars of the issues (open <= 250 ms on 10,000 runs,
event-to-screen <= 1 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")  # time the scroll itself, not its animation
sys.path.insert(0, str(ROOT))

STEPS = 49  # per run: 1 run record + 49 * (step + ok) + 1 done/fail = 100 events
BATCH = 4000


def run_id(i: int) -> tuple[str, str, str]:
    wf, key = f"bench.flow{i % 7}", f"r{i:05d}"
    return f"{wf}:{key}", wf, key


def run_records(i: int, steps: int, now: float) -> list[dict[str, Any]]:
    """The records of run ``i`` after its ``run`` record (which ``open_run`` writes)."""
    run = run_id(i)[0]
    ts = now - 86_400 + i
    recs: list[dict[str, Any]] = []
    for pos in range(steps):
        step = {
            "run": run,
            "epoch": 0,
            "pos": pos,
            "att": 1,
            "kind": "step",
            "name": f"s{pos}",
            "fp": "0" * 32,
        }
        recs.append({"k": "step", **step, "ts": ts + pos * 0.01})
        recs.append(
            {"k": "ok", **step, "codec": "json", "out": b"1", "next": None, "ts": ts + pos * 0.01}
        )
    if i % 10 == 9:
        err = {"type": "builtins.ValueError", "message": "bad input", "traceback": ""}
        recs.append({"k": "fail", "run": run, "epoch": 0, "try": 1, "err": err, "ts": ts + 1})
    else:
        recs.append(
            {"k": "done", "run": run, "epoch": 0, "codec": "json", "out": b"[]", "ts": ts + 1}
        )
    return recs


def fill_part(path: str, start: int, stop: int, steps: int) -> int:
    """Open each run (its ``run`` record, with a lease), then append its records in batches."""
    from letitloop.journal.duckdb._client import open_journal

    journal = open_journal(path)
    now = time.time()
    batch: list[dict[str, Any]] = []
    held: list[str] = []
    written = 0

    def flush() -> None:
        nonlocal written, batch, held
        journal.append(batch)
        written += len(batch) + len(held)
        for run in held:
            journal.release_run(run)
        batch, held = [], []

    for i in range(start, stop):
        run, wf, key = run_id(i)
        journal.open_run(run_id=run, workflow=wf, key=key)
        held.append(run)
        batch += run_records(i, steps, now)
        if len(batch) >= BATCH:
            flush()
    if batch:
        flush()
    journal.close()
    return written


def build(path: Path, runs: int, steps: int, workers: int) -> None:
    from letitloop.journal.duckdb._client import open_journal

    have = open_journal(path).stats()
    if have.get("runs", 0) >= runs:
        print(f"journal {path}: {have['runs']} runs, {have['events']} events (reused)")
        return
    t0 = time.perf_counter()
    chunk = (runs + workers - 1) // workers
    with ProcessPoolExecutor(workers) as pool:
        parts = [
            pool.submit(fill_part, str(path), s, min(runs, s + chunk), steps)
            for s in range(0, runs, chunk)
        ]
        written = sum(p.result() for p in parts)
    took = time.perf_counter() - t0
    stats = open_journal(path).stats()
    print(
        f"built {path}: {stats['runs']} runs, {stats['events']} events "
        f"({written} records appended in {took:.1f} s, {written / took:,.0f}/s)"
    )


async def wait(pilot: Any, done: Any, what: str, timeout: float = 120.0) -> None:
    """Let the app run until ``done()``; a benchmark that cannot finish says why."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up after {timeout:.0f} s waiting for {what}")
        await pilot.pause(0.002)


async def measure_open(path: Path, runs: int) -> tuple[float, float]:
    """Seconds from the app's start to the first rows on screen, and to every run read."""
    from letitloop.tui._app import LilApp

    t0 = time.perf_counter()
    app = LilApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait(pilot, lambda: getattr(app.screen, "loaded", 0) >= 1, "rows on screen")
        first = time.perf_counter() - t0
        screen = app.screen
        await wait(pilot, lambda: len(screen.rows) >= runs, "every run read")
        every = time.perf_counter() - t0
    return first, every


async def measure_live(path: Path, runs: int, samples: int) -> tuple[list[float], list[float]]:
    from letitloop.journal.duckdb._client import open_journal
    from letitloop.tui._app import LilApp

    writer = open_journal(path)
    scroll: list[float] = []
    latency: list[float] = []
    app = LilApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait(pilot, lambda: getattr(app.screen, "loaded", 0) >= 1, "rows on screen")
        screen = app.screen
        await wait(pilot, lambda: len(screen.rows) >= runs, "every run read")
        table = screen.table
        for key in ["pagedown"] * 10 + ["end", "home"] + ["pagedown"] * 8:
            t0 = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            scroll.append(time.perf_counter() - t0)
        key = f"x{time.time_ns()}"  # a new run each time: a reused journal dedups old records
        run = f"bench.live:{key}"
        writer.open_run(run_id=run, workflow="bench.live", key=key)
        await wait(pilot, lambda: run in table.rows, "the new run's row")
        for pos in range(samples):
            name = f"live{pos}"
            t0 = time.perf_counter()
            writer.append(
                [
                    {
                        "k": "step",
                        "run": run,
                        "epoch": 0,
                        "pos": pos,
                        "att": 1,
                        "kind": "step",
                        "name": name,
                        "fp": "0" * 32,
                        "ts": time.time(),
                    },
                ]
            )
            shows = lambda name=name: str(table.get_cell(run, "current")) == name  # noqa: E731
            await wait(pilot, shows, f"step {name} on screen")
            latency.append(time.perf_counter() - t0)
            writer.append(
                [
                    {
                        "k": "ok",
                        "run": run,
                        "epoch": 0,
                        "pos": pos,
                        "att": 1,
                        "kind": "step",
                        "name": name,
                        "fp": "0" * 32,
                        "codec": "json",
                        "out": b"1",
                        "next": None,
                        "ts": time.time(),
                    },
                ]
            )
    return scroll, latency


def owner_list_runs(path: Path, times: int = 3) -> float:
    """The journal's own share of opening: one ``list_runs`` of every run (median)."""
    from letitloop.journal.duckdb._client import open_journal

    journal = open_journal(path)
    took = []
    for _ in range(times):
        t0 = time.perf_counter()
        journal.list_runs(limit=10_000_000)
        took.append(time.perf_counter() - t0)
    return statistics.median(took)


async def bare_open(rows: int = 200) -> float:
    """Textual's floor for ``open``: a bare app with the runs screen's widgets and a table of
    ``rows`` rows like the runs screen's, from its start to its first screen in the harness."""
    from rich.text import Text
    from textual.app import App, ComposeResult
    from textual.containers import Horizontal
    from textual.widgets import DataTable, Footer, Header, Input, Label

    from letitloop.tui._runs import RUN_COLUMNS

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Header()
            with Horizontal():
                yield Input(placeholder="filter")
                yield Label(f"{rows} newest runs")
            table: DataTable[Text] = DataTable(cursor_type="row", zebra_stripes=True)
            for key, label in RUN_COLUMNS:
                table.add_column(label, key=key)
            for i in range(rows):
                cells: tuple[str, ...] = (
                    "bench.flow3",
                    f"bench.flow3:r{i:05d}",
                    "completed",
                    "49/49",
                    "",
                )
                cells += ("12-01 03:14:22", "1.0s", "$0")
                table.add_row(*(Text(c, no_wrap=True, end="") for c in cells))
            yield table
            yield Footer()

    t0 = time.perf_counter()
    async with Bare().run_test(size=(160, 48)):
        return time.perf_counter() - t0


def import_seconds(code: str, times: int = 5) -> float:
    """Median seconds a fresh interpreter takes to run ``code`` (an import)."""
    import subprocess

    took = []
    for _ in range(times):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)",
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        took.append(float(out.stdout.split()[-1]))
    return statistics.median(took)


async def bare_table_key(rows: int = 200, presses: int = 20) -> float:
    """What the same Pilot harness takes per key on a bare DataTable (the harness's own cost)."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            table: DataTable[str] = DataTable()
            table.add_columns("a", "b", "c")
            for i in range(rows):
                table.add_row(str(i), "x" * 20, "y" * 10)
            yield table

    took = []
    async with Bare().run_test(size=(160, 48)) as pilot:
        for _ in range(presses):
            t0 = time.perf_counter()
            await pilot.press("pagedown")
            await pilot.pause()
            took.append(time.perf_counter() - t0)
    return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--events-per-run", type=int, default=100)
    parser.add_argument("--journal", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the medians (ms) here")
    args = parser.parse_args()
    steps = max(1, (args.events_per_run - 2) // 2)
    path = args.journal or Path(tempfile.gettempdir()) / "lil-tui-bench" / "journal.duckdb"
    build(path, args.runs, steps, args.workers)

    measured, floors = [], []
    for _ in range(args.opens):  # interleaved: the app, then Textual's floor
        measured.append(asyncio.run(measure_open(path, args.runs)))
        floors.append(asyncio.run(bare_open()))
    opens = [m[0] for m in measured]
    alls = [m[1] for m in measured]
    scroll, latency = asyncio.run(measure_live(path, args.runs, args.samples))
    list_s = owner_list_runs(path)
    bare_s = asyncio.run(bare_table_key())
    open_s = statistics.median(opens)
    live_s = statistics.median(latency)
    print(
        f"open (first page of runs on screen): median {open_s * 1000:.0f} ms of {len(opens)} "
        f"(min {min(opens) * 1000:.0f}, max {max(opens) * 1000:.0f}); "
        f"{open_s / 0.25:.2f}x the 250 ms bar"
    )
    floor_s = statistics.median(floors)
    print(
        f"  a bare Textual app with the same widgets and 200 rows: median {floor_s * 1000:.0f} ms "
        f"(the app: {open_s / floor_s:.2f}x, {(open_s - floor_s) * 1000:+.0f} ms)"
    )
    print(f"  every run read and sortable: median {statistics.median(alls) * 1000:.0f} ms")
    widgets = "from textual.widgets import DataTable, Footer, Header, Input, Label"
    app_imp = import_seconds(f"import letitloop.tui._app; {widgets}")
    textual_imp = import_seconds(f"import textual.app, textual.command; {widgets}")
    print(
        f"  import of the app (fresh interpreter): median {app_imp * 1000:.0f} ms; Textual and "
        f"the same widgets alone: {textual_imp * 1000:.0f} ms "
        f"({(app_imp - textual_imp) * 1000:+.0f} ms)"
    )
    print(f"  the owner's list_runs of every run alone: median {list_s * 1000:.0f} ms")
    print(
        f"scroll key handled and painted: median {statistics.median(scroll) * 1000:.1f} ms, "
        f"max {max(scroll) * 1000:.1f} ms; a bare 200-row DataTable in the same harness: "
        f"{bare_s * 1000:.1f} ms ({statistics.median(scroll) / bare_s:.2f}x)"
    )
    load = os.getloadavg()[0]
    print(
        f"event-to-screen: median {live_s * 1000:.1f} ms of {len(latency)} "
        f"(max {max(latency) * 1000:.1f}); {live_s / 1.0:.3f}x the 1 s budget"
    )
    print(f"load average during the run: {load:.1f} on {os.cpu_count()} cores")
    if args.json:
        found = {
            "runs": args.runs,
            "events_per_run": args.events_per_run,
            "open_ms": open_s * 1e3,
            "opens_ms": [x * 1e3 for x in opens],
            "every_run_ms": statistics.median(alls) * 1e3,
            "list_runs_ms": list_s * 1e3,
            "scroll_ms": statistics.median(scroll) * 1e3,
            "event_to_screen_ms": live_s * 1e3,
        }
        args.json.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
