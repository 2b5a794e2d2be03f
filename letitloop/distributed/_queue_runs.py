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
from collections.abc import Callable
from typing import Any

from letitloop.distributed._dask import DaskExecutor
from letitloop.journal import Journal, QueueItem


def dask_execute(address: str | None, journal: Journal) -> Callable[[Journal, QueueItem], str]:
    """An ``execute`` for ``Worker`` that runs each claimed run on the cluster at ``address``."""
    executor = DaskExecutor(address)
    location = journal.location

    def run(_journal: Journal, item: QueueItem) -> str:
        outcome: Any = executor.submit(functools.partial(_remote, location, item)).result()
        return str(outcome)

    return run


def _remote(location: str, item: QueueItem) -> str:
    """On a Dask worker: the run, in that worker's process, on the same journal."""
    from letitloop.journal import open_journal
    from letitloop.kernel import execute_item

    return execute_item(open_journal(location), item, lock_timeout=60.0)
