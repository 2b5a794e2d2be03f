"""examples/dask_embeddings: step.map on a real Dask LocalCluster, the orchestrator SIGKILLed
mid-map (by a worker, at the document the README names) and called again: only unfinished items
are submitted; a grown corpus pays only for its new documents (the cache)."""

from __future__ import annotations

import collections
import re
from collections.abc import Callable

import pytest

from tests.examples.cookbook import Example, killed, run_it


def _bills(ex: Example) -> collections.Counter[int]:
    log = ex.dir / "embedder_calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return collections.Counter(int(line.split()[1]) for line in lines)


@pytest.mark.slow  # three LocalClusters started: 10 to 40 s
def test_orchestrator_killed_mid_map_then_a_bigger_corpus(example: Callable[..., Example]) -> None:
    ex = example("dask_embeddings")
    assert run_it(ex.readme) == ["python embed.py", "python embed.py --search churn"]

    crashed = ex.run("python embed.py --crash-at 20")
    assert killed(crashed.returncode), crashed.stdout + crashed.stderr
    before = _bills(ex)
    assert 18 <= len(before) < 40 and 20 not in before, before

    resumed = ex.ok("python embed.py")
    assert "embedded 40 documents into index.json" in resumed
    ran = re.search(r"embedding model calls this run: (\d+)", resumed)
    assert ran and int(ran.group(1)) <= 40 - len(before) + 2, (resumed, before)
    bills = _bills(ex)
    assert set(bills) == set(range(40))
    twice = [doc for doc, n in bills.items() if n > 1]
    assert len(twice) <= 2 and max(bills.values()) <= 2, bills  # only items in flight again
    again = ex.ok("sort embedder_calls.log | uniq -d").split("\n")
    assert sorted(int(line.split()[1]) for line in again if line) == sorted(twice)

    grown = ex.ok("python embed.py --docs 50")
    assert "embedded 50 documents" in grown
    assert "embedding model calls this run: 10 (" in grown  # the first 40 from the cache
    assert set(_bills(ex)) == set(range(50))
    hits = ex.ok("python embed.py --search churn").splitlines()
    assert len(hits) == 3 and all("notes on churn" in hit for hit in hits)
    assert "embed_corpus" in ex.ok("lil runs list --workflow embed_corpus")
    items = ex.ok("lil runs list --workflow embed_corpus.embed")
    assert items.count("completed") >= 40
    assert "embed_one" in ex.ok("lil cache list")
