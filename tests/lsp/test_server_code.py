"""``python -m letitloop.lsp`` under a real LSP client (pytest-lsp over stdio), with VS Code's
and Neovim's capabilities: analysis diagnostics, code actions whose workspace edits give the
expected files, incremental edits, notebook cells and non-ASCII positions."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import (
    CLIENTS,
    CONFIG,
    WORK,
    apply_edit,
    codes,
    open_doc,
    pos,
    start,
    tdi,
    wait_diagnostics,
)

ACTIONS = Path(__file__).resolve().parents[1] / "data" / "lsp" / "actions"
FLOW = ACTIONS / "flow.py"


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS)
async def client(request: pytest.FixtureRequest, lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await start(request, lsp_client)
    yield
    await lsp_client.shutdown_session()


def columns(text: str, encoding: str) -> int:
    """The length of ``text`` in an LSP position encoding, computed independently."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


async def test_diagnostics_with_codes_severities_and_utf16_columns(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    assert codes(client, uri) == [(13, "LIL005"), (19, "LIL001"), (20, "LIL003"), (21, "LIL006")]
    by_code = {d.code: d for d in client.diagnostics[uri]}
    assert by_code["LIL001"].severity == types.DiagnosticSeverity.Warning
    assert by_code["LIL006"].severity == types.DiagnosticSeverity.Hint
    assert by_code["LIL005"].severity == types.DiagnosticSeverity.Information
    assert all(d.source == "letitloop" for d in client.diagnostics[uri])
    # The line holds "é" and an emoji before time.time(): columns are in the negotiated encoding.
    line = FLOW.read_text().splitlines()[19]
    start_col = line.index("time.time()")
    rng = by_code["LIL001"].range
    assert rng.start.character == columns(line[:start_col], client.encoding)
    assert rng.end.character == columns(line[: start_col + len("time.time()")], client.encoding)
    # VS Code 1.65 offers no encodings (UTF-16); Neovim 0.11 offers UTF-8 first.
    assert client.encoding == ("utf-16" if client.spec == "visual-studio-code" else "utf-8")
    if client.encoding == "utf-16":
        assert rng.start.character == start_col + 1  # the emoji is two UTF-16 units
    else:
        assert rng.start.character == start_col + 1 + 3  # "é" is 2 bytes, the emoji 4


QUICK_FIXES = [
    ("LIL001", "Journal this call: wrap it in step('now')", "wrap_step_time.py"),
    ("LIL003", "Journal this call: wrap it in step('http_get')", "wrap_step_get.py"),
    (
        "LIL006",
        "Run this at most once: wrap it in atomic_marker('remove_file')",
        "wrap_marker_remove.py",
    ),
    ("LIL005", "Make notify @durable", "add_durable_notify.py"),
]


@pytest.mark.parametrize(
    ("code", "title", "expected"), QUICK_FIXES, ids=[q[0] for q in QUICK_FIXES]
)
async def test_quick_fix_workspace_edit_gives_expected_file(
    client: LanguageClient, code: str, title: str, expected: str
) -> None:
    uri = await open_doc(client, FLOW)
    diag = next(d for d in client.diagnostics[uri] if d.code == code)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=tdi(uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        )
    )
    fix = next(a for a in actions if a.title == title)
    assert fix.kind == types.CodeActionKind.QuickFix
    assert fix.diagnostics and fix.diagnostics[0].code == code
    new = apply_edit(client, FLOW.read_text(), fix.edit.changes[uri])
    assert new == (ACTIONS / expected).read_text()


async def test_refactor_make_durable_and_no_fix_after_it(client: LanguageClient) -> None:
    """ "Make @durable" is offered for a function with a side effect, not for a pure helper
    (``fetch`` only returns a dict: making it durable journals nothing worth journaling)."""
    uri = await open_doc(client, FLOW)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=tdi(uri),
            range=types.Range(start=pos(9, 4), end=pos(9, 4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert not any("@durable" in a.title for a in actions), [a.title for a in actions]
    text = (
        "from letitloop import durable\n\n\ndef save(report):\n"
        "    with open('out.txt', 'w') as f:\n        f.write(report)\n"
    )
    path = WORK / f"save_{client.encoding}.py"
    uri = await open_doc(client, path, text)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=tdi(uri),
            range=types.Range(start=pos(4, 4), end=pos(4, 4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert [a.title for a in actions] == ["Make save @durable"]
    assert actions[0].kind == types.CodeActionKind.RefactorRewrite
    new = apply_edit(client, text, actions[0].edit.changes[uri])
    assert "@durable\ndef save(report):" in new
    # Applying it and re-opening: save is durable, so no action offers to make it durable.
    path = WORK / f"save_durable_{client.encoding}.py"
    path.write_text(new)
    uri2 = await open_doc(client, path)
    again = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=tdi(uri2),
            range=types.Range(start=pos(5, 4), end=pos(5, 4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert not any("@durable" in a.title for a in again)


async def test_wrap_call_in_step_at_the_cursor(client: LanguageClient) -> None:
    text = (
        "from letitloop import durable\n\n\ndef fetch(x):\n    return x\n\n\n"
        "@durable\ndef flow(x):\n    return fetch(x)\n"
    )
    path = WORK / "wrap_cursor.py"
    uri = await open_doc(client, path, text)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=tdi(uri),
            range=types.Range(start=pos(9, 12), end=pos(9, 12)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    wrap = next(a for a in actions if a.title == "Wrap this call in step()")
    new = apply_edit(client, text, wrap.edit.changes[uri])
    assert new.splitlines()[0] == "from letitloop import durable, step"
    assert new.splitlines()[9] == '    return step("fetch", fetch, x)'


async def test_incremental_edit_republishes(client: LanguageClient) -> None:
    uri = await open_doc(client, FLOW)
    line = FLOW.read_text().splitlines()[19]
    start_col = columns(line[: line.index("time.time()")], client.encoding)
    end_col = start_col + len("time.time()")
    waiter = wait_diagnostics(client, uri)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=pos(19, start_col), end=pos(19, end_col)), text="0"
                )
            ],
        )
    )
    await waiter
    assert client.diagnostics[uri] is not None
    assert codes(client, uri) == [(13, "LIL005"), (20, "LIL003"), (21, "LIL006")]


CELL = "%%durable enrich\nimport time\n%matplotlib inline\n\nstarted = time.time()\n"


async def test_notebook_cells(client: LanguageClient) -> None:
    nb_uri = (WORK / "analysis.ipynb").as_uri()
    cell_uri = f"{nb_uri}#cell1"
    plain_uri = f"{nb_uri}#cell2"
    waiter = wait_diagnostics(client, cell_uri, plain_uri)
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=nb_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[
                    types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell_uri),
                    types.NotebookCell(kind=types.NotebookCellKind.Code, document=plain_uri),
                ],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=cell_uri, language_id="python", version=1, text=CELL),
                types.TextDocumentItem(
                    uri=plain_uri,
                    language_id="python",
                    version=1,
                    text="import time\ntime.time()\n",
                ),
            ],
        )
    )
    await waiter
    assert codes(client, cell_uri) == [(4, "LIL001")]
    assert len(client.diagnostics[plain_uri]) == 0  # a cell that is not %%durable
    diag = client.diagnostics[cell_uri][0]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=tdi(cell_uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        )
    )
    fix = next(a for a in actions if a.kind == types.CodeActionKind.QuickFix)
    new = apply_edit(client, CELL, fix.edit.changes[cell_uri])
    assert new.splitlines()[0] == "%%durable enrich"  # the magic line is kept as it was
    assert new.splitlines()[1:4] == [
        "import time",
        "from letitloop import step",
        "%matplotlib inline",
    ]
    assert new.splitlines()[-1] == 'started = step("now", time.time)'


async def test_notebook_cell_edit_republishes(client: LanguageClient) -> None:
    nb_uri = (WORK / "edited.ipynb").as_uri()
    cell_uri = f"{nb_uri}#cell1"
    waiter = wait_diagnostics(client, cell_uri)
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=nb_uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell_uri)],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=cell_uri, language_id="python", version=1, text=CELL)
            ],
        )
    )
    await waiter
    assert codes(client, cell_uri) == [(4, "LIL001")]
    waiter = wait_diagnostics(client, cell_uri)
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=nb_uri),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=cell_uri, version=2),
                            changes=[
                                types.TextDocumentContentChangeWholeDocument(
                                    text=CELL.replace("time.time()", "0")
                                )
                            ],
                        )
                    ]
                )
            ),
        )
    )
    await waiter
    assert codes(client, cell_uri) == []
