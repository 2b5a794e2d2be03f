"""The VS Code extension's client code (editors/vscode/out/server.js, compiled from src/) drives
the real ``lil lsp`` with its own Node test runner: an LIL001 diagnostic arrives, the runs tree
lists a waiting run, and approving from the tree unblocks the waiting script. (VS Code itself
is not run here: see docs/vscode.md.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.jupyter.conftest import start_workflow

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "editors" / "vscode"
CLOCK = (
    "import time\n"
    "from letitloop import durable\n\n\n"
    "@durable\n"
    "def clocked():\n"
    "    return time.time()\n"
)


def test_extension_client_against_the_real_language_server(
    journal_path: Path, tmp_path: Path
) -> None:
    assert shutil.which("node"), "node is needed: make test installs the extension's packages"
    assert (EXT / "node_modules" / "vscode-jsonrpc").is_dir(), "run `make vscode`"
    subprocess.run([str(EXT / "node_modules" / ".bin" / "tsc"), "-p", str(EXT)], check=True)
    (tmp_path / "clock.py").write_text(CLOCK)
    out = tmp_path / "published.json"
    proc = start_workflow(journal_path, "publish", str(out))
    try:
        env = {
            "PATH": "/usr/bin:/bin",
            "LIL_PYTHON": sys.executable,
            "LIL_JOURNAL": str(journal_path),
            "LIL_WORKSPACE": str(tmp_path),
            "PYTHONPATH": str(ROOT),
        }
        run = subprocess.run(
            ["node", str(EXT / "test" / "client.test.js")],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        report = json.loads(run.stdout.strip().splitlines()[-1])
        assert proc.wait(60) == 0
    finally:
        proc.kill()
        proc.wait()
    assert report["diagnostic"]["code"] == "LIL001" and report["diagnostic"]["line"] == 6
    assert "time.time() gives a different value on replay" in report["diagnostic"]["message"]
    assert ["blog.publish:post-1", "suspended"] in report["runs"] or [
        "blog.publish:post-1",
        "running",
    ] in report["runs"]
    # the tree's line writes the server's numbers (operate's shown): steps done/known, money
    (line,) = [d for (run_id, _), d in zip(report["runs"], report["described"], strict=True)
               if run_id == "blog.publish:post-1"]  # fmt: skip
    assert re.fullmatch(r"(suspended|running) · \d+/\d+ steps( · at .+)? · \$0", line), line
    assert report["approval"]["name"] == "publish" and report["decided"] == "approved"
    assert report["pending_after"] == 0
    assert json.loads(out.read_text())["approved"] is True


def test_extension_packages_into_a_vsix_with_its_client(tmp_path: Path) -> None:
    vsix = tmp_path / "letitloop.vsix"
    subprocess.run([str(EXT / "node_modules" / ".bin" / "tsc"), "-p", str(EXT)], check=True)
    subprocess.run(
        [
            str(EXT / "node_modules" / ".bin" / "vsce"),
            "package",
            "--allow-missing-repository",
            "-o",
            str(vsix),
        ],
        cwd=EXT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/package.json"))
    assert {"extension/out/extension.js", "extension/out/server.js"} <= names
    assert "extension/node_modules/vscode-languageclient/node.js" in names
    assert not [n for n in names if n.startswith(("extension/src/", "extension/test/"))]
    assert manifest["contributes"]["views"]["letitloop"][0]["id"] == "letitloopRuns"
    assert "letitloop.interpreter" in manifest["contributes"]["configuration"]["properties"]
