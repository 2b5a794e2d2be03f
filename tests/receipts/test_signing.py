"""Receipts sign and verify; every tampered field, wrong key, other commit or unsigned
receipt is rejected with the failing check named."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from letitloop.receipts import (
    Receipt,
    ReceiptFormatError,
    ReceiptKeyError,
    generate_ed25519,
    run,
    verify,
)
from letitloop.receipts._canonical import canonical, field_digests
from letitloop.receipts._keys import HmacKey
from tests.receipts.conftest import BILLING, CHECK, KEY, OTHER_KEY, PY, commit, git

PAYLOAD_FIELDS = [
    "ci",
    "command",
    "cwd",
    "duration_ms",
    "ended_at",
    "environment",
    "exit_code",
    "format",
    "git",
    "output",
    "protected",
    "started_at",
    "tests",
]


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Receipt]:
    """One repository and one receipt of a passing command in it, shared by the module."""
    root = tmp_path_factory.mktemp("signed") / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "base", {"src/billing.py": BILLING, "check.py": CHECK})
    receipt = run(
        [PY, "check.py"],
        cwd=root,
        key=KEY,
        protect=["src/billing.py::charge"],
        out="receipt.json",
        stream=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    return root, receipt


def tamper(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, "forged"]
    if isinstance(value, dict):
        return {**value, "forged": True}
    return {"forged": True}


def test_round_trip_signs_and_verifies(signed: tuple[Path, Receipt]) -> None:
    root, receipt = signed
    assert receipt.exit_code == 0
    assert receipt.key_ids == [HmacKey(KEY.encode()).key_id]
    result = verify(root / "receipt.json", key=KEY, cwd=root)
    assert result.ok, result.render()
    names = [c.name for c in result.checks]
    assert names == [
        "signature",
        "format",
        "commit",
        "protected:src/billing.py::charge",
        "exit_code",
        "tests",
    ]
    assert result.check("commit").found == git(root, "rev-parse", "HEAD")  # type: ignore[union-attr]
    # the file on disk is the same receipt
    assert Receipt.load(root / "receipt.json").envelope == receipt.envelope


def test_payload_records_what_ran(signed: tuple[Path, Receipt]) -> None:
    root, receipt = signed
    payload = receipt.payload
    assert sorted(payload) == PAYLOAD_FIELDS
    assert payload["command"] == [PY, "check.py"]
    out = b"charge(5) -> True\n"
    assert payload["output"]["stdout"] == {
        "sha256": "sha256:" + hashlib.sha256(out).hexdigest(),
        "bytes": len(out),
    }
    assert payload["git"]["commit"] == git(root, "rev-parse", "HEAD")
    assert payload["git"]["tree"] == git(root, "rev-parse", "HEAD^{tree}")
    assert payload["git"]["dirty"] is False and payload["git"]["diff_sha256"] is None
    sig = payload["protected"]["src/billing.py::charge"]["signature"]
    assert sig["decorators"] == ["functools.cache"]
    assert sig["returns"] == "bool"
    assert [(p["name"], p["kind"], p["default"]) for p in sig["params"]] == [
        ("amount", "positional-or-keyword", None),
        ("currency", "positional-or-keyword", "'EUR'"),
        ("retries", "keyword-only", "3"),
    ]
    assert payload["environment"]["python"]["version"]
    assert payload["started_at"] <= payload["ended_at"]


@pytest.mark.parametrize("field", PAYLOAD_FIELDS)
def test_every_tampered_field_is_caught_and_named(signed: tuple[Path, Receipt], field: str) -> None:
    root, receipt = signed
    forged = copy.deepcopy(receipt.envelope)
    forged["payload"][field] = tamper(forged["payload"][field])
    result = verify(forged, key=KEY, cwd=root)
    assert not result.ok
    assert result.failed_names == [f"payload.{field}"]
    check = result.check(f"payload.{field}")
    assert check is not None and check.expected == receipt.envelope["fields"][field]
    assert "changed after signing" in check.detail


def test_nested_edit_and_added_or_removed_fields_are_named(
    signed: tuple[Path, Receipt],
) -> None:
    root, receipt = signed
    forged = copy.deepcopy(receipt.envelope)
    forged["payload"]["output"]["stdout"]["bytes"] = 0
    forged["payload"]["approved_by"] = "me"
    del forged["payload"]["duration_ms"]
    result = verify(forged, key=KEY, cwd=root)
    assert result.failed_names == ["payload.output", "payload.duration_ms", "payload.approved_by"]
    assert "removed after signing" in result.check("payload.duration_ms").detail  # type: ignore[union-attr]
    assert "added after signing" in result.check("payload.approved_by").detail  # type: ignore[union-attr]


def test_digests_rewritten_to_match_the_edit_break_the_signature(
    signed: tuple[Path, Receipt],
) -> None:
    root, receipt = signed
    forged = copy.deepcopy(receipt.envelope)
    forged["payload"]["exit_code"] = 0
    forged["payload"]["tests"] = {"total": 99, "passed": 99, "failed": 0}
    forged["fields"] = field_digests(forged["payload"])
    result = verify(forged, key=KEY, cwd=root)
    assert result.failed_names == ["signature"]
    assert "does not match" in result.checks[0].detail


def test_wrong_key_fails_and_names_both_key_ids(signed: tuple[Path, Receipt]) -> None:
    root, _ = signed
    result = verify(root / "receipt.json", key=OTHER_KEY, cwd=root)
    assert result.failed_names == ["signature"]
    check = result.checks[0]
    assert HmacKey(OTHER_KEY.encode()).key_id in check.expected
    assert HmacKey(KEY.encode()).key_id in check.found
    assert "another key" in check.detail


def test_forged_signature_under_our_key_id_fails(signed: tuple[Path, Receipt]) -> None:
    root, receipt = signed
    forged = copy.deepcopy(receipt.envelope)
    forged["signatures"][0]["sig"] = "0" * 64
    assert verify(forged, key=KEY, cwd=root).failed_names == ["signature"]


def test_receipt_for_another_commit_fails_on_commit(repo: Path) -> None:
    receipt = run([PY, "check.py"], cwd=repo, key=KEY, stream=False)
    other = commit(repo, "later", {"notes.txt": "later\n"})
    result = verify(receipt, key=KEY, cwd=repo)
    assert result.failed_names == ["commit"]
    check = result.check("commit")
    assert check is not None
    assert check.expected == other and check.found == receipt.commit
    assert "other code" in check.detail
    # naming the receipt's own commit explicitly passes
    assert verify(receipt, key=KEY, cwd=repo, commit="HEAD~1").ok


def test_receipts_made_without_the_key_fail(signed: tuple[Path, Receipt]) -> None:
    root, receipt = signed
    payload = copy.deepcopy(receipt.payload)
    # The other tool's "receipt": a bare SHA-256 anyone can recompute.
    bare = hashlib.sha256(f"{receipt.commit}:0:1.0:true".encode()).hexdigest()
    forged = {
        "format": "letitloop-receipt/1",
        "payload": payload,
        "fields": field_digests(payload),
        "signatures": [{"alg": "sha256", "key_id": None, "sig": bare}],
    }
    result = verify(forged, key=KEY, cwd=root)
    assert result.failed_names == ["signature"]
    assert "not a keyed signature" in result.checks[0].detail
    forged["signatures"] = []
    result = verify(forged, key=KEY, cwd=root)
    assert result.failed_names == ["signature"]
    assert "no signature" in result.checks[0].detail
    del forged["signatures"]
    assert verify(forged, key=KEY, cwd=root).failed_names == ["signature"]


def test_ed25519_receipt_verifies_with_the_public_key_only(repo: Path) -> None:
    private, public = generate_ed25519()
    _, other_public = generate_ed25519()
    receipt = run([PY, "check.py"], cwd=repo, signing_key=private, key=KEY, stream=False)
    assert [k.split(":")[0] for k in receipt.key_ids] == ["hmac", "ed25519"]
    result = verify(receipt, public_key=public, cwd=repo)
    assert result.ok, result.render()
    assert result.checks[0].detail.startswith("signed by ed25519:")
    assert verify(receipt, public_key=other_public, cwd=repo).failed_names == ["signature"]
    forged = copy.deepcopy(receipt.envelope)
    forged["payload"]["exit_code"] = 3
    assert verify(forged, public_key=public, cwd=repo).failed_names == ["payload.exit_code"]


def test_signature_comparison_is_constant_time(
    signed: tuple[Path, Receipt], monkeypatch: pytest.MonkeyPatch
) -> None:
    import hmac

    from letitloop.receipts import _keys

    calls: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(_keys.hmac, "compare_digest", spy)
    root, receipt = signed
    assert verify(receipt, key=KEY, cwd=root).ok
    assert calls == [(calls[0][0], receipt.envelope["signatures"][0]["sig"])]


def test_missing_short_and_unreadable_keys_are_clean_errors(repo: Path) -> None:
    with pytest.raises(ReceiptKeyError, match="no key to sign") as exc:
        run([PY, "check.py"], cwd=repo, stream=False, env={})
    assert "LIL_RECEIPT_KEY" in (exc.value.fix or "")
    assert not (repo / "receipt.json").exists()
    with pytest.raises(ReceiptKeyError, match="at least 16"):
        run([PY, "check.py"], cwd=repo, key="short", stream=False)
    with pytest.raises(ReceiptKeyError, match="cannot read"):
        run([PY, "check.py"], cwd=repo, key_file=repo / "nope", stream=False)
    with pytest.raises(ReceiptKeyError, match=r"cannot be read"):
        run([PY, "check.py"], cwd=repo, signing_key="not a pem", stream=False)
    with pytest.raises(ReceiptKeyError, match="no key to verify"):
        verify({"format": "letitloop-receipt/1", "payload": {}}, env={})


def test_key_comes_from_the_environment_or_a_file(repo: Path, tmp_path: Path) -> None:
    receipt = run([PY, "check.py"], cwd=repo, stream=False, env={"LIL_RECEIPT_KEY": KEY})
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    assert verify(receipt, key_file=key_file, cwd=repo).ok


def test_unreadable_receipts_are_format_errors(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{not json")
    with pytest.raises(ReceiptFormatError, match="not JSON"):
        verify(path, key=KEY)
    path.write_text(json.dumps({"format": "other/9", "payload": {}}))
    with pytest.raises(ReceiptFormatError, match="other/9"):
        verify(path, key=KEY)
    with pytest.raises(ReceiptFormatError, match="cannot read"):
        verify(tmp_path / "missing.json", key=KEY)


def test_canonical_json_is_stable_and_refuses_floats() -> None:
    assert canonical({"b": 1, "a": [True, None, "é"]}) == '{"a":[true,null,"é"],"b":1}'.encode()
    assert canonical({"a": 1, "b": 2}) == canonical({"b": 2, "a": 1})
    with pytest.raises(TypeError, match="no floats"):
        canonical({"t": 1.5})
