"""Points 17 and 18 (receipts) of issue 14.

A receipt "signed" with HMAC keyed by the *public* Ed25519 PEM (anyone has it) used to verify
with ``lil receipt verify --key-file public.pem``. Public keys and non-secrets are now refused
as HMAC keys, and a non-ASCII signature is a plain mismatch, not a traceback.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from letitloop.receipts import ReceiptKeyError, generate_ed25519, run, verify
from letitloop.receipts._keys import HmacKey
from tests.helpers import invoke_lil
from tests.receipts.conftest import BILLING, CHECK, KEY, PY, commit, git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with a passing check, as the receipts tests make one."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "base", {"src/billing.py": BILLING, "check.py": CHECK})
    return root


def _forge_with(secret: bytes, receipt_path: Path) -> None:
    """Re-sign a receipt's payload with HMAC under ``secret``, as an attacker would."""
    from letitloop.receipts._canonical import canonical

    envelope = json.loads(receipt_path.read_text())
    envelope["payload"]["exit_code"] = 0
    key = HmacKey(secret.strip())
    message = canonical(envelope["payload"])
    envelope["signatures"] = [{"alg": key.alg, "key_id": key.key_id, "sig": key.sign(message)}]
    receipt_path.write_text(json.dumps(envelope))


def _verify_cli(receipt: Path, *args: str) -> object:
    return invoke_lil("receipt", "verify", str(receipt), *args, env={})


def test_a_public_pem_is_refused_as_an_hmac_key(repo: Path, tmp_path: Path) -> None:
    private, public = generate_ed25519()
    receipt = tmp_path / "receipt.json"
    run([PY, "check.py"], cwd=repo, signing_key=private, out=str(receipt), stream=False)
    pem = tmp_path / "public.pem"
    pem.write_text(public)
    _forge_with(public.encode(), receipt)
    res = _verify_cli(receipt, "--key-file", str(pem))
    assert res.exit_code != 0  # type: ignore[attr-defined]
    assert "not an HMAC secret" in res.output  # type: ignore[attr-defined]
    assert "Traceback" not in res.output  # type: ignore[attr-defined]
    with pytest.raises(ReceiptKeyError, match="--public-key"):
        verify(json.loads(receipt.read_text()), key_file=pem, cwd=repo)


@pytest.mark.parametrize(
    "secret",
    ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG0000000000000000000000 me@host", "x" * 40],
    ids=["ssh-public-key", "one-repeated-byte"],
)
def test_non_secrets_are_refused_as_hmac_keys(repo: Path, secret: str) -> None:
    with pytest.raises(ReceiptKeyError):
        run([PY, "check.py"], cwd=repo, key=secret, stream=False)


def test_a_non_ascii_signature_is_a_mismatch_not_a_traceback(repo: Path, tmp_path: Path) -> None:
    receipt = tmp_path / "receipt.json"
    made = run([PY, "check.py"], cwd=repo, key=KEY, out=str(receipt), stream=False)
    forged = copy.deepcopy(made.envelope)
    forged["signatures"][0]["sig"] = "é" * 64
    assert verify(forged, key=KEY, cwd=repo).failed_names == ["signature"]
    receipt.write_text(json.dumps(forged))
    res = invoke_lil("receipt", "verify", str(receipt), env={"LIL_RECEIPT_KEY": KEY})
    assert res.exit_code == 1 and "FAIL signature" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
