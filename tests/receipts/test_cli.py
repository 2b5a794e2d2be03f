"""``lil receipt run|verify|signatures`` through click's CliRunner on the group, plus
``python -m letitloop.receipts`` (the form the Action uses)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result

from letitloop.cli._receipt import receipt
from tests.helpers import clean_failure, invoke_lil
from tests.receipts.conftest import BILLING, KEY, PY, commit

CHARGE = "src/billing.py::charge"


def lil_receipt(*args: str, key: str | None = KEY) -> Result:
    """``lil receipt ARGS`` in this process, with ``key`` as LIL_RECEIPT_KEY."""
    return invoke_lil("receipt", *args, env={"LIL_RECEIPT_KEY": key} if key else {})


@pytest.fixture
def in_repo(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(repo)
    return repo


def test_group_help_line() -> None:
    assert receipt.help is not None
    assert receipt.help.splitlines()[0] == "Sign what really ran in CI, and verify it."
    assert sorted(receipt.commands) == ["run", "signatures", "verify"]


def test_run_then_verify(in_repo: Path) -> None:
    result = lil_receipt("run", "--protect", CHARGE, "--", PY, "check.py")
    assert result.exit_code == 0, result.output
    assert "charge(5) -> True" in result.stdout  # the command's output streams through
    assert result.stderr.startswith("receipt: receipt.json (exit 0;")
    assert "1 protected" in result.stderr
    data = json.loads((in_repo / "receipt.json").read_text())
    assert data["payload"]["protected"][CHARGE]["signature"]["name"] == "charge"
    verified = lil_receipt("verify", "receipt.json")
    assert verified.exit_code == 0, verified.output
    assert verified.stdout.startswith("receipt verified\n")
    assert f"ok   protected:{CHARGE}: unchanged" in verified.stdout


def test_run_exits_with_the_commands_status(in_repo: Path) -> None:
    failed = lil_receipt("run", "--out", "r1.json", "--", PY, "-c", "raise SystemExit(4)")
    assert failed.exit_code == 4 and "(exit 4;" in failed.stderr
    killed = lil_receipt(
        "run", "--out", "r2.json", "--", PY, "-c", "import os; os.kill(os.getpid(), 15)"
    )
    assert killed.exit_code == 143
    assert json.loads((in_repo / "r2.json").read_text())["payload"]["exit_code"] == -15


def test_verify_names_each_failure_with_expected_and_found(in_repo: Path) -> None:
    assert lil_receipt("run", "--", PY, "-c", "raise SystemExit(2)").exit_code == 2
    rejected = lil_receipt("verify", "receipt.json")
    assert rejected.exit_code == 1
    assert rejected.stdout.splitlines()[0] == "receipt REJECTED: 1 failed"
    assert "FAIL exit_code: the command failed\n       expected: 0\n       found:    2" in (
        rejected.stdout
    )
    as_json = lil_receipt("verify", "receipt.json", "--json")
    data = json.loads(as_json.stdout)
    assert as_json.exit_code == 1 and data["ok"] is False and data["failed"] == ["exit_code"]
    assert lil_receipt("verify", "receipt.json", "--allow-failures").exit_code == 0
    wrong = lil_receipt("verify", "receipt.json", key="a-wrong-receipt-key-0123456789")
    assert wrong.exit_code == 1 and "FAIL signature" in wrong.stdout


def test_verify_with_key_file_and_other_commit(in_repo: Path, tmp_path: Path) -> None:
    assert lil_receipt("run", "--", PY, "check.py").exit_code == 0
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    base = commit(in_repo, "empty")
    result = lil_receipt("verify", "receipt.json", "--key-file", str(key_file), key=None)
    assert result.exit_code == 1 and "FAIL commit" in result.stdout
    assert f"expected: {base}" in result.stdout
    assert lil_receipt("verify", "receipt.json", "--commit", "HEAD~1").exit_code == 0


def test_signatures_command(in_repo: Path) -> None:
    text = BILLING.replace('currency: str = "EUR"', 'currency: str = "EUR", note: str = ""')
    commit(in_repo, "add note", {"src/billing.py": text})
    exact = lil_receipt("signatures", "--base", "HEAD~1", "--protect", CHARGE)
    assert exact.exit_code == 1
    assert f"FAIL {CHARGE}: changed" in exact.stdout
    assert "- parameter 'note' added" in exact.stdout
    additive = lil_receipt(
        "signatures", "--base", "HEAD~1", "--protect", CHARGE, "--policy", "additive", "--json"
    )
    assert additive.exit_code == 0, additive.output
    data = json.loads(additive.stdout)
    assert data["ok"] is True and data["changes"][0]["status"] == "allowed"


def test_errors_are_clean(in_repo: Path) -> None:
    clean_failure(lil_receipt("run", "--", PY, "check.py", key=None), "no key to sign")
    clean_failure(lil_receipt("verify", "missing.json"), "cannot read the receipt")
    clean_failure(
        lil_receipt("run", "--protect", "src/billing.py::nope", "--", PY, "check.py"),
        "protected src/billing.py::nope",
    )
    clean_failure(lil_receipt("signatures", "--base", "nope", "--protect", CHARGE), "not a commit")
    usage = lil_receipt("run")
    assert usage.exit_code == 2 and "Missing argument" in usage.output


def test_python_dash_m_form(repo: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "letitloop.receipts", "verify", "nope.json"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={"LIL_RECEIPT_KEY": KEY, "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 1
    assert out.stderr.startswith("error: cannot read the receipt 'nope.json'")


def test_registered_under_lil_with_the_commands_line(
    in_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from letitloop.cli import lil

    line = ("letitloop.cli._receipt", "receipt", "Sign what really ran in CI, and verify it.")
    monkeypatch.setitem(lil.lazy, "receipt", line)  # what the lead adds to COMMANDS
    monkeypatch.delitem(lil.commands, "receipt", raising=False)
    top = invoke_lil("--help")
    assert re.search(r"\n  receipt +Sign what really ran in CI, and verify it\.\n", top.stdout)
    env = {"LIL_RECEIPT_KEY": KEY}
    ran = invoke_lil("receipt", "run", PY, "check.py", env=env)  # no `--` needed
    assert ran.exit_code == 0, ran.output
    assert invoke_lil("receipt", "verify", "receipt.json", env=env).exit_code == 0
    missing = invoke_lil("receipt", "verify", "nope.json", env=env)
    assert missing.exit_code == 1 and missing.stderr.startswith("error: cannot read the receipt")
