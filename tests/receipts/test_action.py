"""The composite Action, run step by step as GitHub would, against throwaway repositories with a
base and a head commit: strict mode fails on a protected signature change, and a forged receipt
committed on head is never read (the Action signs and verifies its own, outside the checkout).

``action.yml`` is parsed; every ``run:`` step is executed in order with ``bash --noprofile
--norc -eo pipefail`` (GitHub's bash), with its ``env:`` expressions (``inputs.*``,
``steps.*.outputs.*``, ``github.*``, ``a || b``) evaluated, ``GITHUB_OUTPUT``, ``RUNNER_TEMP``
and ``GITHUB_WORKSPACE`` set, and the install step skipped through its ``install`` input (the
letitloop under test is already installed). ``uses:`` steps (the artifact upload) are recorded,
not run; after a failing step only ``always()`` steps are considered, as on GitHub.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from letitloop.receipts import Receipt, run
from letitloop.receipts._canonical import field_digests
from tests.receipts.conftest import BILLING, KEY, OTHER_KEY, commit, git

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
CHARGE = "src/billing.py::charge"
VERIFY_STEP = "Verify the receipt and protected signatures"

TESTS = """\
import sys

sys.path.insert(0, "src")
from billing import charge


def test_charge_positive():
    assert charge(5)


def test_charge_zero():
    assert not charge(0)
"""


def lookup(path: str, context: dict[str, Any]) -> Any:
    value: Any = context
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part, "")
    return value


def evaluate(expression: str, context: dict[str, Any]) -> str:
    """The expressions the Action uses: context paths, and ``a || b`` (first non-empty)."""
    for term in expression.split("||"):
        value = lookup(term.strip(), context)
        if value:
            return str(value)
    return ""


def substitute(text: str, context: dict[str, Any]) -> str:
    return EXPR.sub(lambda m: evaluate(m.group(1), context), str(text))


@dataclass
class ActionRun:
    failed_step: str | None = None
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    skipped_uses: list[dict[str, Any]] = field(default_factory=list)

    @property
    def log(self) -> str:
        return "\n".join(self.logs.values())

    @property
    def receipt_path(self) -> Path:
        return Path(self.outputs["run"]["receipt"])


def run_action(workspace: Path, runner_temp: Path, inputs: dict[str, str]) -> ActionRun:
    """Run the Action's steps as GitHub would for a pull request, stopping at a failing one."""
    base = git(workspace, "rev-parse", "HEAD~1")
    head = git(workspace, "rev-parse", "HEAD")
    github = {
        "sha": head,
        "event": {"pull_request": {"base": {"sha": base}, "head": {"sha": head}}},
    }
    context: dict[str, Any] = {"github": github, "steps": {}, "runner": {"temp": str(runner_temp)}}
    resolved = {}
    for name, spec in ACTION["inputs"].items():
        if name in inputs:
            resolved[name] = inputs[name]
        else:
            assert not spec.get("required"), f"required input {name} not given"
            resolved[name] = substitute(spec.get("default", ""), context)
    context["inputs"] = resolved
    base_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LIL_", "PYTEST_", "GITHUB_"))
    }
    base_env.update(
        {
            "RUNNER_TEMP": str(runner_temp),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_SHA": head,
            "GITHUB_EVENT_NAME": "pull_request",
            "CI": "true",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",  # a bare pytest: quick to start
        }
    )
    result = ActionRun()
    for n, step in enumerate(ACTION["runs"]["steps"]):
        name = step.get("name", f"step {n}")
        if result.failed_step is not None and "always()" not in str(step.get("if", "")):
            continue  # after a failure GitHub runs only the steps marked always()
        if "uses" in step:
            result.skipped_uses.append(
                {**step, "with": {k: substitute(v, context) for k, v in step["with"].items()}}
            )
            continue
        assert step["shell"] == "bash" and "if" not in step, name
        output_file = runner_temp / f"output-{n}"
        output_file.write_text("")
        env = {**base_env, "GITHUB_OUTPUT": str(output_file)}
        env.update({k: substitute(v, context) for k, v in step.get("env", {}).items()})
        script = runner_temp / f"step-{n}.sh"
        script.write_text(step["run"])
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        result.logs[name] = done.stdout + done.stderr
        outputs = dict(
            line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line
        )
        if "id" in step:
            result.outputs[step["id"]] = outputs
            context["steps"][step["id"]] = {"outputs": outputs}
        if done.returncode != 0:
            result.failed_step = name
    return result


def inputs(**overrides: str) -> dict[str, str]:
    values = {
        "test-command": f'"{sys.executable}" -m pytest -q -p no:cacheprovider test_billing.py',
        "protect": CHARGE,
        "strict-signatures": "true",
        "receipt-key": KEY,
        "install": "false",
        "python": sys.executable,
    }
    values.update(overrides)
    return values


@pytest.fixture
def pr(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The repository with a tests file on the base commit, and the runner's temp directory."""
    commit(repo, "tests", {"test_billing.py": TESTS})
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    return repo, temp


def test_strict_mode_fails_when_head_changes_a_protected_signature(pr: tuple[Path, Path]) -> None:
    repo, temp = pr
    changed = BILLING.replace('currency: str = "EUR"', 'currency: str = "USD"')
    commit(repo, "change a default", {"src/billing.py": changed})

    strict = run_action(repo, temp, inputs())
    assert strict.failed_step == VERIFY_STEP, strict.log
    verify_log = strict.logs[VERIFY_STEP]
    assert "receipt verified" in verify_log  # the tests passed and the receipt is sound...
    assert f"FAIL {CHARGE}: changed" in verify_log  # ...but the signature changed
    assert "parameter 'currency' default 'EUR' -> 'USD'" in verify_log
    assert strict.outputs["run"]["exit-code"] == "0"

    relaxed = run_action(repo, temp, inputs(**{"strict-signatures": "false"}))
    assert relaxed.failed_step is None, relaxed.log
    tests = Receipt.load(relaxed.receipt_path).tests
    assert tests is not None and (tests["passed"], tests["failed"]) == (2, 0)


def test_strict_mode_passes_a_new_optional_parameter_under_additive(pr: tuple[Path, Path]) -> None:
    repo, temp = pr
    text = BILLING.replace("retries: int = 3)", "retries: int = 3, note: str = '')")
    commit(repo, "optional parameter", {"src/billing.py": text})
    additive = run_action(repo, temp, inputs(**{"signature-policy": "additive"}))
    assert additive.failed_step is None, additive.log
    assert f"ok   {CHARGE}: allowed" in additive.logs[VERIFY_STEP]
    exact = run_action(repo, temp, inputs())
    assert exact.failed_step == VERIFY_STEP


def test_a_forged_receipt_committed_on_head_is_ignored(pr: tuple[Path, Path]) -> None:
    repo, temp = pr
    # A genuine-looking receipt of a passing run, re-signed with a key the attacker has, and
    # the other tool's kind (a bare SHA-256), both committed on head with code that fails.
    genuine = run(
        [sys.executable, "-c", "pass"], cwd=repo, key=OTHER_KEY, protect=[CHARGE], stream=False
    )
    forged = copy.deepcopy(genuine.envelope)
    forged["payload"]["tests"] = {"total": 2, "passed": 2, "failed": 0, "errors": 0}
    forged["fields"] = field_digests(forged["payload"])
    bare = {**forged, "signatures": [{"alg": "sha256", "key_id": None, "sig": "0" * 64}]}
    forged_files = {
        "receipt.json": json.dumps(forged),
        "letitloop-receipt.json": json.dumps(bare),
        "src/billing.py": BILLING.replace("amount > 0", "amount < 0"),
    }
    commit(repo, "break it, and claim it passed", forged_files)

    result = run_action(repo, temp, inputs(**{"strict-signatures": "false"}))
    assert result.failed_step == VERIFY_STEP, result.log
    assert "FAIL exit_code" in result.logs[VERIFY_STEP]
    assert "FAIL tests" in result.logs[VERIFY_STEP]
    # the Action's own receipt lives outside the checkout and records the real failure
    receipt = result.receipt_path
    assert receipt.is_relative_to(temp) and not receipt.is_relative_to(repo)
    ours = Receipt.load(receipt)
    assert ours.exit_code == 1 and ours.tests is not None and ours.tests["failed"] == 1
    assert ours.commit == git(repo, "rev-parse", "HEAD")
    # the committed forgeries were neither read nor rewritten
    for name, text in forged_files.items():
        assert (repo / name).read_text() == text
    # and the artifact uploaded is the Action's receipt
    (upload,) = result.skipped_uses
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == str(receipt)


def test_the_action_never_reads_a_receipt_from_the_checkout() -> None:
    scripts = "\n".join(s.get("run", "") for s in ACTION["runs"]["steps"])
    assert "RUNNER_TEMP" in scripts
    assert 'verify "$LIL_RECEIPT"' in scripts
    verify_env = next(s for s in ACTION["runs"]["steps"] if s.get("name") == VERIFY_STEP)["env"]
    assert verify_env["LIL_RECEIPT"] == "${{ steps.run.outputs.receipt }}"
    # letitloop itself comes from the package index, never from the pull request's tree
    assert ACTION["inputs"]["letitloop-spec"]["default"] == "letitloop[receipts]"
    assert set(ACTION["inputs"]) >= {"test-command", "protect", "strict-signatures"}
