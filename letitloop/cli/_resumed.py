"""What ``lil runs resume`` and ``lil runs fork --run`` say around a run they continue.

Resuming imports the workflow's module and calls user code in this process, so two things
belong to the user, not to ``lil``: the module's top-level code (a note says it runs again, only
when the module has code outside definitions and a ``__main__`` guard), and an exception the
workflow raises (shown in the house format, ``error:`` and ``fix:``, with the user's frames only:
no click or letitloop frames).
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path
from typing import Any, NoReturn

from letitloop.cli import _output as out

_NOT_USER = tuple(
    str(Path(mod.__file__).resolve().parent) + os.sep
    for mod in (__import__("letitloop"), __import__("click"))
    if mod.__file__
)
_MAX_FRAMES = 8


def note_imports(entry: str | None) -> None:
    """Say before importing that the module's top-level code runs again, when it has any."""
    if not entry:
        return
    where = entry.rpartition(":")[0]
    if not _runs_code_on_import(where):
        return
    out.stderr_write(
        f"note: resuming imports {where}; its top-level code runs again (code outside "
        'an `if __name__ == "__main__":` guard, such as a call of the workflow, runs too)'
    )


def _runs_code_on_import(where: str) -> bool:
    """Whether importing ``where`` (a script path or a module name) calls anything beyond its
    imports, definitions and a ``__main__`` guard. Unknown (no source): assume it does."""
    import ast

    try:
        if where.endswith(".py"):
            source = Path(where).read_text(encoding="utf-8")
        else:
            import importlib.util
            import sys

            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())  # where resume_run will import it from
            spec = importlib.util.find_spec(where)
            if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
                return True
            source = Path(spec.origin).read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError, ImportError):
        return True
    quiet = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if isinstance(node, quiet) or _is_main_guard(node):
            continue
        if any(isinstance(sub, ast.Call) for sub in ast.walk(node)):
            return True
    return False


def _is_main_guard(node: Any) -> bool:
    import ast

    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    sides = [node.test.left, *node.test.comparators]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    values = {s.value for s in sides if isinstance(s, ast.Constant)}
    return names == {"__name__"} and values == {"__main__"}


def suspended(run_id: str, exc: Any, as_json: bool, what: str = "suspended again") -> NoReturn:
    """A resumed run that suspended: say why, then exit 3."""
    if as_json:
        out.emit_json({"run_id": run_id, "status": "suspended", "reason": exc.message})
    else:
        fix = [out.text(f"  fix: {exc.fix}")] if exc.fix else []
        out.say(out.text(f"{run_id} {what}", "bold blue"), out.text(exc.message), *fix, sep="\n")
    raise SystemExit(3)


def failed(run_id: str, exc: BaseException, as_json: bool) -> NoReturn:
    """A resumed run whose workflow raised: ``error:``, the user's frames, ``fix:``; exit 1."""
    kind = type(exc).__name__
    message = getattr(exc, "message", None) or str(exc) or kind
    fix = getattr(exc, "fix", None) or (
        f"fix the cause, then `lil runs resume {run_id}` again: the journaled steps replay and "
        "the failed step runs again"
    )
    if as_json:
        error = {"type": kind, "message": message, "fix": fix}
        out.emit_json({"run_id": run_id, "status": "failed", "error": error})
    lines = [f"error: run {run_id} failed: {kind}: {message}"]
    frames = user_frames(exc)
    if frames:
        lines.append("  in your code (most recent call last):")
        lines += ["  " + line for frame in frames for line in frame.rstrip("\n").split("\n")]
    lines.append(f"  fix: {fix}")
    out.stderr_write("\n".join(lines))
    raise SystemExit(1)


def user_frames(exc: BaseException) -> list[str]:
    """The traceback's frames outside letitloop, click and the import machinery, formatted (at
    most the last few)."""
    kept = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith(("<frozen", *_NOT_USER))
    ]
    return traceback.format_list(kept[-_MAX_FRAMES:])
