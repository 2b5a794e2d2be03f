"""OpenTelemetry spans for runs and steps, only when tracing is asked for.

Tracing is on when ``opentelemetry-api`` is importable and either ``LIL_OTEL=1`` is set, a
provider was given to ``use_tracer_provider``, or the application already installed a global
tracer provider (seen in ``sys.modules`` without importing anything). Otherwise nothing from
OpenTelemetry is imported, and a step pays one check of the module flag ``ACTIVE``.

A run is a span ``invoke_workflow {workflow}``; each step attempt a child span ``step {name}``;
replayed and cache-hit steps are short spans marked so. The first attempt's root span context
is journaled (as a cache entry under ``lil.trace:{run}:{epoch}``, a record every backend keeps),
so a resumed run starts a new trace that links to the first one.
"""

from __future__ import annotations

import os
import sys
from contextvars import ContextVar

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    from letitloop.journal import Journal
    from letitloop.kernel._context import RunContext

#: True once any run was traced in this process: the only thing the step hot path checks
ACTIVE = False
#: the cache entry ``fn`` under which first root span contexts are journaled
TRACE_FN = "letitloop.trace"

_ENV_ON = os.environ.get("LIL_OTEL", "").strip().lower() in ("1", "true", "yes", "on")
_provider: Any = None  # set by use_tracer_provider: wins over the global one
_importable: bool | None = None
_current: ContextVar[RunTrace | None] = ContextVar("letitloop_trace", default=None)


def use_tracer_provider(provider: Any) -> None:
    """Trace runs with ``provider`` (an SDK ``TracerProvider``) without making it the global
    one; ``None`` goes back to the environment and the global provider."""
    global _provider
    _provider = provider


def wanted() -> bool:
    """Whether a run starting now is traced (checked once per run, not per step)."""
    global _importable
    if _provider is None and not _ENV_ON:
        mod = sys.modules.get("opentelemetry.trace")  # imported by the app, never by us
        if mod is None or getattr(mod, "_TRACER_PROVIDER", None) is None:
            return False
    if _importable is None:
        from importlib.util import find_spec

        _importable = find_spec("opentelemetry") is not None
    return _importable


class RunTrace:
    """The root span of one run attempt, and the context token that makes it current."""

    __slots__ = ("run_id", "span", "token", "tracer")

    def __init__(self, span: Any, token: Any, tracer: Any, run_id: str) -> None:
        self.span, self.token, self.tracer, self.run_id = span, token, tracer, run_id


def begin_run(journal: Journal, workflow: str, ctx: RunContext) -> RunTrace | None:
    """Start the run's span, linked to the first attempt's root if one was journaled."""
    global ACTIVE
    from opentelemetry import context, trace

    provider = _provider if _provider is not None else trace.get_tracer_provider()
    tracer = provider.get_tracer("letitloop")
    key = f"lil.trace:{ctx.run_id}:{ctx.epoch}"
    first = _journaled_root(journal, key)
    links = [trace.Link(first, {"lil.link": "resumed_from"})] if first is not None else None
    span = tracer.start_span(
        f"invoke_workflow {workflow}",
        kind=trace.SpanKind.INTERNAL,
        links=links,
        attributes={
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": workflow,
            "lil.run.id": ctx.run_id,
            "lil.run.epoch": ctx.epoch,
            "lil.run.attempt": ctx.state.attempt,
            "lil.run.resumed": first is not None,
        },
    )
    sc = span.get_span_context()
    if first is None and sc.is_valid:
        parent = f"00-{sc.trace_id:032x}-{sc.span_id:016x}-{int(sc.trace_flags):02x}"
        import json

        data = json.dumps({"traceparent": parent}).encode()
        try:
            journal.cache_put(key, TRACE_FN, ("json", data), 0, None)
        except Exception:  # a lost link must not fail the run
            pass
    ACTIVE = True
    run = RunTrace(span, context.attach(trace.set_span_in_context(span)), tracer, ctx.run_id)
    run.token = (run.token, _current.set(run))
    return run


def _journaled_root(journal: Journal, key: str) -> Any:
    """The first attempt's root span context, or None (none journaled, or unreadable)."""
    import json

    from opentelemetry.trace import SpanContext, TraceFlags

    try:
        hit = journal.cache_get(key)
        if hit is None or hit.output is None:
            return None
        _, trace_id, span_id, flags = json.loads(hit.output)["traceparent"].split("-")
        flags_ = TraceFlags(int(flags, 16))
        return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=flags_)
    except Exception:
        return None


def end_run(run: RunTrace, exc: BaseException | None) -> None:
    """End the run's span; a failure is recorded on it."""
    from opentelemetry import context
    from opentelemetry.trace import Status, StatusCode

    otel_token, run_token = run.token
    if exc is not None:
        run.span.record_exception(exc)
        run.span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
    run.span.end()
    _current.reset(run_token)
    context.detach(otel_token)


def begin_step(pos: int, att: int, kind: str, name: str, cache_key: str | None) -> Any:
    """Start an attempt's span as the current one; None when this run is not traced."""
    run = _current.get()
    if run is None:
        return None
    from opentelemetry import context, trace

    span = run.tracer.start_span(f"step {name}", attributes=_step_attrs(run, pos, att, kind, False))
    span.set_attribute("lil.step.cache", "off" if cache_key is None else "miss")
    return span, context.attach(trace.set_span_in_context(span))


def _step_attrs(run: RunTrace, pos: int, att: int, kind: str, replayed: bool) -> dict[str, Any]:
    return {
        "lil.run.id": run.run_id,
        "lil.step.position": pos,
        "lil.step.attempt": att,
        "lil.step.kind": kind,
        "lil.step.replayed": replayed,
    }


def step_failed(handle: Any, exc: BaseException) -> None:
    """Record an attempt's exception and error status on its span."""
    from opentelemetry.trace import Status, StatusCode

    span = handle[0]
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def end_step(handle: Any, spent: dict[str, Any]) -> None:
    """End an attempt's span with what it cost (GenAI usage attributes for model calls)."""
    from opentelemetry import context

    span, token = handle
    if spent.get("model"):
        span.set_attribute("gen_ai.request.model", spent["model"])
    if spent.get("in") or spent.get("out"):
        span.set_attribute("gen_ai.usage.input_tokens", int(spent.get("in") or 0))
        span.set_attribute("gen_ai.usage.output_tokens", int(spent.get("out") or 0))
    if spent.get("usd_micros"):
        span.set_attribute("lil.cost.usd_micros", int(spent["usd_micros"]))
    span.end()
    context.detach(token)


def mark(pos: int, att: int, kind: str, name: str, how: str, failed: bool = False) -> None:
    """A short span for a step that did no work now: ``how`` is "replayed" or "hit" (cache)."""
    run = _current.get()
    if run is None:
        return
    attrs = _step_attrs(run, pos, att, kind, how == "replayed")
    attrs["lil.step.cache"] = "hit" if how == "hit" else "off"
    attrs["lil.step.status"] = "failed" if failed else "completed"
    run.tracer.start_span(f"step {name}", attributes=attrs).end()
