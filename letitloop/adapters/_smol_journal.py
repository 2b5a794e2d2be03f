"""What the smolagents adapter journals: model calls, tool calls and managed agents as steps.

smolagents has no persistence interface, so the adapter journals at its boundaries instead:
``Model.generate`` (each answer is a step, keyed by position, its message kept as JSON),
``Tool.forward`` (each call a step, so a completed call is never run again) and a managed
agent's ``run`` (one step holding the managed agent's own steps). A run called again replays
them in order, which rebuilds the agent's memory exactly, and the first call that was never
journaled is the first to reach the model or the tool again.

Two things of smolagents need care. ``CodeAgent`` runs each snippet on a fresh worker thread
without copying ``contextvars``, so a tool called there would not see the run: every call
re-enters the context the run captured. And agents turn a tool's exception into an
observation and carry on, so a letitloop error (an approval pending, a marker in doubt, a
changed workflow) travels up as ``Halt``, a ``BaseException`` no agent catches, and is raised
again as itself once it leaves the agent.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any

from letitloop.errors import ConfigError, LetItLoopError, ReplayedStepError
from letitloop.kernel import current_run

#: marks what this module has wrapped (a tool, a model, an agent), so wrapping is idempotent
WRAPPED = "__letitloop_smolagents__"


class Halt(BaseException):
    """Carries a letitloop error out through smolagents, which would swallow an ``Exception``."""

    def __init__(self, error: LetItLoopError) -> None:
        super().__init__(str(error))
        self.error = error


class Capture:
    """The context of the durable run an agent tree belongs to, for calls on other threads.

    ``context`` is set while a run executes and cleared after it; a managed agent's step sets
    it to the step's own context while the managed agent runs and restores it afterwards.
    ``agent`` names the agent running now, so a model shared by a manager and the agents it
    manages still names each call after the agent that made it.
    """

    def __init__(self) -> None:
        self.context: contextvars.Context | None = None
        self.agent = "agent"


def in_run(capture: Capture, fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` in the run's context: as is on a thread that has it, else re-entered."""
    if current_run.get() is not None or capture.context is None:
        return fn(*args)
    return capture.context.copy().run(fn, *args)


def halting(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn``; a letitloop error it raises leaves as ``Halt`` (a replayed failure of a
    step stays an ordinary error: the agent saw it as an observation the first time).

    Used inside a step's function too, so the step records no failure for a halt: its attempt
    stays open, and calling the run again runs it again, meeting the journaled marker or
    approval inside it (a failure recorded there would be replayed forever)."""
    try:
        return fn(*args)
    except ReplayedStepError:
        raise
    except LetItLoopError as exc:
        raise Halt(exc) from exc


# -- model calls ------------------------------------------------------------------------------


def message_data(message: Any) -> dict[str, Any]:
    """A ``ChatMessage`` as JSON-able data (its ``raw`` provider object is left out)."""
    usage = message.token_usage
    calls = message.tool_calls
    return {
        "role": str(getattr(message.role, "value", message.role)),
        "content": message.content,
        "tool_calls": None
        if calls is None
        else [
            {
                "id": c.id,
                "type": c.type,
                "function": {
                    "name": c.function.name,
                    "arguments": c.function.arguments,
                    "description": c.function.description,
                },
            }
            for c in calls
        ],
        "usage": None if usage is None else [usage.input_tokens, usage.output_tokens],
    }


def message_from(data: dict[str, Any], raw: Any = None) -> Any:
    """The ``ChatMessage`` of ``message_data``'s output."""
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
    )
    from smolagents.monitoring import TokenUsage

    calls = data.get("tool_calls")
    usage = data.get("usage")
    return ChatMessage(
        role=MessageRole(data["role"]),
        content=data.get("content"),
        tool_calls=None
        if calls is None
        else [
            ChatMessageToolCall(
                function=ChatMessageToolCallFunction(**c["function"]), id=c["id"], type=c["type"]
            )
            for c in calls
        ],
        raw=raw,
        token_usage=None if usage is None else TokenUsage(int(usage[0]), int(usage[1])),
    )


def delta_data(delta: Any) -> dict[str, Any]:
    """A streamed ``ChatMessageStreamDelta`` as JSON-able data."""
    usage = delta.token_usage
    calls = delta.tool_calls
    return {
        "content": delta.content,
        "tool_calls": None
        if calls is None
        else [
            {
                "index": c.index,
                "id": c.id,
                "type": c.type,
                "function": None
                if c.function is None
                else {
                    "name": c.function.name,
                    "arguments": c.function.arguments,
                    "description": c.function.description,
                },
            }
            for c in calls
        ],
        "usage": None if usage is None else [usage.input_tokens, usage.output_tokens],
    }


def delta_from(data: dict[str, Any]) -> Any:
    """The ``ChatMessageStreamDelta`` of ``delta_data``'s output."""
    from smolagents.models import (
        ChatMessageStreamDelta,
        ChatMessageToolCallFunction,
        ChatMessageToolCallStreamDelta,
    )
    from smolagents.monitoring import TokenUsage

    calls = data.get("tool_calls")
    usage = data.get("usage")
    return ChatMessageStreamDelta(
        content=data.get("content"),
        tool_calls=None
        if calls is None
        else [
            ChatMessageToolCallStreamDelta(
                index=c["index"],
                id=c["id"],
                type=c["type"],
                function=None
                if c["function"] is None
                else ChatMessageToolCallFunction(**c["function"]),
            )
            for c in calls
        ],
        token_usage=None if usage is None else TokenUsage(int(usage[0]), int(usage[1])),
    )


def _record_usage(usages: list[Any], model_id: Any) -> None:
    """The step's cost: the tokens of the answer (or of all its streamed parts)."""
    from letitloop.kernel import record_cost

    usages = [u for u in usages if u]
    if usages:
        record_cost(
            input_tokens=sum(int(u[0]) for u in usages),
            output_tokens=sum(int(u[1]) for u in usages),
            model=str(model_id) if model_id else None,
        )


def wrap_model(model: Any, capture: Capture) -> None:
    """Make ``model.generate`` (and ``generate_stream``) a step named ``model:<agent>`` whose
    answer replays by position (never by the request's content), and whose token usage is the
    step's cost."""
    if getattr(model, WRAPPED, None) is capture:
        return
    inner = getattr(model, "__letitloop_generate__", None) or model.generate
    model_id = getattr(model, "model_id", None)

    @functools.wraps(inner)
    def generate(messages: Any, *args: Any, **kwargs: Any) -> Any:
        from letitloop.kernel import step

        if current_run.get() is None and capture.context is None:
            return inner(messages, *args, **kwargs)  # outside a durable run: as it was
        raw: list[Any] = []

        def call() -> dict[str, Any]:
            message = inner(messages, *args, **kwargs)
            raw.append(message.raw)
            data = message_data(message)
            _record_usage([data["usage"]], model_id)
            return data

        name = f"model:{capture.agent}"
        data = in_run(capture, halting, step, name, functools.partial(halting, call))
        # the agent sees the journaled message, on the first run as on every replay
        return message_from(data, raw[0] if raw else None)

    model.__letitloop_generate__ = inner
    model.generate = generate
    streams = getattr(model, "__letitloop_generate_stream__", None) or getattr(
        model, "generate_stream", None
    )
    if streams is not None:

        @functools.wraps(streams)
        def generate_stream(messages: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            from letitloop.kernel import step

            if current_run.get() is None and capture.context is None:
                yield from streams(messages, *args, **kwargs)
                return

            def call() -> list[dict[str, Any]]:
                parts = [delta_data(d) for d in streams(messages, *args, **kwargs)]
                _record_usage([p["usage"] for p in parts], model_id)
                return parts

            # one step for the whole answer: its parts arrive once it is complete
            name = f"model:{capture.agent}"
            parts = in_run(capture, halting, step, name, functools.partial(halting, call))
            for part in parts:
                yield delta_from(part)

        model.__letitloop_generate_stream__ = streams
        model.generate_stream = generate_stream
    setattr(model, WRAPPED, capture)


# -- tool calls -------------------------------------------------------------------------------


def wrap_tool(tool: Any, capture: Capture) -> None:
    """Make ``tool.forward`` a step named ``tool:<name>``: a completed call returns its
    journaled output without running, and the tool's own steps and markers nest inside."""
    if getattr(tool, WRAPPED, None) is capture:
        return
    inner = getattr(tool, "__letitloop_forward__", None) or tool.forward
    name = f"tool:{tool.name}"

    @functools.wraps(inner)
    def forward(*args: Any, **kwargs: Any) -> Any:
        from letitloop.kernel import step

        if current_run.get() is None and capture.context is None:
            return inner(*args, **kwargs)

        def call(a: tuple[Any, ...], k: dict[str, Any]) -> Any:
            return halting(functools.partial(inner, *a, **k))

        # the arguments are the step's inputs: a replay that calls the tool differently is a
        # changed workflow (NonDeterminismError), never another call's output
        return in_run(capture, halting, step, name, call, args, kwargs)

    tool.__letitloop_forward__ = inner
    tool.forward = forward
    setattr(tool, WRAPPED, capture)


# -- agents -----------------------------------------------------------------------------------


def agent_label(agent: Any) -> str:
    return str(getattr(agent, "name", None) or type(agent).__name__)


def instrument(agent: Any, capture: Capture, *, managed: bool = False) -> None:
    """Journal everything an agent does, its managed agents' work included (recursively)."""
    label = agent_label(agent)
    executor = getattr(agent, "python_executor", None)
    if executor is not None:
        from smolagents.local_python_executor import LocalPythonExecutor

        if not isinstance(executor, LocalPythonExecutor):
            raise ConfigError(
                f"smolagents agent {label!r} runs its code in {type(executor).__name__}, a "
                "remote sandbox where letitloop cannot journal the tool calls",
                fix='use executor_type="local" (the default) with durable_agent()',
            )
    if hasattr(agent, "max_tool_threads"):
        # parallel tool calls would take step positions in whatever order threads start;
        # one thread runs them in the order the model gave, on every replay alike
        agent.max_tool_threads = 1
    wrap_model(agent.model, capture)
    for tool_name, tool in agent.tools.items():
        if tool_name != "final_answer":  # returns its argument: nothing to journal
            wrap_tool(tool, capture)
    for sub in agent.managed_agents.values():
        instrument(sub, capture, managed=True)
    if managed:
        wrap_managed_run(agent, capture)


def wrap_managed_run(agent: Any, capture: Capture) -> None:
    """Make a managed agent's ``run`` one step of the manager's run, named ``agent:<name>``.

    Its model and tool calls are steps nested inside it: a completed managed run replays as
    its answer, and one cut short runs again with its completed calls replayed.
    """
    if getattr(agent, WRAPPED, None) is capture:
        return
    inner = getattr(agent, "__letitloop_run__", None) or agent.run
    label = agent_label(agent)

    @functools.wraps(inner)
    def run(task: str, *args: Any, **kwargs: Any) -> Any:
        from letitloop.kernel import step

        if current_run.get() is None and capture.context is None:
            return inner(task, *args, **kwargs)

        def body(task: str) -> Any:
            outer = capture.context, capture.agent
            capture.context, capture.agent = contextvars.copy_context(), label
            try:
                answer = halting(functools.partial(inner, task, *args, **kwargs))
            finally:
                capture.context, capture.agent = outer
            from smolagents.agent_types import AgentText

            return str(answer) if isinstance(answer, AgentText) else answer  # JSON, not pickle

        return in_run(capture, halting, step, f"agent:{label}", body, task)

    agent.__letitloop_run__ = inner
    agent.run = run
    setattr(agent, WRAPPED, capture)
