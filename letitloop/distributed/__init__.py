"""Fan-out of ``step.map`` items onto an engine (``pip install 'letitloop[distributed]'``).

    from letitloop import durable, step
    from letitloop.distributed import DaskExecutor

    @durable
    def embed_corpus(doc_ids):
        vectors = step.map("embed", embed_one, doc_ids, on=DaskExecutor())
        return step("store", store_all, vectors)

An executor only runs calls; the journal records every item (a child run), so the engine
needs no durability of its own. Names resolve lazily: dask is imported by ``DaskExecutor`` only.
"""

from __future__ import annotations

from letitloop._lazy import lazy_exports

TYPE_CHECKING = False

_EXPORTS = {
    "Executor": "letitloop.distributed._executor",
    "ThreadExecutor": "letitloop.distributed._executor",
    "DaskExecutor": "letitloop.distributed._dask",
    "dask_execute": "letitloop.distributed._queue_runs",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from letitloop.distributed._dask import DaskExecutor
    from letitloop.distributed._executor import Executor, ThreadExecutor
    from letitloop.distributed._queue_runs import dask_execute as dask_execute

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
