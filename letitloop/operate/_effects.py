"""Side effects in doubt: the one rule every surface shows, and how a person resolves one.

A block under ``atomic_marker`` is *in doubt* when the latest attempt of its marker started (or
raised) and nobody resolved it, in a run that is neither completed (never replayed) nor running
(its process may simply be inside the block). Only a person can say whether the effect happened:
``done`` (skip the block when the run continues) or ``redo`` (run it again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from letitloop.operate._format import error_line

if TYPE_CHECKING:
    from letitloop.journal import AttemptInfo, Journal, RunDetail, RunInfo

HUGE = 1 << 30
# a run in one of these states has no marker in doubt: completed runs are never replayed, a
# running one may be inside its block right now, a reset one starts over
NOT_IN_DOUBT = ("completed", "running", "reset")
RESOLUTIONS = ("done", "redo")
STOPPED_INSIDE = "the process stopped inside the block"


class Doubt(NamedTuple):
    """One side effect in doubt, with the commands that resolve it."""

    run_id: str
    run_status: str
    position: int
    marker: str
    attempt: int
    status: str  # started | failed
    started: float | None
    why: str  # the block's error in one line, or that its process stopped inside it
    error: dict[str, Any] | None
    ref: str  # how to name the marker: its name, or its position when the name repeats

    def command(self, resolution: str) -> str:
        """The CLI command that resolves it as ``done`` or ``redo``, safe to paste in a shell
        whatever the run id or marker name holds."""
        from shlex import quote

        return f"lil effects resolve {quote(self.run_id)} {quote(self.ref)} --{resolution}"


def in_doubt(detail: RunDetail) -> list[AttemptInfo]:
    """The marker attempts of one run that are in doubt, in position order."""
    if detail.run.status in NOT_IN_DOUBT:
        return []
    latest: dict[int, AttemptInfo] = {}
    for a in detail.attempts:
        if a.kind == "marker" and (
            a.position not in latest or a.attempt > latest[a.position].attempt
        ):
            latest[a.position] = a
    return [
        a
        for a in sorted(latest.values(), key=lambda a: a.position)
        if a.status in ("started", "failed") and not a.resolution
    ]


def doubts_of(detail: RunDetail) -> list[Doubt]:
    """The side effects in doubt of one run, as rows."""
    found = []
    for a in in_doubt(detail):
        others = [
            m.name for m in detail.attempts if m.kind == "marker" and m.position != a.position
        ]
        found.append(
            Doubt(
                run_id=detail.run.run_id,
                run_status=detail.run.status,
                position=a.position,
                marker=a.name,
                attempt=a.attempt,
                status=a.status,
                started=a.started,
                why=error_line(a.error) if a.error else STOPPED_INSIDE,
                error=a.error,
                ref=str(a.position) if a.name in others else a.name,
            )
        )
    return found


def doubts(journal: Journal, run_id: str | None = None) -> list[Doubt]:
    """Side effects in doubt in one run, or in every run of the journal that can have one."""
    if run_id is not None:
        return doubts_of(journal.get_run(run_id))
    found: list[Doubt] = []
    for info in journal.list_runs(limit=HUGE):
        if info.status not in NOT_IN_DOUBT and _started_a_marker(journal, info):
            found += doubts_of(journal.get_run(info.run_id))
    return found


def _started_a_marker(journal: Journal, info: RunInfo) -> bool:
    """Whether the run journaled the start of a marker in its current epoch: only such a run can
    have one in doubt, and only such a run is read in full (a run's events are a third of the
    cost of its full read: every failed run of a big journal read in full took seconds)."""
    return any(
        e.kind == "step" and e.data.get("kind") == "marker" and e.data.get("epoch") == info.epoch
        for e in journal.events(run_id=info.run_id, limit=HUGE)
    )


def doubt_json(d: Doubt) -> dict[str, Any]:
    """A side effect in doubt as every JSON surface writes it."""
    return {
        "run_id": d.run_id,
        "run_status": d.run_status,
        "position": d.position,
        "marker": d.marker,
        "attempt": d.attempt,
        "status": d.status,
        "started": d.started,
        "why": d.why,
        "error": d.error,
        "resolve": {r: d.command(r) for r in RESOLUTIONS},
    }
