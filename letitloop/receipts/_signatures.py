"""Protected function signatures: read them from code, store them in receipts, compare them.

A protected entry is ``PATH::QUALNAME`` (``src/api.py::Handler.post``), the path relative to
the repository root. Its signature (name, ``def``/``async def``, decorators, parameters with
kind, default and annotation, return annotation; for a class its bases and its methods too) is
read with the splicer's code: ``letitloop.splice._index`` finds the definition by qualified
name with libcst, ``letitloop.splice._signature`` describes and compares it. Policies: exact (any
change is a violation) or ``"additive"`` (only new optional parameters, ``*args``/``**kwargs``).

Protected entries can also be listed in ``pyproject.toml``::

    [tool.letitloop]
    protect = ["src/billing.py::charge", "src/api.py::Handler.post"]
    protect-policy = "additive"   # optional; the default is exact
"""

from __future__ import annotations

import ast
import os
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from letitloop.receipts import _git
from letitloop.receipts._errors import GitError, ProtectError, ReceiptError
from letitloop.splice._signature import Param, Signature, definitions_in, differences, find_def

POLICIES = ("exact", "additive")
_FORM = "PATH::QUALNAME, e.g. src/billing.py::charge or src/api.py::Handler.post"


def parse_spec(spec: str) -> tuple[str, str]:
    """``"src/api.py::Handler.post"`` -> ``("src/api.py", "Handler.post")``."""
    path, sep, qualname = spec.strip().rpartition("::")
    if not sep or not path or not qualname:
        raise ProtectError(
            f"{spec!r} does not name a protected function", fix=f"write it as {_FORM}", spec=spec
        )
    return Path(path).as_posix().removeprefix("./"), qualname.strip()


def normalize(specs: list[str] | tuple[str, ...]) -> list[str]:
    """The specs in ``PATH::QUALNAME`` form, de-duplicated, in first-seen order."""
    out: list[str] = []
    for spec in specs:
        path, qualname = parse_spec(spec)
        norm = f"{path}::{qualname}"
        if norm not in out:
            out.append(norm)
    return out


def check_policy(policy: str | None) -> str:
    policy = policy or "exact"
    if policy not in POLICIES:
        raise ReceiptError(
            f"unknown signature policy {policy!r}",
            fix="use 'exact' (no change at all) or 'additive' (new optional parameters only)",
        )
    return policy


# -- pyproject -------------------------------------------------------------------------------


def pyproject_settings(text: str | None, where: str) -> tuple[list[str], str | None]:
    """``[tool.letitloop] protect`` and ``protect-policy`` from a pyproject's text."""
    if not text or "protect" not in text:
        return [], None
    try:
        table = tomllib.loads(text).get("tool", {}).get("letitloop", {})
    except tomllib.TOMLDecodeError as exc:
        raise ReceiptError(
            f"{where} is not valid TOML: {exc}", fix="fix the TOML syntax in pyproject.toml"
        ) from None
    protect = table.get("protect", [])
    if not isinstance(protect, list) or not all(isinstance(p, str) for p in protect):
        raise ReceiptError(
            f"[tool.letitloop] protect in {where} must be a list of strings, got {protect!r}",
            fix=f'write protect = ["{_FORM.split(", e.g. ")[1].split(" or ")[0]}"]',
        )
    policy = table.get("protect-policy")
    if policy is not None:
        check_policy(policy)
    return normalize(protect), policy


def pyproject_at(root: str | os.PathLike[str]) -> tuple[list[str], str | None]:
    """The protect list and policy of ``root/pyproject.toml`` in the working tree."""
    path = Path(root) / "pyproject.toml"
    try:
        text = path.read_text()
    except FileNotFoundError:
        return [], None
    return pyproject_settings(text, str(path))


# -- reading signatures ----------------------------------------------------------------------


def sig_to_dict(sig: Signature) -> dict[str, Any]:
    return {
        "keyword": sig.keyword,
        "name": sig.name,
        "decorators": list(sig.decorators),
        "params": [asdict(p) for p in sig.params],
        "returns": sig.returns,
        "bases": list(sig.bases),
        "text": sig.text,
    }


def sig_from_dict(data: dict[str, Any]) -> Signature:
    return Signature(
        keyword=data["keyword"],
        name=data["name"],
        decorators=tuple(data["decorators"]),
        params=tuple(Param(**p) for p in data["params"]),
        returns=data["returns"],
        bases=tuple(data["bases"]),
        text=data["text"],
    )


def entry_of(source: str, qualname: str, *, spec: str, where: str) -> dict[str, Any]:
    """The stored form of one protected definition: its signature and, for a class, its
    methods' (``{".post": ...}``)."""
    from letitloop.splice._errors import SpliceError
    from letitloop.splice._index import Index

    try:
        definition = Index(source).resolve(qualname)
    except SpliceError as exc:
        raise ProtectError(
            f"protected {spec}: {exc.message} ({where})",
            fix=(exc.fix or "") + "; or fix the protect list (--protect, [tool.letitloop])",
            spec=spec,
        ) from None
    try:
        node = find_def(ast.parse(source), definition.line)
    except (SyntaxError, LookupError) as exc:
        raise ProtectError(
            f"protected {spec}: this Python cannot read its signature ({where}): {exc}",
            fix="run with the Python version the code is written for",
            spec=spec,
        ) from None
    members = {}
    if isinstance(node, ast.ClassDef):
        for path, child in definitions_in(node):
            if path and ".<locals>." not in path:
                members[path] = sig_to_dict(Signature.of(child))
    return {"signature": sig_to_dict(Signature.of(node)), "members": members}


def read_protected(specs: list[str], root: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Each spec -> its entry, read from the files under ``root`` (the working tree)."""
    out = {}
    for spec in normalize(specs):
        path, qualname = parse_spec(spec)
        file = Path(root) / path
        try:
            source = file.read_text()
        except OSError as exc:
            raise ProtectError(
                f"protected {spec}: cannot read {file}: {exc.strerror or exc}",
                fix="paths are relative to the repository root; check the protect list",
                spec=spec,
            ) from None
        out[spec] = entry_of(source, qualname, spec=spec, where=str(file))
    return out


def compare(old: dict[str, Any], new: dict[str, Any], *, additive: bool) -> list[str]:
    """Why ``new`` breaks ``old`` under the policy, as sentences; empty when it does not."""
    reasons = differences(
        sig_from_dict(old["signature"]), sig_from_dict(new["signature"]), additive=additive
    )
    new_members = new.get("members", {})
    for path, sig in old.get("members", {}).items():
        if path not in new_members:
            reasons.append(f"{path.lstrip('.')} removed")
            continue
        for reason in differences(
            sig_from_dict(sig), sig_from_dict(new_members[path]), additive=additive
        ):
            reasons.append(f"{path.lstrip('.')}: {reason}")
    return reasons


# -- between two revisions -------------------------------------------------------------------


@dataclass(frozen=True)
class SignatureChange:
    """One protected definition compared between two revisions.

    ``status``: ``"unchanged"``, ``"allowed"`` (changed within the additive policy),
    ``"changed"`` (a violation), ``"removed"`` (gone on head: a violation) or ``"new"`` (not on
    base, so nothing to protect yet).
    """

    spec: str
    status: str
    old: str | None
    new: str | None
    reasons: tuple[str, ...] = ()

    @property
    def violation(self) -> bool:
        return self.status in ("changed", "removed")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reasons": list(self.reasons), "violation": self.violation}


def _entry_at(rev: str, spec: str, cwd: str | os.PathLike[str]) -> dict[str, Any] | None:
    path, qualname = parse_spec(spec)
    source = _git.show(rev, path, cwd)
    if source is None:
        return None
    from letitloop.splice._errors import SpliceError, TargetNotFoundError
    from letitloop.splice._index import Index

    try:
        Index(source).resolve(qualname)
    except TargetNotFoundError:
        return None
    except SpliceError:
        pass  # ambiguous, or not valid Python: entry_of raises it as a ProtectError
    return entry_of(source, qualname, spec=spec, where=f"{path} at {rev}")


def signature_changes(
    base: str,
    head: str,
    protect: list[str] | tuple[str, ...] = (),
    *,
    policy: str | None = None,
    cwd: str | os.PathLike[str] = ".",
) -> list[SignatureChange]:
    """How each protected definition changed from ``base`` to ``head``.

    The protected set is ``protect`` plus ``[tool.letitloop] protect`` of both revisions'
    pyproject.toml, and the policy is ``policy``, else the *base* revision's
    ``protect-policy``: a pull request cannot unprotect a function or relax the policy by
    editing pyproject.toml on its own branch.
    """
    root = _git.repo_root(cwd)
    if root is None:
        raise GitError(
            f"{os.fspath(cwd)} is not inside a git repository",
            fix="run `lil receipt signatures` inside the repository",
        )
    base_protect, base_policy = pyproject_settings(
        _git.show(base, "pyproject.toml", root), f"pyproject.toml at {base}"
    )
    head_protect, _ = pyproject_settings(
        _git.show(head, "pyproject.toml", root), f"pyproject.toml at {head}"
    )
    specs = normalize([*protect, *base_protect, *head_protect])
    if not specs:
        raise ProtectError(
            "no protected functions: nothing to compare",
            fix=f"pass --protect {_FORM.split(', e.g. ')[0]} or list them in "
            "[tool.letitloop] protect in pyproject.toml",
        )
    additive = check_policy(policy or base_policy) == "additive"
    out = []
    for spec in specs:
        old = _entry_at(base, spec, root)
        new = _entry_at(head, spec, root)
        old_text = old["signature"]["text"] if old else None
        new_text = new["signature"]["text"] if new else None
        if old is None:
            out.append(SignatureChange(spec, "new", None, new_text))
        elif new is None:
            out.append(SignatureChange(spec, "removed", old_text, None, (f"{spec} is gone",)))
        else:
            strict = compare(old, new, additive=False)
            if not strict:
                out.append(SignatureChange(spec, "unchanged", old_text, new_text))
                continue
            reasons = compare(old, new, additive=additive)
            status = "changed" if reasons else "allowed"
            out.append(SignatureChange(spec, status, old_text, new_text, tuple(reasons or strict)))
    return out
