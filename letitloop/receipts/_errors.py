"""The errors signed receipts raise, in the letitloop hierarchy.

    LetItLoopError                      (letitloop.errors)
    └── ReceiptError                    a receipt cannot be made, read or checked
        ├── ReceiptKeyError                 no usable signing or verifying key
        ├── ReceiptFormatError              the receipt file is not a letitloop receipt
        ├── ProtectError                    a protected function cannot be found or read
        └── GitError                        a git revision or file cannot be read

A receipt that reads fine but fails a check is not an error: ``verify`` returns a
``VerifyResult`` whose failed checks say what was expected and what was found.
"""

from __future__ import annotations

from typing import Any

from letitloop.errors import LetItLoopError

__all__ = ["GitError", "ProtectError", "ReceiptError", "ReceiptFormatError", "ReceiptKeyError"]


class ReceiptError(LetItLoopError):
    """A receipt cannot be made, read or checked; nothing was signed or accepted."""

    title = "receipt error"

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(self._extra())
        return data

    def _extra(self) -> dict[str, Any]:
        return {}


class ReceiptKeyError(ReceiptError):
    """No signing or verifying key was given, or the one given cannot be used."""

    title = "receipt key unusable"


class ReceiptFormatError(ReceiptError):
    """The file is not JSON, or not a receipt in a format this letitloop reads."""

    title = "not a receipt"

    def __init__(self, message: str, *, fix: str, path: str | None = None) -> None:
        super().__init__(message, fix=fix)
        self.path = path

    def _extra(self) -> dict[str, Any]:
        return {"path": self.path}


class ProtectError(ReceiptError):
    """A ``PATH::QUALNAME`` entry is malformed, or its file or definition does not exist."""

    title = "protected function not found"

    def __init__(self, message: str, *, fix: str, spec: str | None = None) -> None:
        super().__init__(message, fix=fix)
        self.spec = spec

    def _extra(self) -> dict[str, Any]:
        return {"spec": self.spec}


class GitError(ReceiptError):
    """git failed: not a repository, an unknown revision, or a file missing at a revision."""

    title = "git error"
