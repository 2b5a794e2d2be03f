"""How ``DaskExecutor`` collects item results, on a real LocalCluster of 2 worker processes: in
gathers of several items while enough stay in flight, at once when few do (no worker may wait
for a result to be collected), in item order either way."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import distributed
import pytest

from letitloop import durable, step
from letitloop.distributed import DaskExecutor


def nap(ms: float, i: int) -> int:
    time.sleep(ms / 1000)
    return i * i


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


class CountingExecutor(DaskExecutor):
    """A DaskExecutor that counts the gathers its results cost."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.gathers = 0
        real = client.gather

        def gather(*args: Any, **kwargs: Any) -> Any:
            self.gathers += 1
            return real(*args, **kwargs)

        self._gather_client = client
        client.gather = gather
        self._real_gather = real

    def close(self) -> None:
        self._gather_client.gather = self._real_gather
        super().close()


def test_items_finishing_together_are_gathered_together(client: Any, journal_path: Path) -> None:
    items = list(range(300))
    executor = CountingExecutor(client)

    @durable(journal=str(journal_path), run_id="many")
    def many() -> list[int]:
        return step.map("nap", functools.partial(nap, 5.0), items, on=executor)

    try:
        assert many() == [i * i for i in items]
        pump = executor._pump
        assert pump is not None and pump.waits > 0
        # one gather per item finishing alone would be ~300 (plain Dask: one for all)
        assert executor.gathers <= len(items) // 3, executor.gathers
    finally:
        executor.close()


def test_a_small_window_is_never_held_back(client: Any, journal_path: Path) -> None:
    """With max_in_flight=2 on 2 worker threads every result is settled at once: waiting for
    others to finish would leave a worker idle with nothing submitted."""
    executor = CountingExecutor(client)

    @durable(journal=str(journal_path), run_id="few")
    def few() -> list[int]:
        return step.map("nap", functools.partial(nap, 5.0), range(40), on=executor, max_in_flight=2)

    try:
        assert few() == [i * i for i in range(40)]
        pump = executor._pump
        assert pump is not None and pump.waits == 0
        assert executor.gathers >= 20  # settled as they came: about one per finished item
    finally:
        executor.close()
