"""The items of a run's ``step.map`` steps, read back from the journal for every surface.

A map step at position P of run ``W:K`` (epoch E) journals each item i as the child run
``W.NAME:K.eE.pP.i.DIGEST`` (see ``kernel._fanout``). ``map_items`` finds them with one listing
per map step, so ``lil runs show``, ``lil-tui`` and the notebook can show how far a map got
(done, running, failed) while it runs and after it finished, in any process.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from letitloop.journal._contract import Journal, RunDetail, RunInfo

#: at most this many child runs are read per map step (a listing bound, not a map bound)
LISTING_LIMIT = 100_000


def item_key(parent_key: str, epoch: int, position: int, index: int, digest: str) -> str:
    """The key of item ``index`` of the map step at ``position`` (one place for the format)."""
    return f"{parent_key}.e{epoch}.p{position}.{index}.{digest}"


class MapItems(NamedTuple):
    """The child runs of one map step, in item order (items never submitted are absent)."""

    position: int
    name: str
    workflow: str
    items: list[tuple[int, RunInfo]]  # (item index, its child run)

    def counts(self) -> dict[str, int]:
        """How many items are completed, running, failed, ... (statuses of their runs)."""
        return dict(Counter(run.status for _, run in self.items))

    def summary(self) -> str:
        """One line for people: ``12 completed, 2 running, 1 failed of 15 items``."""
        counts = self.counts()
        order = ["completed", "running", "interrupted", "suspended", "failed", "cancelled"]
        parts = [f"{counts[s]} {s}" for s in order if counts.get(s)]
        parts += [f"{n} {s}" for s, n in sorted(counts.items()) if s not in order]
        return f"{', '.join(parts) or 'none started'} of {len(self.items)} items"


def map_items(journal: Journal, detail: RunDetail) -> list[MapItems]:
    """The items of every map step of the run's current epoch, by position."""
    run = detail.run
    maps: dict[int, str] = {}
    for attempt in detail.attempts:
        if attempt.kind == "map" and attempt.status != "superseded":
            maps[attempt.position] = attempt.name
    out = []
    for position, name in sorted(maps.items()):
        workflow = f"{run.workflow}.{name}"
        prefix = f"{workflow}:{run.key}.e{run.epoch}.p{position}."
        found: list[tuple[int, RunInfo]] = []
        for child in journal.list_runs(workflow=workflow, limit=LISTING_LIMIT):
            if child.run_id.startswith(prefix):
                index = child.run_id[len(prefix) :].split(".", 1)[0]
                if index.isdigit():
                    found.append((int(index), child))
        found.sort(key=lambda pair: pair[0])
        out.append(MapItems(position, name, workflow, found))
    return out
