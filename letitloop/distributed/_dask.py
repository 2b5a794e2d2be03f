"""``DaskExecutor``: run ``step.map`` items on Dask distributed (a LocalCluster or a cluster).

``DaskExecutor()`` starts a LocalCluster of worker processes on first use;
``DaskExecutor("tcp://scheduler:8786")`` connects to a running scheduler; ``DaskExecutor(client)``
uses an existing ``distributed.Client``. Dask reruns the task of a worker that died; the item's
child run makes that safe (finished steps replay, a marker in doubt stops the item).

A cluster started here admits only its user: its scheduler, workers and nannies speak TLS with
certificates made for this cluster alone (``Security.temporary()``, kept in memory), and a
connection without them is refused, so another local user who finds the port cannot submit
work or ``client.run`` code as this user. It has no dashboard unless asked for
(``dashboard=True``), and then on 127.0.0.1.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from letitloop.errors import ConfigError

#: seconds the result of a finished item may wait to be gathered with others that finish soon
COALESCE = 0.05


class DaskExecutor:
    """Submit ``step.map`` items to Dask; each item's worker opens the journal by its location."""

    in_process = False

    def __init__(self, address: Any = None, *, dashboard: bool = False, **cluster: Any) -> None:
        self._address = address
        self._dashboard = dashboard
        self._cluster_kwargs = cluster
        self._client: Any = None
        self._cluster: Any = None
        self._owned = False
        self._quiet = False  # a cluster started here without a dashboard
        self._pump: _Pump | None = None
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The ``distributed.Client`` in use (a LocalCluster's, when no address was given)."""
        with self._lock:
            if self._client is None:
                self._client = self._connect()
            return self._client

    @property
    def dashboard_link(self) -> str | None:
        """The Dask dashboard's address, for progress views (None: the cluster has none)."""
        client = self.client
        if self._cluster is not None and self._quiet:
            return None  # Dask reports its empty HTTP server as a dashboard
        link = getattr(client, "dashboard_link", None)
        return link if isinstance(link, str) and link else None

    def _connect(self) -> Any:
        try:
            import distributed
        except ImportError:
            raise ConfigError(
                "DaskExecutor needs Dask distributed, which is not installed",
                fix="pip install 'letitloop[distributed]'",
            ) from None
        client: Any = distributed.Client  # untyped in dask: keep mypy's strictness elsewhere
        if isinstance(self._address, client):
            return self._address
        self._owned = True
        if self._address is None:
            local: Any = distributed.LocalCluster
            opts = local_cluster_options(self._cluster_kwargs, self._dashboard)
            self._quiet = opts["dashboard_address"] is None
            with _no_pages(self._quiet):
                self._cluster = local(**opts)
            return client(self._cluster)  # the client takes the cluster's credentials
        return client(self._address, **self._cluster_kwargs)

    def submit(self, call: Callable[[], Any]) -> Future[Any]:
        return self._results().track([self.client.submit(call, pure=False)])[0]

    def submit_many(self, calls: list[Callable[[], Any]]) -> list[Future[Any]]:
        """Every call in one ``client.map`` (one batch to the scheduler, as plain Dask does);
        results come back in batches, one ``gather`` for the items that finished together."""
        if not calls:
            return []
        return self._results().track(self.client.map(_call, calls, pure=False))

    def _results(self) -> _Pump:
        client = self.client
        with self._lock:
            if self._pump is None:
                self._pump = _Pump(client)
            return self._pump

    def close(self) -> None:
        with self._lock:
            if self._pump is not None:
                self._pump.close()
                self._pump = None
            if self._client is not None and self._owned:
                self._client.close()
                if self._cluster is not None:
                    self._cluster.close()
            self._client = self._cluster = None

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def local_cluster_options(given: dict[str, Any], dashboard: bool) -> dict[str, Any]:
    """The LocalCluster a ``DaskExecutor()`` starts: 2 worker processes of one thread, TLS with
    temporary credentials (unless ``security=`` says otherwise), no dashboard unless asked for.

    Without TLS, the scheduler listens on 127.0.0.1 with no authentication, and any local
    user who connects may run code as this one (``client.run``). A dashboard address without
    a host (``":8787"``) would listen on every interface; here it means 127.0.0.1."""
    opts: dict[str, Any] = {"n_workers": 2, "threads_per_worker": 1, "processes": True}
    if dashboard:
        opts["dashboard_address"] = "127.0.0.1:0"
    opts.update(given)
    if given.get("security") is None:
        opts["security"] = _temporary_security()
    address = opts.setdefault("dashboard_address", None)
    if isinstance(address, int) or (isinstance(address, str) and address.startswith(":")):
        opts["dashboard_address"] = f"127.0.0.1:{str(address).lstrip(':')}"
    return opts


def _no_pages(quiet: bool) -> AbstractContextManager[Any]:
    """Without a dashboard, Dask's scheduler and workers still serve HTTP pages (worker lists,
    logs, call stacks, metrics naming the functions): the cluster started under this serves
    none. Read by the scheduler and captured by each nanny while the cluster starts."""
    if not quiet:
        return nullcontext()
    import dask

    routes: dict[str, list[str]] = {
        "distributed.scheduler.http.routes": [],
        "distributed.worker.http.routes": [],
    }
    return dask.config.set(routes)


def _temporary_security() -> Any:
    """A key and certificate made for one cluster, in memory (Dask writes them, to load them,
    only into a private temporary directory)."""
    from distributed.security import Security

    temporary: Any = Security.temporary  # untyped in dask
    try:
        return temporary()
    except ImportError:
        raise ConfigError(
            "DaskExecutor() secures the cluster it starts with TLS, which needs the "
            "cryptography package, and it is not installed",
            fix="pip install 'letitloop[distributed]' (it brings cryptography)",
        ) from None


def _call(call: Callable[[], Any]) -> Any:
    """What a worker runs for one item of ``submit_many``."""
    return call()


class _Pump:
    """Settles the futures of ``submit_many`` from one thread, a batch at a time: the items
    that finished together come back in one ``client.gather`` (one fetch per worker, as plain
    Dask's gather does) instead of a result fetch and a callback thread hop per item."""

    def __init__(self, client: Any) -> None:
        from distributed import as_completed

        self._client = client
        completed: Any = as_completed  # untyped in dask
        self._done: Any = completed([], loop=client.loop)
        self._ours: dict[Any, Future[Any]] = {}
        self._wake = threading.Condition()
        self._closed = False
        self.waits = 0  # coalescing pauses taken (tests look at it)
        self._thread = threading.Thread(target=self._run, name="lil-dask-results", daemon=True)
        self._thread.start()

    def track(self, dask_futures: list[Any]) -> list[Future[Any]]:
        mine: list[Future[Any]] = [Future() for _ in dask_futures]
        with self._wake:
            self._ours.update(zip(dask_futures, mine, strict=True))
            self._done.update(dask_futures)
            self._wake.notify()
        return mine

    def close(self) -> None:
        """Stop the thread; futures still unsettled are cancelled (their waiters wake up)."""
        with self._wake:
            self._closed = True
            left, self._ours = list(self._ours.values()), {}
            self._wake.notify()
        for ours in left:
            ours.cancel()
        self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._closed and self._done.is_empty():
                    self._wake.wait()
                if self._closed:
                    return
            while not self._done.is_empty():
                self._settle(self._coalesced(self._done.next_batch(block=True)))

    def _coalesced(self, batch: list[Any]) -> list[Any]:
        """The batch, with the items that finish in the next COALESCE seconds too, while enough
        others stay in flight to keep every worker thread busy: each gather costs the scheduler
        and a worker a round trip, and one per item finishing alone doubled Dask's own cost.
        With few items left (the tail, a small ``max_in_flight``) the batch is settled at once,
        so no worker waits for a result to be collected."""
        deadline = time.monotonic() + COALESCE
        while len(self._ours) - len(batch) >= 2 * self._threads():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, COALESCE / 5))
            batch += self._done.next_batch(block=False)
            self.waits += 1
        return batch

    def _threads(self) -> int:
        """The cluster's worker threads, as the client last heard from the scheduler (it asks
        every 2 s on its own; a call here could hang on a scheduler that died). Unknown: no
        coalescing at all, the safe side."""
        identity: Any = getattr(self._client, "_scheduler_identity", None) or {}
        threads = identity.get("total_threads") if hasattr(identity, "get") else None
        return threads if isinstance(threads, int) and threads > 0 else 1 << 30

    def _settle(self, batch: list[Any]) -> None:
        with self._wake:
            pairs = [(f, self._ours.pop(f)) for f in batch if f in self._ours]
        ready = [(f, ours) for f, ours in pairs if f.status == "finished"]
        if ready:
            try:
                values = self._client.gather([f for f, _ in ready])
            except BaseException:  # a result lost with its worker, say: each settles alone
                pass
            else:
                for (_, ours), value in zip(ready, values, strict=True):
                    ours.set_result(value)
        for f, ours in pairs:
            if not ours.done():
                _settle_one(f, ours)


def _settle_one(dask_future: Any, done: Future[Any]) -> None:
    try:
        done.set_result(dask_future.result())
    except BaseException as exc:  # cancelled, KilledWorker, the item's own
        done.set_exception(exc)
