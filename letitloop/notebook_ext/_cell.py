"""Running a notebook cell as a durable run.

The cell's code runs in the notebook's namespace inside a durable run named after the magic's
argument and the notebook, so two notebooks never share a run. Every execution replays what the
journal holds (a completed run too, ``reopen``), which is what binds the cell's names again
after a kernel restart; an edited cell keeps its longest unchanged prefix of steps and runs from
the first changed one (``on_change="rerun"``; ``--strict`` raises instead). ``approval()``
never blocks in a cell: it journals the request and the cell ends *suspended*, showing an
``ApprovalWidget`` whose decision continues the run in the same kernel.

This module drives the runtime itself, so it is the one place in the notebook extension that
uses the runtime's own machinery (through its face, ``letitloop.kernel``): ``run_workflow`` (a
durable call of the cell's body with the magic's options), ``may_wait`` (an approval never
blocks a cell) and the options' ``fields``. Which run a cell continues is operate's rule
(``operate.claim``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from letitloop import Budget, DurableOptions, operate
from letitloop.errors import ApprovalPending, JournalError, Suspended
from letitloop.journal import who
from letitloop.kernel import fields, may_wait, replace, run_workflow
from letitloop.notebook_ext._base import journal_of
from letitloop.operate import notebook_identity, path_key, remembered_claim

__all__ = [
    "CellRun",
    "Outcome",
    "execute",
    "last_cell",
    "last_run",
    "notebook_identity",
    "run_cell",
]
_LAST: dict[int, tuple[str, Any]] = {}  # id(shell) -> (run, journal) of its last %%durable cell


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
        """The run key: ``--run-id``, else the notebook's name plus a hash of its path (before
        adoption of a renamed notebook's run: see ``operate.claim``)."""
        return self.run_id or path_key(notebook)

    def options(self, notebook: str, key: str | None = None) -> DurableOptions:
        budget = None
        if self.budget_usd is not None or self.budget_tokens is not None:
            budget = Budget(usd=self.budget_usd, tokens=self.budget_tokens)
        return DurableOptions(
            name=self.workflow,
            run_id=key or self.key(notebook),
            journal=self.journal,
            budget=budget,
            on_change="raise" if self.strict else "rerun",
            reopen=True,
            ignore_args=True,  # the run key names the cell's run; its argument is only a note
        )


def execute(shell: Any, code: str) -> Any:
    """Run cell code (IPython syntax allowed) in the user namespace; return the value of a final
    expression, as a cell would display it."""
    source = shell.transform_cell(code)
    tree = ast.parse(source)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    number = getattr(shell, "execution_count", 1)  # already counted up for the running cell
    number = max(0, number - 1) if isinstance(number, int) else 0  # tracebacks: "Cell In[n]"
    filename = shell.compile.cache(source, number, code)
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


def run_cell(
    shell: Any,
    cell: CellRun,
    journal: Any = None,
    announce: Callable[[str], None] | None = None,
) -> Outcome:
    """Run the cell durably; a pending approval ends it as suspended (``Outcome.pending``).

    ``announce`` hears, before the run starts, a note the user should see (this notebook
    continues the run of a renamed one); by default it is printed."""
    notebook = notebook_identity(shell)
    resolved = journal_of(journal if journal is not None else cell.journal)
    kwargs: dict[str, Any] = {}
    key = cell.run_id
    if key is None:  # the notebook's own run, one it adopts, or a new one: see _notebook
        found = remembered_claim(resolved, cell.workflow, notebook)
        key = found.key
        kwargs["notebook"] = notebook  # journaled: which notebook this run belongs to now
        if found.note is not None:
            (announce or print)(found.note)
    opts = replace(cell.options(notebook, key), journal=resolved)
    shown: list[Any] = [None]

    def body(**_where: Any) -> None:  # the run's result stays None: a cell's value need not
        shown[0] = execute(shell, cell.code)  # be journaled (its argument names the notebook)

    run_id = f"{opts.name}:{opts.run_id}"
    _LAST[id(shell)] = (run_id, resolved)
    if cell.fresh:
        _reset(opts, run_id)
    token = may_wait.set(False)
    try:
        run_workflow(body, (), kwargs, **_as_kwargs(opts))
    except ApprovalPending as exc:
        return Outcome(pending=exc, run_id=run_id)
    except Suspended:
        raise
    finally:
        may_wait.reset(token)
    return Outcome(shown[0], run_id=run_id)


def last_run(shell: Any, journal: Any = None) -> str | None:
    """The run of this notebook's last ``%%durable`` cell: the last one run in this kernel, else
    (after a restart) the most recently updated run that this notebook's cells journaled."""
    return last_cell(shell, journal)[0]


def last_cell(shell: Any, journal: Any = None) -> tuple[str | None, Any]:
    """``(run id, journal)`` of the notebook's last ``%%durable`` cell (see ``last_run``); the
    journal is the one that cell used unless ``journal`` names another."""
    if id(shell) in _LAST:
        run_id, used = _LAST[id(shell)]
        if journal is None or journal_of(journal) is used:
            return run_id, used
    notebook = notebook_identity(shell)
    resolved = journal_of(journal)
    for info in resolved.list_runs(limit=1 << 30):  # newest first
        if (
            info.workflow.startswith("cell.")
            and operate.owner_of(resolved, info.run_id) == notebook
        ):
            return info.run_id, resolved
    return None, resolved


def _as_kwargs(opts: DurableOptions) -> dict[str, Any]:
    return {f: getattr(opts, f) for f in fields(opts)}


def _reset(opts: DurableOptions, run_id: str) -> None:
    """``--fresh``: start the run over in a new epoch (``operate.reset_run``; the old epoch
    stays in the journal)."""
    journal = journal_of(opts.journal)
    try:
        journal.find_run(run_id)
    except JournalError:
        return  # no such run yet: nothing to start over
    operate.reset_run(journal, run_id, by=who())
