"""Test counts from a JUnit XML report (pytest's ``--junitxml``, or any tool that writes one).

Counted per ``<testcase>``: one with a ``<failure>`` failed, with an ``<error>`` errored (a
failure wins when both are present, e.g. a failing test whose teardown also broke), with
``<skipped>`` was skipped, otherwise it passed. A report with suites but no testcase elements
falls back to the suites' ``tests``/``failures``/``errors``/``skipped`` attributes.
"""

from __future__ import annotations

import hashlib
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from letitloop.receipts._errors import ReceiptError

KEYS = ("total", "passed", "failed", "errors", "skipped")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_junit(text: str | bytes) -> dict[str, int]:
    """``{"total", "passed", "failed", "errors", "skipped"}`` of a JUnit XML document."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ReceiptError(
            f"the JUnit XML report cannot be parsed: {exc}",
            fix="check that the test run wrote a complete report (it may have been killed)",
        ) from None
    cases = [el for el in root.iter() if _local(el.tag) == "testcase"]
    counts = dict.fromkeys(KEYS, 0)
    if cases:
        for case in cases:
            kinds = {_local(child.tag) for child in case}
            if "failure" in kinds:
                counts["failed"] += 1
            elif "error" in kinds:
                counts["errors"] += 1
            elif "skipped" in kinds:
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
        counts["total"] = len(cases)
        return counts
    suites = [el for el in root.iter() if _local(el.tag) == "testsuite"]
    for suite in suites:
        counts["total"] += _int(suite.get("tests"))
        counts["failed"] += _int(suite.get("failures"))
        counts["errors"] += _int(suite.get("errors"))
        counts["skipped"] += _int(suite.get("skipped") or suite.get("skips"))
    counts["passed"] = max(
        0, counts["total"] - counts["failed"] - counts["errors"] - counts["skipped"]
    )
    return counts


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0


def read_junit(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The counts of the report at ``path`` plus its SHA-256, or None if no report was written."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ReceiptError(
            f"cannot read the JUnit report {os.fspath(path)!r}: {exc.strerror or exc}",
            fix="check the --junit path and its permissions",
        ) from None
    counts: dict[str, Any] = dict(parse_junit(data))
    counts["source"] = "junit"
    counts["report_sha256"] = "sha256:" + hashlib.sha256(data).hexdigest()
    return counts


def pytest_junit_arg(command: list[str]) -> str | None:
    """The file a pytest command line already sends its JUnit report to, if it does."""
    for i, arg in enumerate(command):
        if arg.startswith("--junitxml=") or arg.startswith("--junit-xml="):
            return arg.split("=", 1)[1]
        if arg in ("--junitxml", "--junit-xml") and i + 1 < len(command):
            return command[i + 1]
    return None


def mentions_pytest(command: list[str]) -> bool:
    """Whether the command runs pytest (directly, via ``-m pytest``, or inside a shell line)."""
    return any("pytest" in arg or "py.test" in arg for arg in command)
