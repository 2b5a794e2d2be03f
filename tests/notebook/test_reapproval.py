"""Point 2 of the first hour, in a real IPython kernel: after an edited ``%%durable`` cell asks
its approval again, the new request can be decided with the widget and with ``lil``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from letitloop import open_journal
from tests.helpers import run_lil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CELL = (
    "%%durable post --run-id reap\n"
    "draft = step('draft', str, {text!r})\n"
    "decision = approval('publish', {{'text': draft}})\n"
    "decision.approved\n"
)


def run(kc: Any, code: str) -> str:
    """Execute code in the kernel; everything it printed or displayed, as text."""
    texts: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "stream":
            texts.append(content["text"])
        elif msg["msg_type"] in ("execute_result", "display_data"):
            texts.append(content["data"].get("text/plain", ""))
        elif msg["msg_type"] == "error":
            texts.append("\n".join(content["traceback"]))

    reply = kc.execute_interactive(code, output_hook=hook, timeout=120)
    assert reply["content"]["status"] in ("ok", "error")
    return "".join(texts)


@pytest.fixture
def kc(monkeypatch: pytest.MonkeyPatch, journal_path: Path, tmp_path: Path) -> Any:
    monkeypatch.setenv("LIL_JOURNAL", str(journal_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(HERE)]))
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        run(client, "%load_ext letitloop")
        yield client
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)
        km.cleanup_resources()


def pending(journal_path: Path) -> list[Any]:
    return open_journal(journal_path).approvals(status="pending")


def test_an_edited_cell_asks_again_and_the_new_request_can_be_decided(
    kc: Any, journal_path: Path
) -> None:
    run(kc, CELL.format(text="v1"))
    [first] = pending(journal_path)
    clicked = run(kc, "w = _\nw.approve.click()\nprint(w.status.value)")
    assert "approved" in clicked and "already" not in clicked
    assert "True" in run(kc, CELL.format(text="v1"))  # replays the decision

    run(kc, CELL.format(text="v2"))  # an earlier step changed: the approval is asked again
    [second] = pending(journal_path)
    assert second.id != first.id and second.payload == {"text": "v2"}
    clicked = run(kc, "w = _\nw.approve.click()\nprint(w.status.value)")
    assert "approved" in clicked and "already" not in clicked, clicked
    assert pending(journal_path) == []
    assert "True" in run(kc, CELL.format(text="v2"))

    run(kc, CELL.format(text="v3"))
    [third] = pending(journal_path)
    cli = run_lil("approvals", "reject", third.id, "--by", "cli", journal=journal_path, timeout=60)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    row = next(r for r in open_journal(journal_path).approvals() if r.id == third.id)
    assert (row.status, row.decided_by) == ("rejected", "cli")
    assert "False" in run(kc, CELL.format(text="v3"))
