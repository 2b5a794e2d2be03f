"""Signed CI receipts: sign what a command really did, and check it where a pull request
cannot reach.

    from letitloop.receipts import run, verify

    receipt = run(["pytest", "-q"], out="receipt.json", protect=["src/billing.py::charge"])
    result = verify("receipt.json")          # key from $LIL_RECEIPT_KEY
    result.ok, result.failed_names            # e.g. False, ["exit_code", "tests"]

``signature_changes(base, head, protect)`` compares protected signatures between two git
revisions. The CLI is ``lil receipt run|verify|signatures``; the GitHub Action is
``action.yml`` at the repository root. See docs/ci.md. Nothing heavy is imported until used
(libcst for signatures, cryptography for Ed25519 keys).
"""

from __future__ import annotations

from letitloop._lazy import lazy_exports

TYPE_CHECKING = False

_EXPORTS = {
    "run": "letitloop.receipts._run",
    "verify": "letitloop.receipts._verify",
    "signature_changes": "letitloop.receipts._signatures",
    "SignatureChange": "letitloop.receipts._signatures",
    "Receipt": "letitloop.receipts._model",
    "VerifyResult": "letitloop.receipts._model",
    "Check": "letitloop.receipts._model",
    "generate_ed25519": "letitloop.receipts._keys",
    "ReceiptError": "letitloop.receipts._errors",
    "ReceiptKeyError": "letitloop.receipts._errors",
    "ReceiptFormatError": "letitloop.receipts._errors",
    "ProtectError": "letitloop.receipts._errors",
    "GitError": "letitloop.receipts._errors",
}
__all__ = [
    "Check",
    "GitError",
    "ProtectError",
    "Receipt",
    "ReceiptError",
    "ReceiptFormatError",
    "ReceiptKeyError",
    "SignatureChange",
    "VerifyResult",
    "generate_ed25519",
    "run",
    "signature_changes",
    "verify",
]  # == sorted(_EXPORTS), spelled out for linters

if TYPE_CHECKING:
    from letitloop.receipts._errors import (
        GitError,
        ProtectError,
        ReceiptError,
        ReceiptFormatError,
        ReceiptKeyError,
    )
    from letitloop.receipts._keys import generate_ed25519
    from letitloop.receipts._model import Check, Receipt, VerifyResult
    from letitloop.receipts._run import run
    from letitloop.receipts._signatures import SignatureChange, signature_changes
    from letitloop.receipts._verify import verify


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
