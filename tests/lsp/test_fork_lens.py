"""The "Fork from here" code lens on a step (VS Code's and Neovim's capabilities, a real
``python -m letitloop.lsp``): its command forks the function's last run at that step and starts
the fork in the background, which runs exactly the steps from there on."""

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

from letitloop.journal._fork import forked_from
from letitloop.journal.duckdb._client import open_journal
from tests.conftest import _kill_owner
from tests.lsp.lsp_helpers import CLIENTS, CONFIG, ENV, JOURNAL, WORK, open_doc, start, tdi

SOURCE = '''"""Three steps; each one that really runs appends its name to fork_calls.txt."""
import os

from letitloop import durable, step

CALLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fork_calls.txt")


def work(name):
    with open(CALLS, "a") as f:
        f.write(name + "\\n")
    return name.upper()


@durable
def chain():
    one = step("one", work, "one")
    two = step("two", work, "two")
    return [one, two, step("three", work, "three")]


if __name__ == "__main__":
    chain()
'''
FLOW = WORK / "fork_flows.py"
CALLS = WORK / "fork_calls.txt"


@pytest.fixture(scope="module", autouse=True)
def journal_filled() -> Iterator[None]:
    FLOW.write_text(SOURCE)
    subprocess.run(
        [sys.executable, str(FLOW)], env=ENV, cwd=WORK, check=True, timeout=120, capture_output=True
    )
    yield
    _kill_owner(JOURNAL)


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS)
async def client(request: pytest.FixtureRequest, lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await start(request, lsp_client)
    yield
    await lsp_client.shutdown_session()


def _calls() -> list[str]:
    return CALLS.read_text().splitlines() if CALLS.exists() else []


async def test_fork_from_here_lens_forks_and_runs_from_the_step(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=tdi(uri))
    )
    line = next(n for n, text in enumerate(SOURCE.splitlines()) if 'step("two"' in text)
    forks = [lens.command for lens in lenses if lens.command.title == "Fork from here"]
    assert len(forks) == 3  # one per journaled step
    (lens,) = [
        lens.command
        for lens in lenses
        if lens.range.start.line == line and lens.command.title == "Fork from here"
    ]
    assert lens.command == "letitloop.forkRun"
    run_id, position, _uri = lens.arguments or []
    assert str(run_id).startswith("fork_flows.chain:") and position == 1
    before = len(_calls())
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=lens.command, arguments=lens.arguments)
    )
    assert result["position"] == 1 and result["pid"], result
    fork_id = result["fork"]
    deadline = time.monotonic() + 120
    journal = open_journal(JOURNAL)
    while journal.get_run(fork_id).run.status != "completed":
        assert time.monotonic() < deadline, journal.get_run(fork_id).run
        await asyncio.sleep(0.1)
    assert _calls()[before:] == ["two", "three"]  # exactly the steps from "two" on
    origin = forked_from(journal, fork_id)
    assert origin is not None and (origin.run_id, origin.position) == (run_id, 1)
    assert journal.get_run(str(run_id)).run.status == "completed"
