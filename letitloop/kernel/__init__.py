"""The durable runtime's face: runs, steps, markers, policies, approvals, forks, resume, watch.

Everything above the runtime (the operate layer, the front ends, the adapters, the task runner,
the splicer) imports these names from here, never from the private modules behind them; user code
imports the front door (``from letitloop import durable, step``). Names resolve lazily, so
``from letitloop import durable, step`` pays only for the modules it uses.

The runtime speaks only the journal's face (``letitloop.journal``): it imports no backend, no
operate layer and no front end, and no heavy optional dependency (tests/test_layering.py).
"""

from __future__ import annotations

from letitloop._lazy import lazy_exports

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker

_EXPORTS = {
    **dict.fromkeys(
        (
            "durable",
            "durable_async",
            "resolve_journal",
            "codec_for",
            "run_workflow",
            "run_child_async",
        ),
        "letitloop.kernel._runtime",
    ),
    **dict.fromkeys(("step", "async_step", "code_digest"), "letitloop.kernel._steps"),
    **dict.fromkeys(("atomic_marker",), "letitloop.kernel._marker"),
    **dict.fromkeys(("Queue", "RunHandle"), "letitloop.kernel._queue"),
    **dict.fromkeys(
        ("Worker", "WorkerOptions", "execute_item", "default_ttl"), "letitloop.kernel._worker"
    ),
    **dict.fromkeys(
        (
            "current_step",
            "current_run",
            "current_step_var",
            "observer_var",
            "RunContext",
            "StepInfo",
        ),
        "letitloop.kernel._context",
    ),
    **dict.fromkeys(("DurableOptions",), "letitloop.kernel._options"),
    **dict.fromkeys(
        (
            "Retry",
            "Invalid",
            "StepOptions",
            "Budget",
            "STEP_KEYWORDS",
            "usd_micros",
            "budget_tokens",
        ),
        "letitloop.kernel._policy",
    ),
    **dict.fromkeys(("record_cost",), "letitloop.kernel._cost"),
    **dict.fromkeys(("Limit",), "letitloop.kernel._limits"),
    **dict.fromkeys(
        ("approval", "async_approval", "suspend", "Decision", "may_wait"), "letitloop.kernel._human"
    ),
    **dict.fromkeys(("supervise",), "letitloop.kernel._supervise"),
    **dict.fromkeys(
        ("fork_run", "run_fork", "fork_thread", "ForkedRun", "describe_origin"),
        "letitloop.kernel._fork",
    ),
    **dict.fromkeys(("resume_run", "resume_refusal", "load_entry"), "letitloop.kernel._resume"),
    **dict.fromkeys(("MapUpdate", "map_observer_var"), "letitloop.kernel._fanout"),
    **dict.fromkeys(("fields", "replace", "frozen"), "letitloop.kernel._frozen"),
    **dict.fromkeys(("RestartPolicy",), "letitloop.kernel._restarts"),
    **dict.fromkeys(("watch", "runs_started_by"), "letitloop.kernel._watch"),
    **dict.fromkeys(("use_tracer_provider",), "letitloop.kernel._tracing"),
    **dict.fromkeys(("Codec",), "letitloop.kernel._codec"),
    **dict.fromkeys(("fingerprint",), "letitloop.kernel._fingerprint"),
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from letitloop.kernel._codec import (
        Codec as Codec,
    )
    from letitloop.kernel._context import (
        RunContext as RunContext,
        StepInfo as StepInfo,
        current_run as current_run,
        current_step as current_step,
        current_step_var as current_step_var,
        observer_var as observer_var,
    )
    from letitloop.kernel._cost import (
        record_cost as record_cost,
    )
    from letitloop.kernel._fanout import (
        MapUpdate as MapUpdate,
        map_observer_var as map_observer_var,
    )
    from letitloop.kernel._fingerprint import (
        fingerprint as fingerprint,
    )
    from letitloop.kernel._fork import (
        ForkedRun as ForkedRun,
        describe_origin as describe_origin,
        fork_run as fork_run,
        fork_thread as fork_thread,
        run_fork as run_fork,
    )
    from letitloop.kernel._frozen import (
        fields as fields,
        frozen as frozen,
        replace as replace,
    )
    from letitloop.kernel._human import (
        Decision as Decision,
        approval as approval,
        async_approval as async_approval,
        may_wait as may_wait,
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
        STEP_KEYWORDS as STEP_KEYWORDS,
        Budget as Budget,
        Invalid as Invalid,
        Retry as Retry,
        StepOptions as StepOptions,
        budget_tokens as budget_tokens,
        usd_micros as usd_micros,
    )
    from letitloop.kernel._queue import (
        Queue as Queue,
        RunHandle as RunHandle,
    )
    from letitloop.kernel._restarts import (
        RestartPolicy as RestartPolicy,
    )
    from letitloop.kernel._resume import (
        load_entry as load_entry,
        resume_refusal as resume_refusal,
        resume_run as resume_run,
    )
    from letitloop.kernel._runtime import (
        codec_for as codec_for,
        durable as durable,
        durable_async as durable_async,
        resolve_journal as resolve_journal,
        run_child_async as run_child_async,
        run_workflow as run_workflow,
    )
    from letitloop.kernel._steps import (
        async_step as async_step,
        code_digest as code_digest,
        step as step,
    )
    from letitloop.kernel._supervise import (
        supervise as supervise,
    )
    from letitloop.kernel._tracing import (
        use_tracer_provider as use_tracer_provider,
    )
    from letitloop.kernel._watch import (
        runs_started_by as runs_started_by,
        watch as watch,
    )
    from letitloop.kernel._worker import (
        Worker as Worker,
        WorkerOptions as WorkerOptions,
        default_ttl as default_ttl,
        execute_item as execute_item,
    )


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
