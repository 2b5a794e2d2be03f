"""The ``%%durable NAME`` cell magic: parse the line, run the cell durably, show what happened.

    %%durable ingest [--run-id ID] [--fresh] [--strict] [--budget-usd N] [--budget-tokens N]
                     [--journal PATH] [--quiet]

Unknown options are a ``UsageError`` with the usage line. A cell that stops at an approval shows
an ``ApprovalWidget``; deciding there (or anywhere else) continues the run below the widget.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from letitloop.errors import (
    DeadLetteredError,
    LetItLoopError,
    NonDeterminismError,
    Suspended,
)
from letitloop.notebook_ext._base import journal_of
from letitloop.notebook_ext._cell import CellRun, Outcome, last_run, run_cell
from letitloop.notebook_ext._failure import root_cause, tidy
from letitloop.notebook_ext._progress import Progress


@magics_class
class DurableMagics(Magics):
    """``%%durable``: see the module docstring."""

    @magic_arguments()
    @argument("name", help="the run's name: one per cell (with the notebook, it names the run)")
    @argument("--run-id", help="a fixed run key instead of one derived from the notebook")
    @argument("--fresh", action="store_true", help="start the run over (a new epoch)")
    @argument("--strict", action="store_true", help="a changed cell raises, as in scripts")
    @argument("--budget-usd", type=float, help="what the run may spend, in US dollars")
    @argument("--budget-tokens", type=int, help="what the run may spend, in tokens")
    @argument("--journal", help="journal path (default: found as for @durable)")
    @argument("--quiet", action="store_true", help="no live progress view")
    @cell_magic
    def durable(self, line: str, cell: str) -> Any:
        """Run the cell as a durable run: kill the kernel, run the cell again, and finished steps
        replay from the journal while the cell's names are bound again."""
        __tracebackhide__ = True
        args = parse_argstring(self.durable, line)
        if not args.name.isidentifier():
            raise UsageError(
                f"%%durable NAME: the name must be an identifier like ingest_docs, got "
                f"{args.name!r}"
            )
        spec = CellRun(
            name=args.name,
            code=cell,
            run_id=args.run_id,
            fresh=args.fresh,
            strict=args.strict,
            journal=args.journal,
            budget_usd=args.budget_usd,
            budget_tokens=args.budget_tokens,
            progress=not args.quiet,
        )
        return run_and_show(self.shell, spec)


def run_and_show(
    shell: Any, spec: CellRun, fresh_allowed: bool = True, offer_retry: bool = True
) -> Any:
    """Run the cell with a progress view; on a pending approval, show its widget. A failure
    shows the user's frames and its root cause, and (``offer_retry``) a Retry button."""
    __tracebackhide__ = True  # IPython hides the frames that set it
    live = None if fresh_allowed else False  # a continuation prints into the widget's output
    progress = Progress(spec.name, shell, live=live) if spec.progress else None
    try:
        with Progress.observing(progress):
            outcome: Outcome = run_cell(
                shell, spec if fresh_allowed else _no_fresh(spec), announce=_show_note
            )
    except NonDeterminismError as exc:  # only with --strict: say what a cell user can do
        raise tidy(
            shell,
            NonDeterminismError(
                exc.message,
                fix="run the cell without --strict to rerun from the first changed step, or with "
                "--fresh to start the run over",
                run_id=exc.run_id,
                step=exc.step,
                position=exc.position,
            ),
        ) from None
    except Suspended as exc:  # a budget stop: not a failure, nothing to retry
        raise tidy(shell, exc) from None
    except (Exception, KeyboardInterrupt) as exc:
        try:
            journal: Any = journal_of(spec.journal)
        except LetItLoopError:
            journal = None  # the journal itself failed: nothing to look up, nothing to retry
        tidy(shell, exc, journal)
        if offer_retry and journal is not None and not isinstance(exc, KeyboardInterrupt):
            _offer_retry(shell, spec, journal, exc)
        raise
    finally:
        if progress is not None:
            progress.finish()
    if outcome.pending is not None:  # the cell's output: decide here, and the run goes on below
        from letitloop.notebook_ext._widgets import ApprovalWidget

        return ApprovalWidget(
            outcome.pending.approval_id,
            journal=spec.journal,
            on_decided=lambda _row: run_and_show(shell, spec, fresh_allowed=False),
        )
    return outcome.value


def _offer_retry(shell: Any, spec: CellRun, journal: Any, exc: BaseException) -> None:
    """Show a Retry button under a failed or dead-lettered cell (the error follows it)."""
    from IPython.display import display

    from letitloop.notebook_ext._widgets import RetryWidget

    try:
        run_id = last_run(shell, journal)
        status = journal.get_run(run_id).run.status if run_id is not None else None
    except LetItLoopError:
        return

    position = exc.position if isinstance(exc, DeadLetteredError) else None
    if run_id is None or (status != "failed" and position is None):
        return
    display(
        RetryWidget(
            run_id,
            journal=journal,
            position=position,
            cause=root_cause(exc),
            on_retry=lambda: run_and_show(shell, spec, fresh_allowed=False, offer_retry=False),
        )
    )


def _show_note(text: str) -> None:
    """A note above the cell's output (this notebook continues a renamed notebook's run)."""
    import html

    from IPython.display import display

    bundle = {
        "text/plain": f"note: {text}",
        "text/html": (
            "<div class='lil-note' style='border-left:3px solid #0969da;padding:2px 8px;"
            f"margin:2px 0'><b>note</b> {html.escape(text)}</div>"
        ),
    }
    display(bundle, raw=True)


def _no_fresh(spec: CellRun) -> CellRun:
    from dataclasses import replace

    return replace(spec, fresh=False)  # continuing after a decision must not start over
