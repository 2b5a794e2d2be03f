"""Embed a corpus with ``step.map`` on a Dask LocalCluster, durably, with the cache.

    python embed.py [--docs N] [--crash-at DOC]
    python embed.py --search "QUERY"

Each document is one item of ``step.map("embed", ...)``: a durable child run executed by a Dask
worker process, its vector journaled in .letitloop/ beside this file. The embedding model is a
stand-in (a vector from a hash of the text, 0.2 s per call); each real call appends a line to
embedder_calls.log, the bill a provider would send. ``cache=True`` reuses the vector of a text
embedded by any earlier run, so growing the corpus pays only for the new documents.

--crash-at DOC SIGKILLs this process (the orchestrator, with the LocalCluster it started) while
a worker embeds document DOC. Run it again: the documents whose child runs finished come from
the journal, and only the others are submitted.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path

from letitloop import durable, step
from letitloop.distributed import DaskExecutor

HERE = Path(__file__).resolve().parent
CALLS = HERE / "embedder_calls.log"
INDEX = HERE / "index.json"
ORCHESTRATOR = os.getpid()  # travels with embed_one to the workers, as its globals do
CRASH_AT = int(sys.argv[sys.argv.index("--crash-at") + 1]) if "--crash-at" in sys.argv else -1
TOPICS = ["invoices", "churn", "latency", "onboarding", "pricing", "outages", "hiring", "audits"]


def corpus(n: int) -> list[str]:
    """The documents: deterministic, so every run of the same corpus is the same call."""
    return [
        f"doc {i}: notes on {TOPICS[i % len(TOPICS)]}, part {i // len(TOPICS)}" for i in range(n)
    ]


def embed_one(doc: str) -> list[float]:
    """The embedding model (on a Dask worker): 0.2 s, one billed call, a unit vector."""
    if doc.startswith(f"doc {CRASH_AT}:"):
        print(f"--crash-at {CRASH_AT}: SIGKILL of the orchestrator", flush=True)
        os.kill(ORCHESTRATOR, signal.SIGKILL)
        time.sleep(60)  # the cluster goes down with it
    time.sleep(0.2)
    with CALLS.open("a", encoding="utf-8") as f:
        f.write(doc.split(":")[0] + "\n")
    return vector_of(doc)


def vector_of(text: str) -> list[float]:
    """A toy embedding: one dimension per topic, plus a little noise from the text's hash."""
    noise = hashlib.sha256(text.encode()).digest()
    vector = [(t in text) + b / 2550 for t, b in zip(TOPICS, noise, strict=False)]
    norm = sum(x * x for x in vector) ** 0.5
    return [round(x / norm, 6) for x in vector]


def write_index(docs: list[str], vectors: list[list[float]]) -> str:
    INDEX.write_text(json.dumps({"docs": docs, "vectors": vectors}))
    return INDEX.name


@durable(name="embed_corpus")
def embed_corpus(docs: list[str]) -> str:
    with DaskExecutor(n_workers=2, threads_per_worker=1) as cluster:
        vectors = step.map("embed", embed_one, docs, on=cluster, cache=True)
    return step("index", write_index, docs, vectors)


def search(query: str) -> None:
    """The documents nearest to ``query`` in the index (embedded by the same model)."""
    index = json.loads(INDEX.read_text())
    q = vector_of(query)
    scores = [sum(a * b for a, b in zip(q, v, strict=True)) for v in index["vectors"]]
    for score, doc in sorted(zip(scores, index["docs"], strict=True), reverse=True)[:3]:
        print(f"{score:+.3f}  {doc}")


def billed() -> int:
    return len(CALLS.read_text().splitlines()) if CALLS.exists() else 0


def main() -> int:
    if "--search" in sys.argv:
        search(sys.argv[sys.argv.index("--search") + 1])
        return 0
    n = int(sys.argv[sys.argv.index("--docs") + 1]) if "--docs" in sys.argv else 40
    before, started = billed(), time.monotonic()
    index = embed_corpus(corpus(n))
    print(f"embedded {n} documents into {index} in {time.monotonic() - started:.1f} s")
    print(f"embedding model calls this run: {billed() - before} (all runs: {billed()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
