"""``DaskExecutor``: run ``step.map`` items on Dask distributed (a LocalCluster or a cluster).

``DaskExecutor()`` starts a LocalCluster of worker processes on first use;
``DaskExecutor("tcp://scheduler:8786")`` connects to a running scheduler; ``DaskExecutor(client)``
uses an existing ``distributed.Client``. Dask reruns the task of a worker that died; the item's
child run makes that safe (finished steps replay, a marker in doubt stops the item).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from letitloop.kernel._errors import ConfigError


class DaskExecutor:
    """Submit ``step.map`` items to Dask; each item's worker opens the journal by its location."""

    in_process = False

    def __init__(self, address: Any = None, **cluster: Any) -> None:
        self._address = address
        self._cluster_kwargs = cluster
        self._client: Any = None
        self._cluster: Any = None
        self._owned = False
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
        """The Dask dashboard's address, for progress views."""
        link = getattr(self.client, "dashboard_link", None)
        return link if isinstance(link, str) else None

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
            opts: dict[str, Any] = {"n_workers": 2, "threads_per_worker": 1, "processes": True}
            opts.update({"dashboard_address": ":0", **self._cluster_kwargs})
            local: Any = distributed.LocalCluster
            self._cluster = local(**opts)
            return client(self._cluster)
        return client(self._address, **self._cluster_kwargs)

    def submit(self, call: Callable[[], Any]) -> Future[Any]:
        return _settled(self.client.submit(call, pure=False))

    def submit_many(self, calls: list[Callable[[], Any]]) -> list[Future[Any]]:
        """Every call in one ``client.map`` (one batch to the scheduler, as plain Dask does)."""
        if not calls:
            return []
        return [_settled(f) for f in self.client.map(_call, calls, pure=False)]

    def close(self) -> None:
        with self._lock:
            if self._client is not None and self._owned:
                self._client.close()
                if self._cluster is not None:
                    self._cluster.close()
            self._client = self._cluster = None

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _call(call: Callable[[], Any]) -> Any:
    """What a worker runs for one item of ``submit_many``."""
    return call()


def _settled(dask_future: Any) -> Future[Any]:
    """A ``concurrent.futures.Future`` that settles with the Dask future."""
    done: Future[Any] = Future()

    def settle(f: Any) -> None:
        try:
            done.set_result(f.result())
        except BaseException as exc:  # cancelled, KilledWorker, the item's own
            done.set_exception(exc)

    dask_future.add_done_callback(settle)
    done.dask_future = dask_future  # type: ignore[attr-defined]  # keeps it referenced
    return done
