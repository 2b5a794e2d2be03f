"""``lil worker --dask tcp://...``: the runs a worker claims execute on a Dask cluster's workers.

The ``lil worker`` process keeps the claims and their heartbeat; each claimed run is submitted
to the cluster, where a Dask worker opens the same journal (by its location) and executes the
run by its signed entry point under the run's lease, exactly as ``lil worker`` would. A Dask
worker that dies frees the run's lease; the claim's outcome then says ``stopped`` and the run
is resumable by the next worker or ``lil runs resume``. Without an address, the private cluster
``DaskExecutor`` starts is used (``letitloop.distributed``'s own helper).
"""

from __future__ import annotations

import functools
from typing import Any

from letitloop.distributed._dask import DaskExecutor
from letitloop.journal import Journal, QueueItem


class DaskRuns:
    """The ``execute`` of a ``Worker`` that runs each claimed run on a Dask cluster; ``close``
    lets go of the cluster (and stops the private one it started)."""

    def __init__(self, address: str | None, journal: Journal) -> None:
        self.executor = DaskExecutor(address)
        self.location = journal.location

    def __call__(self, _journal: Journal, item: QueueItem) -> str:
        call = functools.partial(_remote, self.location, item)
        outcome: Any = self.executor.submit(call).result()
        return str(outcome)

    def close(self) -> None:
        self.executor.close()


def dask_execute(address: str | None, journal: Journal) -> DaskRuns:
    """An ``execute`` for ``Worker`` that runs each claimed run on the cluster at ``address``
    (None: a private LocalCluster, ``DaskExecutor``'s own)."""
    return DaskRuns(address, journal)


def _remote(location: str, item: QueueItem) -> str:
    """On a Dask worker: the run, in that worker's process, on the same journal."""
    from letitloop.journal import open_journal
    from letitloop.kernel import execute_item

    return execute_item(open_journal(location), item, lock_timeout=60.0)
