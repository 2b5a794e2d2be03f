"""The errors the splicer raises, in the letitloop hierarchy.

    LetItLoopError                      (letitloop.errors)
    └── SpliceError                     the edit cannot be made; the input is left as it was
        ├── TargetNotFoundError             no definition has that qualified name (.suggestions)
        ├── AmbiguousTargetError            several definitions have it (.candidates)
        ├── InvalidSourceError              the file, the new code or the result is not valid Python
        ├── SignatureChangedError           a protected or additive-only signature changed
        └── DefinitionRenamedError          the new code renames the target (rename=False)

Every message says what happened and how to fix it; the facts are also fields, and ``to_dict``
includes them, so the CLI (``--json``), the TUI and the editor can render them. This module does
not import libcst.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from letitloop.errors import LetItLoopError

__all__ = [
    "AmbiguousTargetError",
    "Candidate",
    "DefinitionRenamedError",
    "InvalidSourceError",
    "SignatureChangedError",
    "SpliceError",
    "TargetNotFoundError",
]


class SpliceError(LetItLoopError):
    """A splice (replace, insert, delete or a durable-code transform) cannot be made.

    Nothing was changed: the library returns no result and the CLI writes no file.
    """

    title = "cannot splice source"

    def __init__(self, message: str, *, fix: str | None = None, target: str | None = None):
        super().__init__(message, fix=fix)
        self.target = target

    def to_dict(self) -> dict[str, object]:
        data = super().to_dict()
        data.update(self._extra())
        return data

    def _extra(self) -> dict[str, Any]:
        return {"target": self.target}


class TargetNotFoundError(SpliceError):
    """No function or class in the source has the requested qualified name."""

    title = "target not found"

    def __init__(
        self, target: str, suggestions: list[str], *, defined: list[str] | None = None
    ) -> None:
        self.suggestions = list(suggestions)
        if suggestions:
            hint = "; did you mean " + " or ".join(repr(s) for s in suggestions) + "?"
        elif defined:
            more = ", ..." if len(defined) > 12 else ""
            hint = "; it defines " + ", ".join(defined[:12]) + more
        else:
            hint = "; it defines no function or class"
        super().__init__(
            f"no function or class named {target!r} in this source{hint}",
            fix="name the target by its qualified name: func, Class.method, Outer.Inner.method "
            "or outer.<locals>.inner (`lil splice targets FILE` prints them all)",
            target=target,
        )

    def _extra(self) -> dict[str, Any]:
        return {"target": self.target, "suggestions": self.suggestions}


@dataclass(frozen=True)
class Candidate:
    """One of several definitions that share a qualified name."""

    index: int  # 1-based, in source order: what choose= takes
    qualname: str
    line: int  # the line of its ``def``/``class`` keyword
    first_line: int  # its first decorator's line (or ``line``)
    end_line: int
    header: str  # e.g. "@property def value(self)"

    def describe(self) -> str:
        where = (
            f"line {self.line}"
            if self.first_line == self.line
            else (f"line {self.line} (decorated from line {self.first_line})")
        )
        return f"{self.index}. {where}: {self.header}"


class AmbiguousTargetError(SpliceError):
    """Several definitions share the qualified name (redefined, overloads, a property and its
    setter, alternatives under ``if``/``try``): ``choose=`` must say which one."""

    title = "ambiguous target"

    def __init__(self, target: str, candidates: list[Candidate], *, note: str = "") -> None:
        self.candidates = list(candidates)
        listing = "\n".join("    " + c.describe() for c in candidates)
        head = note or f"{len(candidates)} definitions are named {target!r}"
        super().__init__(
            f"{head}:\n{listing}",
            fix="pick one with choose=N (CLI: --choose N), N being its number in this list "
            "or any line number inside it",
            target=target,
        )

    def _extra(self) -> dict[str, Any]:
        return {"target": self.target, "candidates": [asdict(c) for c in self.candidates]}


class InvalidSourceError(SpliceError):
    """The source, the new code, or the spliced result does not parse (or compile) as Python.

    ``what`` says which: ``"source"``, ``"new code"`` or ``"result"``; ``line`` and ``column``
    (1-based) locate the problem in that text when known.
    """

    title = "invalid Python source"

    def __init__(
        self,
        message: str,
        *,
        what: str,
        fix: str,
        line: int | None = None,
        column: int | None = None,
        target: str | None = None,
    ) -> None:
        super().__init__(message, fix=fix, target=target)
        self.what = what
        self.line = line
        self.column = column

    def _extra(self) -> dict[str, Any]:
        return {"target": self.target, "what": self.what, "line": self.line, "column": self.column}


class SignatureChangedError(SpliceError):
    """The new code changes a signature that ``protect=`` freezes, or changes it in a way the
    ``"additive"`` policy does not allow. ``old`` and ``new`` are the rendered signatures and
    ``reasons`` lists each difference."""

    title = "signature changed"

    def __init__(
        self,
        target: str,
        *,
        old: str,
        new: str | None,
        reasons: list[str],
        policy: str,
    ) -> None:
        self.old = old
        self.new = new
        self.reasons = list(reasons)
        self.policy = policy
        why = "it is protected" if policy == "protect" else "the policy is 'additive'"
        lines = [
            f"the new code changes the signature of {target}, but {why}:",
            f"    old: {old}",
            f"    new: {new if new is not None else '(missing from the new code)'}",
            *(f"    - {r}" for r in reasons),
        ]
        if policy == "protect":
            fix = (
                f"keep the signature of {target} exactly as it was (only the body may change), "
                "or drop it from protect= (--protect) if the change is intended"
            )
        else:
            fix = (
                "keep every existing parameter (name, kind, default, annotation), decorator and "
                "the return annotation; only add parameters that have defaults, keyword-only "
                "parameters with defaults, *args or **kwargs; or drop policy='additive' "
                "(--additive)"
            )
        super().__init__("\n".join(lines), fix=fix, target=target)

    def _extra(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "old": self.old,
            "new": self.new,
            "reasons": self.reasons,
            "policy": self.policy,
        }


class DefinitionRenamedError(SpliceError):
    """``replace(..., rename=False)`` was given new code whose definition has another name:
    callers using the old name would break. ``old`` and ``new`` are the qualified names."""

    title = "definition renamed"

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new
        short = old.rsplit(".", 1)[-1]
        super().__init__(
            f"the new code renames {old} to {new}; nothing was changed",
            fix=f"to rename it, allow it (rename=True; CLI: --rename) and update the callers of "
            f"{old}; to keep the name, name the new definition {short!r}",
            target=old,
        )

    def _extra(self) -> dict[str, Any]:
        return {"target": self.target, "old": self.old, "new": self.new}
