"""Canonical JSON and the signed envelope of a receipt.

A receipt file is ``{"format", "payload", "fields", "signatures"}``. ``fields`` maps each
top-level payload field to the SHA-256 of its canonical JSON; each signature (HMAC-SHA256 or
Ed25519, with the signing key's id) covers the format and that map. So a valid signature proves
the map is authentic, and recomputing the digests names exactly which payload field was changed
after signing, instead of only saying "bad signature".

Canonical JSON: keys sorted, no whitespace, UTF-8, no floats (integers and strings only), no
NaN. The same value always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from letitloop.receipts._keys import ED25519_ALG, HMAC_ALG, Signer, Verifier

FORMAT = "letitloop-receipt/1"
_DOMAIN = b"letitloop-receipt/1\n"


def canonical(value: Any) -> bytes:
    """``value`` as canonical JSON bytes; floats are refused (their text is not canonical)."""
    _no_floats(value)
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def _no_floats(value: Any) -> None:
    if isinstance(value, float):
        raise TypeError(f"canonical JSON holds no floats, got {value!r}")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"canonical JSON keys are strings, got {key!r}")
            _no_floats(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _no_floats(item)


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def field_digests(payload: dict[str, Any]) -> dict[str, str]:
    """Each top-level payload field -> SHA-256 of its canonical JSON."""
    return {name: sha256(canonical(value)) for name, value in sorted(payload.items())}


def manifest(digests: dict[str, str]) -> bytes:
    """The bytes every signature covers: the format and the field digests."""
    return _DOMAIN + canonical(digests)


def seal(payload: dict[str, Any], signers: Sequence[Signer]) -> dict[str, Any]:
    """The receipt envelope: ``payload`` with its field digests, signed by every signer."""
    digests = field_digests(payload)
    message = manifest(digests)
    return {
        "format": FORMAT,
        "payload": payload,
        "fields": digests,
        "signatures": [{"alg": s.alg, "key_id": s.key_id, "sig": s.sign(message)} for s in signers],
    }


@dataclass(frozen=True)
class SignatureCheck:
    """The outcome of checking an envelope's signatures and field digests.

    ``signed`` says a signature from one of the verifier's keys is valid; ``changed`` names the
    payload fields whose content no longer matches the signed digests (``+name`` for a field
    added after signing, ``-name`` for one removed).
    """

    signed: bool
    reason: str
    key_id: str | None = None
    expected_key_ids: tuple[str, ...] = ()
    found_key_ids: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    field_expected: dict[str, str] = field(default_factory=dict)
    field_found: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.signed and not self.changed


def check_envelope(envelope: dict[str, Any], verifiers: Sequence[Verifier]) -> SignatureCheck:
    """Check ``envelope`` against ``verifiers``: one valid signature by a key the verifier holds,
    then every payload field against its signed digest."""
    mine = tuple(f"{v.key_id}" for v in verifiers)
    raw = envelope.get("signatures")
    sigs = [s for s in raw if isinstance(s, dict)] if isinstance(raw, list) else []
    found = tuple(f"{s.get('alg')}:{s.get('key_id')}" for s in sigs)
    digests = envelope.get("fields")
    if not sigs:
        return SignatureCheck(
            False,
            "the receipt carries no signature, so anyone could have written it",
            expected_key_ids=mine,
        )
    known = [s for s in sigs if s.get("alg") in (HMAC_ALG, ED25519_ALG)]
    if not known:
        algs = ", ".join(sorted({str(s.get("alg")) for s in sigs}))
        return SignatureCheck(
            False,
            f"the receipt is 'signed' with {algs}, which is not a keyed signature: anyone can "
            "recompute it",
            expected_key_ids=mine,
            found_key_ids=found,
        )
    if not isinstance(digests, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in digests.items()
    ):
        return SignatureCheck(
            False, "the receipt has no field digests to check the signature against", None, mine
        )
    message = manifest(digests)
    matched_id = False
    for verifier in verifiers:
        for sig in known:
            if sig.get("alg") != verifier.alg or sig.get("key_id") != verifier.key_id:
                continue
            matched_id = True
            if verifier.verify(message, str(sig.get("sig", ""))):
                return _fields(envelope, digests, verifier.key_id, mine, found)
    if matched_id:
        reason = (
            "the signature does not match: the signed field digests were changed, or another "
            "key claims the same key id"
        )
    else:
        reason = "the receipt was signed with another key (compare the key ids)"
    return SignatureCheck(False, reason, None, mine, tuple(str(s.get("key_id")) for s in known))


def _fields(
    envelope: dict[str, Any],
    signed: dict[str, str],
    key_id: str,
    mine: tuple[str, ...],
    found: tuple[str, ...],
) -> SignatureCheck:
    payload = envelope.get("payload")
    if not isinstance(payload, dict):
        return SignatureCheck(False, "the receipt has no payload object", key_id, mine, found)
    try:
        actual = field_digests(payload)
    except TypeError as exc:  # a float or odd key was slipped in: that field was edited
        actual = {}
        for name, value in payload.items():
            try:
                actual[name] = sha256(canonical(value))
            except TypeError:
                actual[name] = f"(not canonical JSON: {exc})"
    changed = [n for n in sorted(signed) if n in actual and actual[n] != signed[n]]
    changed += [f"-{n}" for n in sorted(signed) if n not in actual]
    changed += [f"+{n}" for n in sorted(actual) if n not in signed]
    return SignatureCheck(
        True,
        "signature valid" if not changed else "payload fields changed after signing",
        key_id,
        mine,
        found,
        tuple(changed),
        {n.lstrip("+-"): signed.get(n.lstrip("+-"), "(absent)") for n in changed},
        {n.lstrip("+-"): actual.get(n.lstrip("+-"), "(absent)") for n in changed},
    )
