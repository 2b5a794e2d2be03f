"""The approval widget in a real JupyterLab, clicked in headless Chromium (Debian's) through
Playwright: the click decides the approval and the run continues in the same kernel."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from letitloop import open_journal

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROME_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CELL = (
    "%%durable publish --run-id web\n"
    "draft = step('draft', lambda: {'title': 'Hello from the lab'})\n"
    "decision = approval('publish', draft)\n"
    "if decision.approved:\n"
    "    step('publish', lambda: print('PUBLISHED:', decision.payload['title']))\n"
)
SCREENSHOTS = Path(os.environ.get("LIL_TEST_ARTIFACTS", ROOT / "test-artifacts"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def lab(tmp_path: Path, journal_path: Path) -> Iterator[dict[str, Any]]:
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: make test installs it"
    root = tmp_path / "lab"
    settings = root / ".cfg" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    startup = root / ".ipython" / "profile_default"
    startup.mkdir(parents=True)  # the kernel loads the extension, as a user's config would
    (startup / "ipython_kernel_config.py").write_text("c.IPKernelApp.extensions = ['letitloop']\n")
    token, port = secrets.token_hex(16), _free_port()
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(root / ".cfg"),
        JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
        JUPYTERLAB_WORKSPACES_DIR=str(root / ".workspaces"),
        IPYTHONDIR=str(root / ".ipython"),
        PYTHONPATH=str(ROOT),
        LIL_JOURNAL=str(journal_path),
    )
    log = open(root / "lab.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.open_browser=False",
            "--LabApp.news_url=None",
            "--allow-root",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (
                    root / "lab.log"
                ).read_text()
                time.sleep(0.25)
        yield {"base": base, "token": token, "root": root}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _wait_kernel_idle(lab: dict[str, Any], path: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        url = f"{lab['base']}/api/sessions?token={lab['token']}"
        with urllib.request.urlopen(url, timeout=5) as r:
            for sess in json.load(r):
                if sess.get("path") == path and sess["kernel"].get("execution_state") == "idle":
                    return
        time.sleep(0.25)
    raise TimeoutError(f"no idle kernel for {path}")


def test_click_approve_continues_the_run(lab: dict[str, Any], journal_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    nb = new_notebook(
        cells=[new_code_cell(CELL)],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(nb, lab["root"] / "publish.ipynb")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1100, "height": 700})
        page.goto(f"{lab['base']}/lab/tree/publish.ipynb?token={lab['token']}")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        _wait_kernel_idle(lab, "publish.ipynb")
        expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=90_000)
        approve = page.locator(".lil-approval button", has_text="Approve")
        for attempt in range(3):  # a Shift+Enter sent before the kernel is connected is dropped
            page.locator(".jp-Notebook .jp-Cell .cm-content").first.click()
            page.keyboard.press("Shift+Enter")
            try:
                expect(approve).to_be_visible(timeout=30_000)
                break
            except AssertionError:
                if attempt == 2:
                    raise
        journal = open_journal(journal_path)
        run_id = journal.find_run("cell.publish:web")
        assert journal.get_run(run_id).run.status == "suspended"
        page.locator(".lil-approval input[placeholder='comment (optional)']").fill("ship it")
        page.screenshot(path=str(SCREENSHOTS / "notebook-approval-pending.png"))
        approve.click()
        expect(page.locator(".lil-approval")).to_contain_text("approved by", timeout=30_000)
        expect(page.locator(".lil-approval")).to_contain_text(
            "PUBLISHED: Hello from the lab", timeout=30_000
        )
        expect(approve).to_be_disabled()
        page.screenshot(path=str(SCREENSHOTS / "notebook-approval-done.png"))
        browser.close()
    info = journal.get_run(run_id).run
    assert info.status == "completed" and info.steps_done == 3
    row = journal.approvals(run_id=run_id)[0]
    assert row.status == "approved" and row.comment == "ship it"
