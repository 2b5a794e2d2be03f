"""letitloop: crash-proof functions, notebook cells and AI-agent pipelines on a local journal.

    from letitloop import durable, step, atomic_marker

Names are resolved lazily (PEP 562) so ``import letitloop`` stays close to a bare interpreter.
"""

from __future__ import annotations

from letitloop._lazy import lazy_exports
from letitloop._version import __version__ as __version__

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing alone costs several ms

_EXPORTS = {
    "durable": "letitloop.kernel._runtime",
    "durable_async": "letitloop.kernel._runtime",
    "step": "letitloop.kernel._steps",
    "async_step": "letitloop.kernel._steps",
    "atomic_marker": "letitloop.kernel._marker",
    "current_step": "letitloop.kernel._context",
    "open_journal": "letitloop.journal",
    "MemoryJournal": "letitloop.journal._memory",
    "DurableOptions": "letitloop.kernel._options",
    "LetItLoopError": "letitloop.errors",
    "NonDeterminismError": "letitloop.errors",
    "InDoubtError": "letitloop.errors",
    "RunLockedError": "letitloop.errors",
    "RunArgumentsError": "letitloop.errors",
    "DeadLetteredError": "letitloop.errors",
    "Retry": "letitloop.kernel._policy",
    "Invalid": "letitloop.kernel._policy",
    "StepOptions": "letitloop.kernel._policy",
    "record_cost": "letitloop.kernel._cost",
    "set_prices": "letitloop.kernel._cost",
    "Budget": "letitloop.kernel._policy",
    "Limit": "letitloop.kernel._limits",
    "BudgetExceeded": "letitloop.errors",
    "Suspended": "letitloop.errors",
    "ApprovalPending": "letitloop.errors",
    "blackboard": "letitloop.memory._board",
    "approval": "letitloop.kernel._human",
    "async_approval": "letitloop.kernel._human",
    "suspend": "letitloop.kernel._human",
    "Decision": "letitloop.kernel._human",
    "supervise": "letitloop.kernel._supervise",
    "Queue": "letitloop.kernel._queue",
    "RunHandle": "letitloop.kernel._queue",
    "fork_run": "letitloop.kernel._fork",
    "run_fork": "letitloop.kernel._fork",
    "fork_thread": "letitloop.kernel._fork",
    "runs": "letitloop.notebook_ext._render",
    "report": "letitloop.notebook_ext._report",
    "load_ipython_extension": "letitloop.notebook_ext",
    "unload_ipython_extension": "letitloop.notebook_ext",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from letitloop.errors import (
        ApprovalPending as ApprovalPending,
        BudgetExceeded as BudgetExceeded,
        DeadLetteredError as DeadLetteredError,
        InDoubtError as InDoubtError,
        LetItLoopError as LetItLoopError,
        NonDeterminismError as NonDeterminismError,
        RunArgumentsError as RunArgumentsError,
        RunLockedError as RunLockedError,
        Suspended as Suspended,
    )
    from letitloop.journal import (
        open_journal as open_journal,
    )
    from letitloop.journal._memory import (
        MemoryJournal as MemoryJournal,
    )
    from letitloop.kernel._context import (
        current_step as current_step,
    )
    from letitloop.kernel._cost import (
        record_cost as record_cost,
        set_prices as set_prices,
    )
    from letitloop.kernel._fork import (
        fork_run as fork_run,
        fork_thread as fork_thread,
        run_fork as run_fork,
    )
    from letitloop.kernel._human import (
        Decision as Decision,
        approval as approval,
        async_approval as async_approval,
        suspend as suspend,
    )
    from letitloop.kernel._limits import (
        Limit as Limit,
    )
    from letitloop.kernel._marker import (
        atomic_marker as atomic_marker,
    )
    from letitloop.kernel._options import (
        DurableOptions as DurableOptions,
    )
    from letitloop.kernel._policy import (
        Budget as Budget,
        Invalid as Invalid,
        Retry as Retry,
        StepOptions as StepOptions,
    )
    from letitloop.kernel._queue import (
        Queue as Queue,
        RunHandle as RunHandle,
    )
    from letitloop.kernel._runtime import (
        durable as durable,
        durable_async as durable_async,
    )
    from letitloop.kernel._steps import (
        async_step as async_step,
        step as step,
    )
    from letitloop.kernel._supervise import (
        supervise as supervise,
    )
    from letitloop.memory._board import (
        blackboard as blackboard,
    )
    from letitloop.notebook_ext import (
        load_ipython_extension as load_ipython_extension,
        unload_ipython_extension as unload_ipython_extension,
    )
    from letitloop.notebook_ext._render import (
        runs as runs,
    )
    from letitloop.notebook_ext._report import (
        report as report,
    )


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
