"""Journal and file text is data in the editor: hovers, the runs page, lenses and diagnostics.

A backtick in a step name closed its code span in a hover and the rest rendered as Markdown
(bold, a link); a pipe split a table cell; VS Code drew ``$(zap)`` in a lens title as an icon; a
suggested ``lil`` command pasted a run id with a ``;`` as two shell commands. Real workflows run
in subprocesses fill a real journal with such names, ids, errors and outputs; a real LSP client
(pytest-lsp) asks ``python -m letitloop.lsp``; the Markdown it answers is parsed with
markdown-it (CommonMark and GFM tables, as VS Code's renderer reads it) and must show each text
exactly as written, in the structure the server meant.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
import pytest_lsp
from lsprotocol import types
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pytest_lsp import LanguageClient

from tests.conftest import _kill_owner
from tests.lsp.lsp_helpers import CONFIG, ENV, JOURNAL, WORK, open_doc, pos, start, tdi

STEP = "a`**b**`[c](https://evil.example)|d"  # a name from the file and from the journal
FAILS = "e``f | g"
MARKER = "m`; rm -rf x`"
KEY = "k`|**r**`"
WORKFLOW = "evil.md"
RUN_ID = f"{WORKFLOW}:{KEY}"
DOUBT_ID = "evil.doubt:d; touch pwned"
ERROR = "bad `x` **bold** [link](https://evil.example) | $(zap) <b>h</b>"
OUTPUT = "``` fence\n**out** [x](https://evil.example) ``````"
SOURCE = f"""import os
from letitloop import atomic_marker, durable, step


def fail():
    raise ValueError({ERROR!r})


@durable(name={WORKFLOW!r}, run_id={KEY!r})
def hostile():
    step({STEP!r}, lambda: {OUTPUT!r})
    step({FAILS!r}, fail)


@durable(name="evil.doubt", run_id="d; touch pwned")
def doubt():
    with atomic_marker({MARKER!r}) as go:
        if go:
            os._exit(4)


if __name__ == "__main__":
    import sys

    try:
        globals()[sys.argv[1]]()
    except ValueError:
        pass
"""
MD = MarkdownIt("commonmark").enable("table")


@pytest.fixture(scope="module")
def flows() -> Iterator[Path]:
    """The module in an editor's workspace, both workflows run once in subprocesses."""
    path = WORK / f"hostile_{uuid.uuid4().hex[:8]}.py"
    path.write_text(SOURCE)
    for what in ("hostile", "doubt"):
        subprocess.run(
            [sys.executable, str(path), what], env=ENV, cwd=WORK, timeout=120, check=False
        )
    yield path
    _kill_owner(JOURNAL)


@pytest_lsp.fixture(config=CONFIG, params=["visual-studio-code"])
async def client(request: pytest.FixtureRequest, lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await start(request, lsp_client)
    yield
    await lsp_client.shutdown_session()


def line_of(needle: str) -> int:
    return next(n for n, line in enumerate(SOURCE.splitlines()) if needle in line)


def tokens(markdown: str) -> list[Token]:
    """Every token, inline children included, in document order."""
    out: list[Token] = []
    for t in MD.parse(markdown):
        out.append(t)
        out += t.children or []
    return out


def codes(markdown: str) -> list[str]:
    return [t.content for t in tokens(markdown) if t.type == "code_inline"]


def shape(markdown: str) -> dict[str, Any]:
    """What the Markdown renders as: links, bold runs, HTML, and each table row's cell count."""
    found = tokens(markdown)
    rows, cells = [], 0
    for t in found:
        if t.type == "tr_open":
            cells = 0
        elif t.type in ("td_open", "th_open"):
            cells += 1
        elif t.type == "tr_close":
            rows.append(cells)
    return {
        "links": [t for t in found if t.type == "link_open"],
        "html": [t for t in found if t.type in ("html_inline", "html_block")],
        "bold": sum(t.type == "strong_open" for t in found),
        "rows": rows,
    }


async def hover(client: LanguageClient, uri: str, needle: str, col: int) -> str:
    result = await client.text_document_hover_async(
        types.HoverParams(text_document=tdi(uri), position=pos(line_of(needle), col))
    )
    assert result is not None
    return str(result.contents.value)


async def test_hovers_show_names_ids_errors_and_outputs_as_written(
    client: LanguageClient, flows: Path
) -> None:
    uri = await open_doc(client, flows)
    step = await hover(client, uri, "step('a`", 6)
    s = shape(step)
    assert not s["links"] and not s["html"], step
    assert s["bold"] == 1  # the title alone: "**step `…`**"
    assert set(s["rows"]) == {5}, step  # a pipe in a name or id splits no cell
    assert STEP in codes(step) and KEY in codes(step) and RUN_ID in codes(step)
    (fence,) = [t for t in MD.parse(step) if t.type == "fence"]
    assert fence.content.rstrip("\n") == f'"{OUTPUT}"'.replace("\n", "\\n")  # a JSON preview

    failed = await hover(client, uri, "fail)", 6)
    s = shape(failed)
    assert not s["links"] and not s["html"] and s["bold"] == 2, failed  # title, "Error:"
    assert FAILS in codes(failed) and f"ValueError: {ERROR}" in codes(failed)

    fn = await hover(client, uri, "def hostile", 5)
    s = shape(fn)
    assert not s["links"] and not s["html"] and s["bold"] == 2, fn  # title, "Last error:"
    assert set(s["rows"]) == {5}, fn
    assert {"hostile", WORKFLOW, RUN_ID, f"ValueError: {ERROR}"} <= set(codes(fn))


async def test_lenses_and_diagnostics_keep_journal_text_as_text(
    client: LanguageClient, flows: Path
) -> None:
    uri = await open_doc(client, flows)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=tdi(uri))
    )
    titles = [lens.command.title for lens in lenses if lens.command is not None]
    (failed,) = [t for t in titles if t.startswith("✗ failed")]
    assert "$(zap)" not in failed  # VS Code would draw an icon
    assert "$\u200b(zap)" in failed and "bad `x` **bold**" in failed

    found = {str(d.code): d.message for d in client.diagnostics[uri]}
    assert {"LIL101", "LIL103"} <= set(found), found
    assert codes(found["LIL101"]) == [RUN_ID, f"ValueError: {ERROR}"]
    marker, run, command = codes(found["LIL103"])
    assert (marker, run) == (MARKER, DOUBT_ID)
    # the command pastes as one argument each: no second command, the marker named whole
    assert shlex.split(command) == ["lil", "effects", "resolve", DOUBT_ID, MARKER, "--done|--redo"]


async def test_the_runs_page_shows_ids_and_errors_as_written(
    client: LanguageClient, flows: Path
) -> None:
    uri = await open_doc(client, flows)
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="letitloop.showRuns", arguments=[uri, "hostile"])
    )
    page = Path(unquote(urlparse(result["view"]).path)).read_text()
    s = shape(page)
    assert not s["links"] and not s["html"] and s["bold"] == 0, page
    assert set(s["rows"]) == {6}, page
    assert {WORKFLOW, RUN_ID, f"ValueError: {ERROR}"} <= set(codes(page))
    commands = [shlex.split(c) for c in codes(page) if c.startswith("lil ")]
    assert ["lil", "runs", "show", RUN_ID] in commands
    assert ["lil", "runs", "resume", RUN_ID] in commands


async def test_a_splice_reason_stays_one_line_of_text_in_a_code_action(
    client: LanguageClient, flows: Path
) -> None:
    from letitloop import open_journal
    from letitloop.splice import propose_splice

    reason = "faster $(zap)\n**now** [x](https://evil.example)"
    new = f"def fail():\n    raise ValueError({ERROR!r})  # kept\n"
    proposal = propose_splice(flows, "fail", new, reason=reason, journal=open_journal(JOURNAL))
    uri = await open_doc(client, flows)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=tdi(uri),
            range=types.Range(start=pos(0, 0), end=pos(0, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    (apply,) = [a for a in actions if a.title.startswith(f"Apply splice proposal {proposal.id}")]
    assert apply.title == (
        f"Apply splice proposal {proposal.id} to fail: faster $\u200b(zap) "
        "**now** [x](https://evil.example)"
    )
