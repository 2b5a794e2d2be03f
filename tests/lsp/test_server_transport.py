"""The server's command line: ``python -m letitloop.lsp --help`` (the same command as
``lil lsp``) and ``--tcp``, where an LSP client connects over a socket."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from tests.helpers import free_port
from tests.lsp.lsp_helpers import ENV, WORK


def test_help_names_the_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "letitloop.lsp", "--help"],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "Start the language server for editors (stdio, or --tcp)." in out
    assert "--tcp" in out and "--port" in out and "--journal" in out


async def test_tcp_diagnostics_and_hover_without_creating_a_journal() -> None:
    """Over TCP, with a journal that does not exist yet: the analysis works, hovers say no run
    happened, and opening the editor created no journal (nor started an owner)."""
    port = free_port()
    journal = WORK / "never" / "journal.duckdb"
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "letitloop.lsp",
        "--journal",
        str(journal),
        "--tcp",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        env=ENV,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert server.stderr is not None
    try:
        line = b""
        while b"Serving on" not in line:  # logged once the socket listens
            line = await asyncio.wait_for(server.stderr.readline(), 60)
            assert line, "the server exited before listening"
        client = LanguageClient("tcp-test", "1")
        published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
            published.put_nowait(params)

        await client.start_tcp("127.0.0.1", port)
        await client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=WORK.as_uri())
        )
        client.initialized(types.InitializedParams())
        uri = (WORK / "tcp.py").as_uri()
        text = "import random\nfrom letitloop import durable\n\n\n@durable\ndef f():\n"
        text += "    return random.random()\n"
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=text
                )
            )
        )
        params = await asyncio.wait_for(published.get(), 30)
        assert [(d.code, d.range.start.line) for d in params.diagnostics] == [("LIL001", 6)]
        hover = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=5, character=4),
            )
        )
        assert hover is not None and "durable `f`" in hover.contents.value
        assert "No run of this workflow" in hover.contents.value
        assert not journal.parent.exists()
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    finally:
        if server.returncode is None:
            server.kill()
        await server.wait()
