"""The queue lens of a durable function (a real ``python -m letitloop.lsp`` under pytest-lsp):
the queue its runs wait on, how many wait, how many run and on which workers, from the same
journal ``lil queue list`` reads; it follows the queue within its refresh window."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from letitloop.journal import WorkerInfo
from letitloop.journal.duckdb._client import open_journal
from tests.conftest import _kill_owner
from tests.lsp.lsp_helpers import CLIENTS, CONFIG, ENV, JOURNAL, WORK, open_doc, start, tdi

SOURCE = '''"""Embeddings, queued for workers."""
from letitloop import Queue, durable, step

EMBEDDINGS = Queue("emb", concurrency=4)


@durable
def embed(n):
    return step("vector", lambda v: [float(v)], n)


@durable
def elsewhere(n):
    return n


if __name__ == "__main__":
    for n in range(3):
        EMBEDDINGS.enqueue(embed, n)
'''
FLOW = WORK / "queue_flows.py"


@pytest.fixture(scope="module", autouse=True)
def journal_filled() -> Iterator[None]:
    FLOW.write_text(SOURCE)
    subprocess.run(
        [sys.executable, str(FLOW)], env=ENV, cwd=WORK, check=True, timeout=120, capture_output=True
    )
    now = time.time()
    worker = WorkerInfo("4242@box/w1", "box", 4242, ("emb",), 1, now, now, 600.0, "running")
    assert len(open_journal(JOURNAL).claim(worker, 1)) == 1  # a worker holds one of the three
    yield
    _kill_owner(JOURNAL)


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS[:1])
async def client(request: pytest.FixtureRequest, lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await start(request, lsp_client)
    yield
    await lsp_client.shutdown_session()


async def _titles(client: LanguageClient, uri: str) -> dict[int, list[str]]:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=tdi(uri))
    )
    found: dict[int, list[str]] = {}
    for lens in lenses:
        found.setdefault(lens.range.start.line, []).append(lens.command.title)
    return found


async def test_a_workflows_lens_says_its_queue_and_who_runs_it(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    lines = SOURCE.splitlines()
    embed = next(n for n, text in enumerate(lines) if text.startswith("def embed"))
    other = next(n for n, text in enumerate(lines) if text.startswith("def elsewhere"))
    titles = await _titles(client, uri)
    assert "queue emb: 2 waiting · 1 running on 4242@box" in titles[embed], titles
    assert not any(t.startswith("queue ") for t in titles.get(other, []))  # never queued
    journal = open_journal(JOURNAL)
    [waiting] = journal.queue_items(queue="emb", state="queued", limit=1)
    now = time.time()
    more = WorkerInfo("77@box/w2", "box", 77, ("emb",), 1, now, now, 600.0, "running")
    assert journal.claim(more, 1)[0].run_id == waiting.run_id
    deadline = time.monotonic() + 15
    while "queue emb: 1 waiting · 2 running on 4242@box, 77@box" not in titles[embed]:
        assert time.monotonic() < deadline, titles[embed]
        await asyncio.sleep(0.3)
        titles = await _titles(client, uri)
