"""Golden cases: tests/data/splice/<case>/{before.py, new.py, after.py | error.txt, case.json}.

Every file is read as bytes (CRLF and encodings stay exactly as stored; the directory's
.gitattributes keeps git from normalising them) and decoded by its PEP 263 declaration, as
``lil splice`` does. ``after.py`` must match the result byte for byte; ``error.txt`` holds the
expected error class on its first line and message fragments on the others.

case.json: {"op": "replace" | "insert" | "delete" | "wrap_in_step" | "wrap_in_marker" |
"add_durable", plus the operation's arguments: target, after/before/into, choose, protect,
policy, line/col/name, start_line/end_line/name}.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tokenize
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

import letitloop.splice as splice
from letitloop.splice import SpliceResult

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "splice"
CASES = sorted(p.parent.name for p in DATA.glob("*/case.json"))


def decode(data: bytes) -> tuple[str, str]:
    encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
    return data.decode(encoding), encoding


def run_case(case: Path) -> tuple[SpliceResult, str]:
    spec: dict[str, Any] = json.loads((case / "case.json").read_text(encoding="utf-8"))
    before, encoding = decode((case / "before.py").read_bytes())
    new = decode((case / "new.py").read_bytes())[0] if (case / "new.py").exists() else None
    op = spec.pop("op")
    if op == "replace":
        target = spec.pop("target")
        assert new is not None
        return splice.replace(before, target, new, **spec), encoding
    if op == "insert":
        assert new is not None
        return splice.insert(before, new, **spec), encoding
    if op == "delete":
        return splice.delete(before, spec.pop("target"), **spec), encoding
    if op == "wrap_in_step":
        return splice.wrap_in_step(before, **spec), encoding
    if op == "wrap_in_marker":
        return splice.wrap_in_marker(before, **spec), encoding
    if op == "add_durable":
        return splice.add_durable(before, **spec), encoding
    raise AssertionError(f"unknown op {op!r} in {case}")


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 25
    assert (DATA / ".gitattributes").read_bytes() == b"* -text\n"


def test_ruff_never_touches_the_fixtures() -> None:
    """``ruff format`` over the repository once rewrote these files; the ruff.toml next to
    them excludes them when ruff walks directories (as ``make lint`` does)."""
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed next to this interpreter")
    for args in (["format", "--check"], ["check"]):
        out = subprocess.run(
            [str(ruff), *args, str(DATA.parent)], capture_output=True, text=True, cwd=ROOT
        )
        assert "splice" not in out.stdout + out.stderr, out.stdout


@pytest.mark.parametrize("name", CASES)
def test_golden_case(name: str) -> None:
    case = DATA / name
    error_file = case / "error.txt"
    if error_file.exists():
        kind, *fragments = error_file.read_text(encoding="utf-8").splitlines()
        with pytest.raises(splice.SpliceError) as info:
            run_case(case)
        assert type(info.value).__name__ == kind, info.value
        for fragment in fragments:
            assert fragment in str(info.value), f"{fragment!r} not in:\n{info.value}"
        assert info.value.fix, "every splice error says how to fix it"
        return
    result, encoding = run_case(case)
    expected = (case / "after.py").read_bytes()
    assert result.source.encode(encoding) == expected, result.diff
    assert result.original.encode(encoding) == (case / "before.py").read_bytes()
    assert result.diff == ("" if result.unchanged else result.diff_for("source.py"))
    assert result.changed or result.kind == "insert"


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("replace_")])
def test_replacing_with_the_result_is_idempotent(name: str) -> None:
    """Applying the same replacement to the output changes nothing more."""
    case = DATA / name
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    after, _ = decode((case / "after.py").read_bytes())
    new = decode((case / "new.py").read_bytes())[0]
    spec.pop("op")
    target = spec.pop("target")
    defined = re.search(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", new, re.M)
    assert defined and target.split(".")[-1] == defined.group(1)
    again = splice.replace(after, target, new, **spec)
    assert again.source == after
