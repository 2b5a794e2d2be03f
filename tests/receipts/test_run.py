"""``run`` records what really happened: exit code, output digests, JUnit counts, git state;
a failing test run gives a receipt that ``verify`` rejects unless failures are allowed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from letitloop.receipts import Receipt, ReceiptError, run, verify
from letitloop.receipts._junit import mentions_pytest, parse_junit, pytest_junit_arg
from tests.receipts.conftest import BILLING, CHECK, KEY, PY, commit, git

SUITE = """\
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_one():
    assert 1


def test_two():
    assert 2


def test_fails():
    assert 1 == 2


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


def test_errors(broken):
    pass
"""


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Receipt]:
    """A receipt of a real pytest run with 2 passed, 1 failed, 1 skipped, 1 error."""
    root = tmp_path_factory.mktemp("failing") / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "base", {"src/billing.py": BILLING, "test_suite.py": SUITE})
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # a bare pytest starts in a fraction of the time
    command = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_suite.py"]
    receipt = run(command, cwd=root, key=KEY, env=env, stream=False)
    return root, receipt


def test_failing_pytest_run_counts_from_junit(failing: tuple[Path, Receipt]) -> None:
    _, receipt = failing
    assert receipt.exit_code == 1
    tests = receipt.tests
    assert tests is not None and tests["source"] == "junit"
    counts = {k: tests[k] for k in ("total", "passed", "failed", "errors", "skipped")}
    assert counts == {"total": 5, "passed": 2, "failed": 1, "errors": 1, "skipped": 1}


def test_verify_rejects_failures_unless_allowed(failing: tuple[Path, Receipt]) -> None:
    root, receipt = failing
    result = verify(receipt, key=KEY, cwd=root)
    assert result.failed_names == ["exit_code", "tests"]
    assert result.check("exit_code").found == 1  # type: ignore[union-attr]
    assert result.check("tests").found == {"failed": 1, "errors": 1}  # type: ignore[union-attr]
    allowed = verify(receipt, key=KEY, cwd=root, allow_failures=True)
    assert allowed.ok, allowed.render()
    assert "failures allowed" in allowed.check("tests").detail  # type: ignore[union-attr]


def test_rerun_runs_the_command_again_and_compares(
    failing: tuple[Path, Receipt], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, receipt = failing
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = verify(receipt, key=KEY, cwd=root, allow_failures=True, rerun=True)
    assert result.ok, result.render()
    assert result.check("rerun.tests").found["failed"] == 1  # type: ignore[union-attr, index]


def test_rerun_catches_a_different_outcome(repo: Path) -> None:
    receipt = run([PY, "check.py"], cwd=repo, key=KEY, stream=False)
    (repo / "src/billing.py").write_text(BILLING.replace("amount > 0", "amount < 0"))
    result = verify(receipt, key=KEY, cwd=repo, rerun=True)
    assert result.failed_names == ["rerun.exit_code"]
    assert (result.check("rerun.exit_code").expected, result.check("rerun.exit_code").found) == (  # type: ignore[union-attr]
        0,
        1,
    )


def test_output_streams_through_and_is_hashed(
    repo: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = "import sys; print('to stdout'); print('to stderr', file=sys.stderr); sys.exit(3)"
    receipt = run([PY, "-c", code], cwd=repo, key=KEY)
    captured = capfd.readouterr()
    assert captured.out == "to stdout\n" and captured.err == "to stderr\n"
    assert receipt.exit_code == 3
    assert receipt.payload["output"]["stdout"]["sha256"] == (
        "sha256:" + hashlib.sha256(b"to stdout\n").hexdigest()
    )
    assert receipt.payload["output"]["stderr"]["bytes"] == len("to stderr\n")


def test_the_command_never_sees_the_signing_keys(
    repo: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code = "import os; print(os.environ.get('LIL_RECEIPT_KEY'), os.environ.get('OTHER'))"
    env = {"LIL_RECEIPT_KEY": KEY, "LIL_RECEIPT_SIGNING_KEY": "", "OTHER": "kept"}
    receipt = run([PY, "-c", code], cwd=repo, env=env)
    assert capfd.readouterr().out == "None kept\n"
    assert verify(receipt, key=KEY, cwd=repo).ok


def test_explicit_junit_file_and_stale_reports(repo: Path) -> None:
    report = (
        '<testsuite tests="3" failures="1" errors="0" skipped="1">'
        '<testcase name="a"/><testcase name="b"><failure/></testcase>'
        '<testcase name="c"><skipped/></testcase></testsuite>'
    )
    write = f"open('report.xml', 'w').write({report!r})"
    receipt = run([PY, "-c", write], cwd=repo, key=KEY, junit="report.xml", stream=False)
    assert receipt.tests is not None
    assert (receipt.tests["passed"], receipt.tests["failed"], receipt.tests["skipped"]) == (1, 1, 1)
    # a report the command did not write this time is not counted
    old = repo / "report.xml"
    os.utime(old, (1, 1))
    stale = run([PY, "-c", "pass"], cwd=repo, key=KEY, junit="report.xml", stream=False)
    assert stale.tests is None


def test_git_facts_see_uncommitted_changes(repo: Path) -> None:
    clean = run([PY, "check.py"], cwd=repo, key=KEY, stream=False)
    assert clean.git is not None and clean.git["dirty"] is False
    (repo / "new.txt").write_text("one")
    first = run([PY, "check.py"], cwd=repo, key=KEY, stream=False).git
    (repo / "new.txt").write_text("two")
    second = run([PY, "check.py"], cwd=repo, key=KEY, stream=False).git
    (repo / "check.py").write_text(CHECK + "\n# edited\n")
    third = run([PY, "check.py"], cwd=repo, key=KEY, stream=False).git
    assert first and second and third
    assert first["dirty"] and first["commit"] == clean.git["commit"]
    digests = {first["diff_sha256"], second["diff_sha256"], third["diff_sha256"]}
    assert len(digests) == 3 and None not in digests


def test_outside_git_the_commit_check_fails(tmp_path: Path) -> None:
    receipt = run([PY, "-c", "pass"], cwd=tmp_path, key=KEY, stream=False)
    assert receipt.git is None
    result = verify(receipt, key=KEY, cwd=tmp_path)
    assert result.failed_names == ["commit"]
    assert result.check("commit").found == "(the receipt records no commit)"  # type: ignore[union-attr]


def test_a_command_that_cannot_start_is_an_error(repo: Path) -> None:
    with pytest.raises(ReceiptError, match="cannot run no-such-command-xyz"):
        run(["no-such-command-xyz"], cwd=repo, key=KEY)
    with pytest.raises(ReceiptError, match="no command"):
        run([], cwd=repo, key=KEY)


def test_parse_junit_variants() -> None:
    pytest_style = (
        '<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="4">'
        '<testcase name="a"/><testcase name="b"><failure message="x"/><error/></testcase>'
        '<testcase name="c"><error/></testcase><testcase name="d"><skipped/></testcase>'
        "</testsuite></testsuites>"
    )
    assert parse_junit(pytest_style) == {
        "total": 4,
        "passed": 1,
        "failed": 1,
        "errors": 1,
        "skipped": 1,
    }
    attrs_only = (
        '<testsuites><testsuite tests="10" failures="2" errors="1" skipped="3"/>'
        '<testsuite tests="5" failures="0" errors="0" skipped="0"/></testsuites>'
    )
    assert parse_junit(attrs_only) == {
        "total": 15,
        "passed": 9,
        "failed": 2,
        "errors": 1,
        "skipped": 3,
    }
    with pytest.raises(ReceiptError, match="cannot be parsed"):
        parse_junit("<testsuite><testcase>")


def test_pytest_detection() -> None:
    assert mentions_pytest(["python", "-m", "pytest", "-q"])
    assert mentions_pytest(["bash", "-c", "make && pytest -x"])
    assert not mentions_pytest(["python", "check.py"])
    assert pytest_junit_arg(["pytest", "--junitxml=out.xml"]) == "out.xml"
    assert pytest_junit_arg(["pytest", "--junit-xml", "o.xml"]) == "o.xml"
    assert pytest_junit_arg(["pytest"]) is None


def test_an_unreadable_report_is_recorded_and_rejected(repo: Path) -> None:
    write = "open('report.xml', 'w').write('<testsuite><testcase')"
    receipt = run([PY, "-c", write], cwd=repo, key=KEY, junit="report.xml", stream=False)
    assert receipt.exit_code == 0
    assert receipt.tests is not None and "cannot be parsed" in receipt.tests["error"]
    result = verify(receipt, key=KEY, cwd=repo)
    assert result.failed_names == ["tests"]
    assert verify(receipt, key=KEY, cwd=repo, allow_failures=True).ok


def test_importing_receipts_loads_nothing_heavy() -> None:
    from tests.conftest import modules_after

    loaded = modules_after("import letitloop.receipts\nimport letitloop.cli._receipt")
    assert not {"libcst", "cryptography", "letitloop.receipts._run"} & loaded
