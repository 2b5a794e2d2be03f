"""The journal inside the editor: hovers, code lenses and journal diagnostics from a real
journal that real durable workflows filled in subprocesses, live refresh while another process
runs a workflow, and splice proposals applied or rejected from code actions. Each test runs
with VS Code's and Neovim's capabilities against ``python -m letitloop.lsp``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import _kill_owner
from tests.lsp.lsp_helpers import (
    CLIENTS,
    CONFIG,
    ENV,
    JOURNAL,
    WORK,
    apply_edit,
    codes,
    edits_of,
    open_doc,
    pos,
    start,
    tdi,
    wait_diagnostics,
)

FLOWS_SOURCE = Path(__file__).with_name("lsp_flows.py").read_text()
FLOWS = WORK / "flows.py"


def run_flow(path: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, str(path), *args],
        env=ENV,
        cwd=WORK,
        check=False,
        timeout=60,
        capture_output=True,
    )


@pytest.fixture(scope="module", autouse=True)
def journal_filled() -> Iterator[None]:
    """Run the workflows once for the module: pipeline completes (x=2) then fails (x=0);
    reordered dies after two steps; in_doubt dies inside its marker block."""
    FLOWS.write_text(FLOWS_SOURCE)
    run_flow(FLOWS, "pipeline", "2")
    run_flow(FLOWS, "pipeline", "0")
    run_flow(FLOWS, "reordered")
    run_flow(FLOWS, "in_doubt")
    yield
    _kill_owner(JOURNAL)


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS)
async def client(request: pytest.FixtureRequest, lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await start(request, lsp_client)
    yield
    await lsp_client.shutdown_session()


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines()) if needle in line)


async def hover_at(client: LanguageClient, uri: str, line: int, col: int) -> str:
    result = await client.text_document_hover_async(
        types.HoverParams(text_document=tdi(uri), position=pos(line, col))
    )
    assert result is not None
    return result.contents.value


async def test_hover_on_steps_and_function(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOWS)
    fetch_line = line_of(FLOWS_SOURCE, 'step("fetch_user"')
    text = await hover_at(client, uri, fetch_line, 6)
    assert "step `fetch_user`" in text and "workflow `flows.pipeline`" in text
    assert text.count("| completed | 1 |") == 2  # both runs completed it
    assert "hello from the journal" in text and "Run `flows.pipeline:" in text
    divide = await hover_at(client, uri, line_of(FLOWS_SOURCE, 'step("divide"'), 14)
    assert "| failed | 1 |" in divide and "ZeroDivisionError: division by zero" in divide
    marker = await hover_at(client, uri, line_of(FLOWS_SOURCE, 'atomic_marker("notify")'), 12)
    assert "marker `notify`" in marker and "| completed |" in marker
    fn = await hover_at(client, uri, line_of(FLOWS_SOURCE, "def pipeline"), 6)
    assert "durable `pipeline`" in fn and "2 runs" in fn and "| failed |" in fn
    assert (
        await client.text_document_hover_async(
            types.HoverParams(text_document=tdi(uri), position=pos(0, 0))
        )
        is None
    )


async def test_code_lenses(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOWS)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=tdi(uri))
    )
    by_line: dict[int, list[types.Command]] = {}
    for lens in lenses:
        by_line.setdefault(lens.range.start.line, []).append(lens.command)
    head = [c.title for c in by_line[line_of(FLOWS_SOURCE, "def pipeline")]]
    assert head[0].startswith("lil: 2 runs · last failed") and head[0].endswith(" · $0")
    resume = by_line[line_of(FLOWS_SOURCE, "def pipeline")][1]
    assert resume.title == "Resume last run" and resume.command == "letitloop.resumeRun"
    assert resume.arguments and str(resume.arguments[0]).startswith("flows.pipeline:")
    assert by_line[line_of(FLOWS_SOURCE, 'step("fetch_user"')][0].title.startswith("✓ completed · ")
    divide = by_line[line_of(FLOWS_SOURCE, 'step("divide"')][0].title
    assert divide.startswith("✗ failed · ") and divide.endswith(
        "ZeroDivisionError: division by zero"
    )
    live = by_line[line_of(FLOWS_SOURCE, "def live")][0].title
    assert live == "lil: no runs yet"


async def test_journal_diagnostics(client: LanguageClient) -> None:
    # The editor's text swaps reordered()'s steps: the unfinished run journaled "first" first.
    edited = FLOWS_SOURCE.replace('step("first", fetch, 1)', 'step("zeroth", fetch, 0)')
    uri = await open_doc(client, FLOWS, edited)
    found = {d.code: d for d in client.diagnostics[uri] if str(d.code).startswith("LIL1")}
    assert set(found) == {"LIL101", "LIL102", "LIL103"}
    assert found["LIL101"].range.start.line == line_of(edited, 'step("divide"')
    assert found["LIL101"].severity == types.DiagnosticSeverity.Error
    assert "ZeroDivisionError: division by zero" in found["LIL101"].message
    assert found["LIL102"].range.start.line == line_of(edited, 'step("zeroth"')
    assert "NonDeterminismError" in found["LIL102"].message
    assert "lil runs reset flows.reordered:" in found["LIL102"].message
    assert found["LIL103"].range.start.line == line_of(edited, 'atomic_marker("charge_card")')
    assert "lil effects resolve flows.in_doubt:" in found["LIL103"].message
    # With the original order there is nothing to say about reordered().
    same = await open_doc(client, WORK / "flows_copy" / "flows.py", FLOWS_SOURCE)
    assert "LIL102" not in {d.code for d in client.diagnostics[same]}


async def test_live_refresh_when_another_process_runs(client: LanguageClient) -> None:
    """Another process runs a workflow: within a second the server re-publishes diagnostics
    (the failure appears) and, for clients that support it, asks for fresh code lenses."""
    path = WORK / f"live_{uuid.uuid4().hex[:8]}.py"
    path.write_text(FLOWS_SOURCE)
    uri = await open_doc(client, path)
    compute = line_of(FLOWS_SOURCE, 'step("compute"')
    assert (compute, "LIL101") not in codes(client, uri)
    waiter = asyncio.ensure_future(wait_for_code(client, uri, (compute, "LIL101")))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(path),
        "live",
        "0",
        env=ENV,
        cwd=WORK,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await asyncio.wait_for(proc.wait(), 60)
    exited = time.monotonic()
    await asyncio.wait_for(waiter, 5)
    assert time.monotonic() - exited < 1.0
    if client.spec == "visual-studio-code":  # the only snapshot with codeLens.refreshSupport
        await asyncio.wait_for(client.lens_refreshes.get(), 1.0)  # type: ignore[attr-defined]
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=tdi(uri))
    )
    titles = [
        lens.command.title
        for lens in lenses
        if lens.range.start.line == line_of(FLOWS_SOURCE, "def live")
    ]
    assert titles[0].startswith("lil: 1 run · last failed") and titles[1] == "Resume last run"


async def wait_for_code(client: LanguageClient, uri: str, wanted: tuple[int, str]) -> None:
    while wanted not in codes(client, uri):
        await wait_diagnostics(client, uri, timeout=30)


TARGET = """def greet(name):
    return "hello " + name


def other():
    return 1
"""


async def test_splice_proposals_apply_and_reject(client: LanguageClient) -> None:
    from letitloop.journal.duckdb._client import open_journal
    from letitloop.splice import propose_splice

    path = WORK / f"target_{uuid.uuid4().hex[:8]}.py"
    path.write_text(TARGET)
    journal = open_journal(JOURNAL)
    new_code = 'def greet(name):\n    return f"hello, {name}!"\n'
    applied = propose_splice(
        path, "greet", new_code, reason="friendlier", by="agent", journal=journal
    )
    rejected = propose_splice(
        path, "other", "def other():\n    return 2\n", by="agent", journal=journal
    )
    uri = await open_doc(client, path)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=tdi(uri),
            range=types.Range(start=pos(0, 0), end=pos(0, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    # Both are bare Commands: applying is the server's workspace/applyEdit request.
    titles = [a.title for a in actions]
    assert f"Apply splice proposal {applied.id} to greet: friendlier" in titles
    apply = next(a for a in actions if a.title.startswith(f"Apply splice proposal {applied.id}"))
    reject = next(a for a in actions if a.title.startswith(f"Reject splice proposal {rejected.id}"))
    assert isinstance(apply, types.Command) and isinstance(reject, types.Command)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=apply.command, arguments=apply.arguments)
    )
    assert result["applied"] is True
    (request,) = client.applied_edits
    new = apply_edit(client, TARGET, edits_of(request.edit, uri))
    assert new == TARGET.replace('    return "hello " + name', '    return f"hello, {name}!"')
    if request.edit.change_annotations:  # VS Code: the diff is the preview to confirm
        note = request.edit.change_annotations["splice"]
        assert note.needs_confirmation and '+    return f"hello, {name}!"' in note.description
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=reject.command, arguments=reject.arguments)
    )
    states = {p.id: p.state for p in journal.proposals()}
    assert states[applied.id] == "applied" and states[rejected.id] == "rejected"


async def test_approval_lenses_approve_and_resume(client: LanguageClient) -> None:
    """A run suspended on approval("ship"): Approve/Reject lenses above it; Approve journals
    the decision; "Resume last run" continues the run in the background, and it completes."""
    from letitloop.journal.duckdb._client import open_journal

    path = WORK / f"rel_{uuid.uuid4().hex[:8]}.py"
    path.write_text(FLOWS_SOURCE)
    run_flow(path, "release")
    uri = await open_doc(client, path)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=tdi(uri))
    )
    ship = line_of(FLOWS_SOURCE, 'approval("ship"')
    at_ship = [lens.command for lens in lenses if lens.range.start.line == ship]
    assert [c.title for c in at_ship] == [
        "⏸ waiting for a decision",
        "Approve",
        "Reject",
    ]
    approve = next(c for c in at_ship if c.title == "Approve")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=approve.command, arguments=approve.arguments)
    )
    assert result["status"] == "approved"
    journal = open_journal(JOURNAL)
    (row,) = [a for a in journal.approvals(limit=1000) if a.id == approve.arguments[0]]
    assert row.status == "approved" and row.decided_by

    head = [
        lens.command
        for lens in lenses
        if lens.range.start.line == line_of(FLOWS_SOURCE, "def release")
    ]
    resume = next(c for c in head if c.title == "Resume last run")
    run_id = str(resume.arguments[0])
    done = asyncio.Event()
    loop = asyncio.get_running_loop()

    def pushed(events: list) -> None:  # type: ignore[type-arg]
        if journal.get_run(run_id).run.status == "completed":
            loop.call_soon_threadsafe(done.set)

    subscription = journal.subscribe(pushed, run_id=run_id)
    try:
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=resume.command, arguments=resume.arguments)
        )
        await asyncio.wait_for(done.wait(), 30)
    finally:
        subscription.close()
    attempts = journal.get_run(run_id).attempts
    assert [(a.name, a.status) for a in attempts][-1] == ("announce", "completed")


async def test_responsive_while_another_process_writes(client: LanguageClient) -> None:
    """While another process journals steps as fast as it can (the owner pushing events all
    the while), hovers and code lenses keep answering, with the run still going."""
    path = WORK / f"busy_{uuid.uuid4().hex[:8]}.py"
    path.write_text(FLOWS_SOURCE)
    stop = path.with_suffix(".stop")
    uri = await open_doc(client, path)
    tick = line_of(FLOWS_SOURCE, 'step("tick"')
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(path),
        "busy",
        str(stop),
        env=ENV,
        cwd=WORK,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        busy = line_of(FLOWS_SOURCE, "def busy")
        await wait_for_code_lens(client, uri, busy, "lil: 1 run · last running")
        for _ in range(20):
            assert "step `tick`" in await hover_at(client, uri, tick, 8)
            await client.text_document_code_lens_async(types.CodeLensParams(text_document=tdi(uri)))
        assert proc.returncode is None  # all answered while the run was writing
    finally:
        stop.touch()
        await asyncio.wait_for(proc.wait(), 120)
    await wait_for_code_lens(client, uri, busy, "lil: 1 run · last completed")
    assert "| completed |" in await hover_at(client, uri, tick, 8)


async def wait_for_code_lens(client: LanguageClient, uri: str, line: int, prefix: str) -> None:
    """Wait (on the server's pushes) until the lens at ``line`` starts with ``prefix``."""
    while True:
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=tdi(uri))
        )
        titles = [lens.command.title for lens in lenses if lens.range.start.line == line]
        if titles and titles[0].startswith(prefix):
            return
        await wait_diagnostics(client, uri, timeout=60)


async def test_the_main_lens_opens_the_runs_of_the_function(client: LanguageClient) -> None:
    """Issue 15, point 16: it pointed at the terminal (``lil runs list``); now it opens a page
    of the function's runs (``window/showDocument``), or lists them in a message for an
    editor that cannot be asked to show a document."""
    uri = await open_doc(client, FLOWS)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=tdi(uri))
    )
    (main,) = [
        lens.command
        for lens in lenses
        if lens.range.start.line == line_of(FLOWS_SOURCE, "def pipeline")
        and lens.command is not None
        and lens.command.command == "letitloop.showRuns"
    ]
    assert list(main.arguments or ()) == [uri, "pipeline"]
    messages = len(client.messages)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=main.command, arguments=main.arguments)
    )
    assert result["workflow"] == "flows.pipeline" and result["total"] == 2
    statuses = sorted(r["status"] for r in result["runs"])
    assert statuses == ["completed", "failed"]
    failed = next(r for r in result["runs"] if r["status"] == "failed")
    assert failed["error"] == "ZeroDivisionError: division by zero"
    page = Path(result["view"].removeprefix("file://")).read_text(encoding="utf-8")
    assert page.startswith("# Runs of `flows.pipeline`")
    for run in result["runs"]:
        assert f"| `{run['run_id']}` | {run['status']} |" in page
        assert f"`lil runs show {run['run_id']}`" in page
    assert f"- continue: `lil runs resume {failed['run_id']}`" in page
    window = pytest_lsp.client_capabilities(client.spec).window  # type: ignore[attr-defined]
    if window and window.show_document and window.show_document.support:
        assert result["shown"] is True
        assert [p.uri for p in client.shown_documents] == [result["view"]]
        assert client.shown_documents[0].take_focus
    else:
        assert result["shown"] is False and not client.shown_documents
        text = client.messages[messages].message
        assert text.startswith("letitloop: 2 runs of flows.pipeline")
        assert failed["run_id"] in text
    assert not any("lil runs list" in m.message for m in client.messages)
