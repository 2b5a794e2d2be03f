"""Acceptance checks run after each attempt, and the critique the next attempt gets from them.

Each check returns a ``CheckResult``: its label, whether it passed, and what failed, in words an
agent can act on. Files are named by the task's globs and looked up in the snapshot taken after
the attempt; "before" means the tree when the task started (so a heading or a protected
signature is compared with the original, not with an earlier attempt's edit).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from letitloop.tasks import _markdown, _tree
from letitloop.tasks._model import Check, TaskSpec
from letitloop.tasks._tree import Snapshot

_OUTPUT_TAIL = 3000


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict; ``detail`` says what failed (empty when it passed)."""

    name: str
    ok: bool
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_checks(
    task: TaskSpec, root: Path, origin: Snapshot, now: Snapshot, changed: list[str]
) -> list[CheckResult]:
    """Every check of the task (plus a signature check when it protects any), in order."""
    checks = list(task.checks)
    if task.protect and not any(c.kind == "signatures" for c in checks):
        checks.append(Check("signatures", name="protected signatures", protect=task.protect))
    return [_run(c, task, root, origin, now, changed) for c in checks]


def critique(results: list[dict[str, Any]]) -> str | None:
    """The feedback for the next attempt: each failed check and why; None if all passed."""
    failed = [r for r in results if not r["ok"]]
    if not failed:
        return None
    lines = ["The previous attempt did not pass these acceptance checks:"]
    lines += [f"- {r['name']}: {r['detail']}" for r in failed]
    lines.append("Fix them, and keep what already passes.")
    return "\n".join(lines)


def _run(
    check: Check, task: TaskSpec, root: Path, origin: Snapshot, now: Snapshot, changed: list[str]
) -> CheckResult:
    label = check.label
    try:
        problems = _KINDS[check.kind](check, task, root, origin, now, changed)
    except Exception as exc:  # a check that cannot run is a failed check, said plainly
        problems = [f"the check could not run: {type(exc).__name__}: {exc}"]
    return CheckResult(label, not problems, "; ".join(problems))


def _files(check: Check, now: Snapshot, default: list[str]) -> list[str]:
    """The files a check looks at (symbolic links are not files to check, nor followed)."""
    if not check.paths:
        return default
    return sorted(p for p in now if _tree.allowed(p, check.paths) and not _tree.is_link(now[p]))


def _text(now: Snapshot, path: str) -> str | None:
    entry = now.get(path)
    return entry[1] if entry else None


def _python(
    check: Check, task: TaskSpec, root: Path, o: Snapshot, now: Snapshot, ch: list[str]
) -> list[str]:
    out = []
    for path in _files(check, now, [p for p in ch if p.endswith(".py") and p in now]):
        text = _text(now, path)
        if text is None:
            continue
        try:
            compile(text, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            out.append(f"{path}:{exc.lineno}: {exc.msg}")
    return out


def _command(
    check: Check, task: TaskSpec, root: Path, o: Snapshot, now: Snapshot, ch: list[str]
) -> list[str]:
    from letitloop.tasks._agents import run_process

    try:
        code, out, err, timed_out = run_process(list(check.run), root, None, check.timeout)
    except FileNotFoundError:
        return [f"{check.run[0]} is not installed (not on PATH)"]
    except OSError as exc:
        return [f"{check.run[0]} cannot start: {exc}"]
    if timed_out:
        return [f"ran past its timeout of {check.timeout:g} s"]
    if code == 0:
        return []
    output = (out + err).decode("utf-8", "replace").strip()
    if len(output) > _OUTPUT_TAIL:
        output = "…" + output[-_OUTPUT_TAIL:]
    return [f"exited {code}" + (f", output:\n{output}" if output else "")]


def _regex(
    check: Check, task: TaskSpec, root: Path, o: Snapshot, now: Snapshot, ch: list[str]
) -> list[str]:
    files = _files(check, now, [])
    if not files:
        return [f"no file matches {', '.join(check.paths)}"] if check.present else []
    rx = re.compile(check.pattern, re.M)
    out = []
    for path in files:
        text = _text(now, path) or ""
        m = rx.search(text)
        if check.present and m is None:
            out.append(f"{path} does not match /{check.pattern}/")
        elif not check.present and m is not None:
            line = text.count("\n", 0, m.start()) + 1
            out.append(f"{path}:{line} matches /{check.pattern}/, which must be absent")
    return out


def _exists(
    check: Check, task: TaskSpec, root: Path, o: Snapshot, now: Snapshot, ch: list[str]
) -> list[str]:
    files = [p for p in now if not _tree.is_link(now[p])]
    return [
        f"no file {g} exists" for g in check.paths if not any(_tree.allowed(p, (g,)) for p in files)
    ]


def _size(
    check: Check, task: TaskSpec, root: Path, o: Snapshot, now: Snapshot, ch: list[str]
) -> list[str]:
    out = []
    files = _files(check, now, [])
    if not files:
        return [f"no file matches {', '.join(check.paths)}"]
    for path in files:
        size = (root / path).lstat().st_size  # a regular file in the snapshot: not followed
        if check.min_bytes is not None and size < check.min_bytes:
            out.append(f"{path} is {size} bytes, less than {check.min_bytes}")
        if check.max_bytes is not None and size > check.max_bytes:
            out.append(f"{path} is {size} bytes, more than {check.max_bytes}")
    return out


def _markdown_check(
    check: Check, task: TaskSpec, root: Path, o: Snapshot, now: Snapshot, ch: list[str]
) -> list[str]:
    default = [p for p in ch if p.lower().endswith((".md", ".markdown")) and p in now]
    out = []
    for path in _files(check, now, default):
        text = _text(now, path)
        if text is not None:
            out += _markdown.problems(path, _text(o, path), text, root, check.rules)
    return out


def _signatures(
    check: Check, task: TaskSpec, root: Path, o: Snapshot, now: Snapshot, ch: list[str]
) -> list[str]:
    """The receipts' signature check, between the tree when the task began and now."""
    from letitloop.receipts._signatures import compare, entry_of, normalize, parse_spec

    out = []
    for spec in normalize(list(check.protect or task.protect)):
        path, qualname = parse_spec(spec)
        old_text, new_text = _text(o, path), _text(now, path)
        if old_text is None:
            continue  # nothing to protect yet
        if new_text is None:
            out.append(f"{spec}: {path} was removed")
            continue
        old = entry_of(old_text, qualname, spec=spec, where=f"{path} before the task")
        try:
            new = entry_of(new_text, qualname, spec=spec, where=f"{path} now")
        except Exception as exc:
            out.append(f"{spec}: {getattr(exc, 'message', exc)}")
            continue
        if reasons := compare(old, new, additive=False):
            out.append(f"{spec} changed its signature: {', '.join(reasons)}")
    return out


_KINDS = {
    "python": _python,
    "command": _command,
    "regex": _regex,
    "exists": _exists,
    "size": _size,
    "markdown": _markdown_check,
    "signatures": _signatures,
}
