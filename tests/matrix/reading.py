"""What one surface says about the scenario, in the truth's shapes, and the one check of it.

Each surface module fills a ``Reading`` with what it offers (``None``: the surface does not show
that), and ``check`` compares every part with operate's truth, recording in ``MATRIX`` what was
compared on which backend, for the report. Lists of records are compared as sets (sorted by
their identity): the order a surface lists them in is its own choice; lists of runs keep
operate's order (newest first), which every run listing promises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.matrix.truth import Truth, facts, same, task_facts

# (surface, backend) -> the parts compared, e.g. {"runs", "views", "runs table"}
MATRIX: dict[tuple[str, str], set[str]] = {}


@dataclass
class Reading:
    """A surface's answers, each in operate's JSON shape (None: not offered by the surface)."""

    runs: list[dict[str, Any]] | None = None
    views: dict[str, dict[str, Any]] | None = None  # the runs it showed in full, by id
    view_parts: tuple[str, ...] | None = None  # the parts of a run's view it shows (None: all)
    doubts: list[dict[str, Any]] | None = None
    approvals: list[dict[str, Any]] | None = None
    proposals: list[dict[str, Any]] | None = None
    notices: list[dict[str, Any]] | None = None
    tasks: list[dict[str, Any]] | None = None
    # what a surface writes for people, parsed back: run id -> {status, steps, duration, cost}
    table: dict[str, dict[str, str]] | None = None
    # other texts for people, parsed back: a name -> what it says (compared with ``expected``)
    texts: dict[str, Any] = field(default_factory=dict)


def _by(key: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: str(r[key]))


def shown_table(truth: Truth) -> dict[str, dict[str, str]]:
    """What a run table says of each run: its status and its numbers as operate writes them."""
    return {
        r["run_id"]: {
            "status": r["status"],
            "steps": r["shown"]["steps"],
            "duration": r["shown"]["duration"],
            "cost": r["shown"]["cost"],
        }
        for r in truth.runs
    }


def check(
    surface: str,
    backend: str,
    got: Reading,
    truth: Truth,
    *,
    adapt: Any = None,
    texts: dict[str, Any] | None = None,
) -> None:
    """Every part ``got`` offers equals the truth's (``adapt`` maps the truth's JSON to what the
    surface is documented to write, e.g. ``lil mcp``'s cut texts); ``texts`` holds the expected
    value of each parsed text."""
    fit = adapt or (lambda value: value)
    done = MATRIX.setdefault((surface, backend), set())
    failed: list[str] = []

    def part(name: str, compare: Any) -> None:
        try:
            compare()
        except AssertionError as exc:
            failed.append(str(exc))
            done.add(f"{name} (DISAGREES)")
        else:
            done.add(name)

    if got.runs is not None:
        part("runs", lambda: _runs(surface, fit, truth, got.runs))
    if got.views is not None:
        assert got.views, f"{surface} showed no run"
        views, parts = got.views, got.view_parts
        part(f"views ({len(views)})", lambda: _views(surface, fit, truth, views, parts))
    for name, key in (
        ("doubts", "run_id"),
        ("approvals", "id"),
        ("proposals", "id"),
        ("notices", "key"),
    ):
        mine = getattr(got, name)
        if mine is not None:
            expected = _by(key, fit(getattr(truth, name)))
            got_rows = _by(key, mine)
            part(name, lambda e=expected, n=name, g=got_rows: same(surface, n, e, g))
    if got.tasks is not None:
        tasks = got.tasks
        part(
            "tasks",
            lambda: same(
                surface,
                "the task runs",
                [task_facts(r) for r in truth.tasks],
                [task_facts(r) for r in tasks],
            ),
        )
    if got.table is not None:
        table = got.table
        part("runs table", lambda: same(surface, "the run table", shown_table(truth), table))
    for name, said in got.texts.items():
        assert texts is not None and name in texts, f"no expected value for {surface}'s {name}"
        part(name, lambda n=name, v=said: same(surface, n, texts[n], v))
    if failed:
        raise AssertionError("\n".join(failed))


def _runs(surface: str, fit: Any, truth: Truth, runs: list[dict[str, Any]]) -> None:
    same(surface, "the run list (ids, order)", truth.ids, [r["run_id"] for r in runs])
    same(
        surface,
        "each run's facts",
        {r["run_id"]: facts(r) for r in truth.runs},
        {r["run_id"]: facts(r) for r in runs},
    )
    same(surface, "each run's JSON", fit(truth.runs), runs)


def _views(
    surface: str,
    fit: Any,
    truth: Truth,
    views: dict[str, dict[str, Any]],
    parts: tuple[str, ...] | None,
) -> None:
    for run_id, view in views.items():
        expected = fit(truth.views[run_id])
        if parts is not None:  # a surface that shows part of a run: those parts, entire
            assert sorted(view) == sorted(parts), (surface, sorted(view))
            expected = {k: expected[k] for k in parts}
        same(surface, f"run {run_id} in full", expected, view)
