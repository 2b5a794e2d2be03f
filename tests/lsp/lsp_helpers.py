"""Shared pieces of the language-server tests: starting ``python -m letitloop.lsp`` under a
real pytest-lsp client, opening documents, and applying a WorkspaceEdit as an editor would."""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from letitloop.lsp._positions import from_encoding

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ["visual-studio-code", "neovim"]
# One journal for a test module's servers (each test uses its own workflow names).
WORK = Path(tempfile.mkdtemp(prefix="lil-lsp-"))
atexit.register(shutil.rmtree, WORK, ignore_errors=True)
JOURNAL = WORK / "journal" / "journal.duckdb"
ENV = {
    **os.environ,
    "PYTHONPATH": str(ROOT),
    "LIL_LSP_DEBOUNCE": "0.02",
    "LIL_JOURNAL": str(JOURNAL),
}
CONFIG = ClientServerConfig(
    server_command=[sys.executable, "-m", "letitloop.lsp", "--journal", str(JOURNAL)],
    server_env=ENV,
)


async def start(request: Any, client: LanguageClient) -> None:
    """Initialise a session with the capabilities of the client named by ``request.param``."""
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=pytest_lsp.client_capabilities(request.param),
            root_uri=WORK.as_uri(),
        )
    )
    client.diagnostics = Published()
    kind = result.capabilities.position_encoding
    client.encoding = str(getattr(kind, "value", kind) or "utf-16")  # type: ignore[attr-defined]
    client.spec = request.param  # type: ignore[attr-defined]
    client.lens_refreshes = asyncio.Queue()  # type: ignore[attr-defined]

    client.applied_edits = []  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit_request(
        ls: LanguageClient, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        ls.applied_edits.append(params)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(ls: LanguageClient, params: None) -> None:
        ls.lens_refreshes.put_nowait(True)  # type: ignore[attr-defined]


def uri_of(path: Path) -> str:
    return path.as_uri()


async def open_doc(client: LanguageClient, path: Path, text: str | None = None) -> str:
    """Open ``path`` (with ``text``, else its contents) and wait for its diagnostics."""
    uri = uri_of(path)
    waiter = wait_diagnostics(client, uri)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id="python",
                version=1,
                text=text if text is not None else path.read_text(),
            )
        )
    )
    await waiter
    return uri


class Published(dict[str, Any]):
    """``client.diagnostics`` that counts each URI's publications and wakes waiters.

    pytest-lsp's ``wait_for_notification`` keeps one future per method, resolved by the next
    notification only: two publications read in one go lose the second. Counting does not."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}
        self.waiters: list[asyncio.Future[None]] = []

    def __setitem__(self, uri: str, value: Any) -> None:
        super().__setitem__(uri, value)
        self.counts[uri] = self.counts.get(uri, 0) + 1
        waiters, self.waiters = self.waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)


def wait_diagnostics(client: LanguageClient, *uris: str, timeout: float = 10) -> asyncio.Task[Any]:
    """A task that ends when each of ``uris`` has been published again after this call."""
    box: Published = client.diagnostics  # type: ignore[assignment]
    marks = {u: box.counts.get(u, 0) for u in uris}

    async def wait() -> None:
        while any(box.counts.get(u, 0) <= marks[u] for u in uris):
            future = asyncio.get_running_loop().create_future()
            box.waiters.append(future)
            await future

    return asyncio.ensure_future(asyncio.wait_for(wait(), timeout))


def edits_of(edit: types.WorkspaceEdit, uri: str) -> list[Any]:
    """The text edits of ``uri`` in a WorkspaceEdit (``changes`` or ``documentChanges``)."""
    if edit.changes:
        return list(edit.changes[uri])
    return [
        e for dc in edit.document_changes or [] if dc.text_document.uri == uri for e in dc.edits
    ]


def codes(client: LanguageClient, uri: str) -> list[tuple[int, str]]:
    return sorted((d.range.start.line, str(d.code)) for d in client.diagnostics.get(uri, ()))


def apply_edit(client: LanguageClient, text: str, edits: Any) -> str:
    """Apply LSP TextEdits to ``text``, converting columns from the negotiated encoding."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos: types.Position) -> int:
        if pos.line >= len(lines):
            return len(text)
        line = lines[pos.line].rstrip("\r\n")
        return starts[pos.line] + from_encoding(line, pos.character, client.encoding)  # type: ignore[attr-defined]

    out = text
    for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        out = out[: offset(e.range.start)] + e.new_text + out[offset(e.range.end) :]
    return out


def tdi(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)
