"""The receipt file and the verdict on it: ``Receipt`` and ``VerifyResult``.

A ``Receipt`` is the signed envelope (see ``_canonical``) with read-only views of its payload;
it loads and saves the JSON file. A ``VerifyResult`` is a list of named ``Check``s, each with
what was expected and what was found, so a failure says which fact did not hold.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from letitloop.receipts._canonical import FORMAT
from letitloop.receipts._errors import ReceiptFormatError


@dataclass(frozen=True)
class Receipt:
    """A signed record of one command run: what ran, against which code, and how it ended."""

    envelope: dict[str, Any]

    @property
    def payload(self) -> dict[str, Any]:
        payload = self.envelope.get("payload")
        return payload if isinstance(payload, dict) else {}

    @property
    def command(self) -> list[str]:
        return list(self.payload.get("command") or [])

    @property
    def exit_code(self) -> int | None:
        return self.payload.get("exit_code")

    @property
    def tests(self) -> dict[str, Any] | None:
        return self.payload.get("tests")

    @property
    def git(self) -> dict[str, Any] | None:
        return self.payload.get("git")

    @property
    def commit(self) -> str | None:
        return (self.git or {}).get("commit")

    @property
    def protected(self) -> dict[str, Any]:
        return dict(self.payload.get("protected") or {})

    @property
    def key_ids(self) -> list[str]:
        sigs = self.envelope.get("signatures")
        return [str(s.get("key_id")) for s in sigs if isinstance(s, dict)] if sigs else []

    def to_json(self) -> str:
        return json.dumps(self.envelope, indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the receipt to ``path`` (atomically: a reader never sees half a file)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(self.to_json())
        os.replace(tmp, target)
        return target

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "the receipt") -> Receipt:
        if not isinstance(data, dict) or "payload" not in data:
            raise ReceiptFormatError(
                f"{where} is not a letitloop receipt (no payload)",
                fix="give the file `lil receipt run --out FILE` wrote",
                path=where,
            )
        if data.get("format") != FORMAT:
            raise ReceiptFormatError(
                f"{where} has format {data.get('format')!r}; this letitloop reads {FORMAT!r}",
                fix="verify it with the letitloop version that made it, or make a new receipt",
                path=where,
            )
        return cls(data)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Receipt:
        """Read a receipt file; ``ReceiptFormatError`` if it is not one."""
        where = os.fspath(path)
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ReceiptFormatError(
                f"cannot read the receipt {where!r}: {exc.strerror or exc}",
                fix="check the path (`lil receipt run --out FILE` chooses it)",
                path=where,
            ) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReceiptFormatError(
                f"{where} is not JSON: {exc}",
                fix="give the file `lil receipt run --out FILE` wrote, unedited",
                path=where,
            ) from None
        return cls.from_dict(data, where=where)


@dataclass(frozen=True)
class Check:
    """One verified fact: its name, whether it held, and what was expected vs found."""

    name: str
    ok: bool
    expected: Any = None
    found: Any = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "expected": self.expected,
            "found": self.found,
            "detail": self.detail,
        }

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        text = f"{mark} {self.name}"
        if self.detail:
            text += f": {self.detail}"
        if not self.ok and (self.expected is not None or self.found is not None):
            text += f"\n       expected: {_show(self.expected)}"
            text += f"\n       found:    {_show(self.found)}"
        return text


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class VerifyResult:
    """The verdict on a receipt: every check, in order; ``ok`` only if all passed."""

    receipt: Receipt | None
    checks: tuple[Check, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def failed_names(self) -> list[str]:
        return [c.name for c in self.failed]

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failed": self.failed_names,
            "checks": [c.to_dict() for c in self.checks],
            "receipt": self.receipt.payload if self.receipt else None,
        }

    def render(self) -> str:
        head = "receipt verified" if self.ok else f"receipt REJECTED: {len(self.failed)} failed"
        return "\n".join([head, *(c.line() for c in self.checks)])
