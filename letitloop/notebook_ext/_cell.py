"""Running a notebook cell as a durable run.

The cell's code runs in the notebook's namespace inside a durable run named after the magic's
argument and the notebook, so two notebooks never share a run. Every execution replays what the
journal holds (a completed run too, ``reopen``), which is what binds the cell's names again
after a kernel restart; an edited cell keeps its longest unchanged prefix of steps and runs from
the first changed one (``on_change="rerun"``; ``--strict`` raises instead). ``approval()``
never blocks in a cell: it journals the request and the cell ends *suspended*, showing an
``ApprovalWidget`` whose decision continues the run in the same kernel.
"""

from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import dataclass, replace
from typing import Any

from letitloop.kernel._errors import ApprovalPending, Suspended
from letitloop.kernel._human import may_wait
from letitloop.kernel._options import DurableOptions
from letitloop.kernel._policy import Budget
from letitloop.kernel._runtime import run_workflow


@dataclass(frozen=True)
class CellRun:
    """One ``%%durable`` cell: what the magic line said, and the cell's code."""

    name: str
    code: str
    run_id: str | None = None
    fresh: bool = False
    strict: bool = False
    journal: str | None = None
    budget_usd: float | None = None
    budget_tokens: int | None = None
    progress: bool = True

    @property
    def workflow(self) -> str:
        return f"cell.{self.name}"

    def key(self, notebook: str) -> str:
        """The run key: ``--run-id``, else the notebook's name plus a hash of its path."""
        if self.run_id:
            return self.run_id
        stem = os.path.splitext(os.path.basename(notebook))[0] or "notebook"
        digest = hashlib.sha256(notebook.encode()).hexdigest()[:8]
        return f"{stem}-{digest}"

    def options(self, notebook: str) -> DurableOptions:
        budget = None
        if self.budget_usd is not None or self.budget_tokens is not None:
            budget = Budget(usd=self.budget_usd, tokens=self.budget_tokens)
        return DurableOptions(
            name=self.workflow,
            run_id=self.key(notebook),
            journal=self.journal,
            budget=budget,
            on_change="raise" if self.strict else "rerun",
            reopen=True,
        )


def notebook_identity(shell: Any) -> str:
    """Which notebook this kernel runs: JupyterLab's session path, VS Code's file, else cwd."""
    for value in (
        os.environ.get("JPY_SESSION_NAME"),
        shell.user_ns.get("__session__"),
        shell.user_ns.get("__vsc_ipynb_file__"),
    ):
        if isinstance(value, str) and value:
            return os.path.abspath(value)
    return os.path.join(os.getcwd(), "ipython")


def execute(shell: Any, code: str) -> Any:
    """Run cell code (IPython syntax allowed) in the user namespace; return the value of a final
    expression, as a cell would display it."""
    source = shell.transform_cell(code)
    tree = ast.parse(source)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    filename = shell.compile.cache(source)
    exec(compile(tree, filename, "exec"), shell.user_ns)  # the cell's own code, as IPython does
    if last is not None:
        return eval(compile(last, filename, "eval"), shell.user_ns)
    return None


class Outcome:
    """What running a cell gave: the displayed value, or the approval it stopped at."""

    def __init__(
        self, value: Any = None, pending: ApprovalPending | None = None, run_id: str = ""
    ) -> None:
        self.value = value
        self.pending = pending
        self.run_id = run_id


def run_cell(shell: Any, cell: CellRun, journal: Any = None) -> Outcome:
    """Run the cell durably; a pending approval ends it as suspended (``Outcome.pending``)."""
    notebook = notebook_identity(shell)
    opts = cell.options(notebook)
    if journal is not None:
        opts = replace(opts, journal=journal)
    shown: list[Any] = [None]

    def body() -> None:  # the run's result stays None: a cell's value need not be journaled
        shown[0] = execute(shell, cell.code)

    run_id = f"{opts.name}:{opts.run_id}"
    if cell.fresh:
        _reset(opts, run_id)
    token = may_wait.set(False)
    try:
        run_workflow(body, (), {}, **_as_kwargs(opts))
    except ApprovalPending as exc:
        return Outcome(pending=exc, run_id=run_id)
    except Suspended:
        raise
    finally:
        may_wait.reset(token)
    return Outcome(shown[0], run_id=run_id)


def _as_kwargs(opts: DurableOptions) -> dict[str, Any]:
    return {f: getattr(opts, f) for f in opts.__dataclass_fields__}


def _reset(opts: DurableOptions, run_id: str) -> None:
    """``--fresh``: start the run over in a new epoch (the old one stays in the journal)."""
    from letitloop.journal._config import who
    from letitloop.kernel._errors import JournalError
    from letitloop.kernel._runtime import resolve_journal

    journal = resolve_journal(opts.journal)
    try:
        journal.reset_run(journal.find_run(run_id), by=who())
    except JournalError:
        pass  # no such run yet: nothing to start over
