"""lil lsp on a PostgreSQL journal: a real pytest-lsp client (VS Code's capabilities) against
``python -m letitloop.lsp --journal postgresql://...``; another process runs a workflow and the
server re-publishes its diagnostics and asks for fresh code lenses within a second, from pushed
events; hovers read the run from the database."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from tests.helpers import ROOT, child_env
from tests.lsp.lsp_helpers import codes, open_doc, pos, start, tdi, wait_diagnostics

FLOWS_SOURCE = (ROOT / "tests" / "lsp" / "lsp_flows.py").read_text()


def _line(needle: str) -> int:
    return next(n for n, line in enumerate(FLOWS_SOURCE.splitlines()) if needle in line)


class _Request:
    param = "visual-studio-code"


async def test_lil_lsp_follows_a_run_in_another_process(pg_dsn: str, tmp_path: Path) -> None:
    flows = tmp_path / "flows.py"
    flows.write_text(FLOWS_SOURCE)
    env = child_env(pg_dsn, LIL_LSP_DEBOUNCE="0.02")
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "letitloop.lsp", "--journal", pg_dsn],
        server_env=env,
    )
    client = await config.start()
    try:
        await start(_Request(), client)
        uri = await open_doc(client, flows)
        compute = _line('step("compute"')
        assert (compute, "LIL101") not in codes(client, uri)

        async def failure_shown() -> None:
            while (compute, "LIL101") not in codes(client, uri):
                await wait_diagnostics(client, uri, timeout=30)

        waiter = asyncio.ensure_future(failure_shown())
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(flows),
            "live",
            "0",
            env=env,
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        printed, err = await asyncio.wait_for(proc.communicate(), 60)
        assert printed.strip() == b"failed", err  # it failed at compute, and that is journaled
        exited = time.monotonic()
        await asyncio.wait_for(waiter, 5)
        assert time.monotonic() - exited < 1.0
        await asyncio.wait_for(client.lens_refreshes.get(), 1.0)  # type: ignore[attr-defined]

        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=tdi(uri))
        )
        titles = [
            lens.command.title
            for lens in lenses
            if lens.command is not None and lens.range.start.line == _line("def live")
        ]
        assert titles[0].startswith("lil: 1 run · last failed"), titles
        hover = await client.text_document_hover_async(
            types.HoverParams(text_document=tdi(uri), position=pos(compute, 14))
        )
        assert hover is not None
        text = hover.contents.value  # type: ignore[union-attr]
        assert "| failed | 1 |" in text and "ZeroDivisionError: division by zero" in text
    finally:
        await client.shutdown_session()
        await client.stop()


assert pytest_lsp  # the plugin provides the event loop handling the client relies on
