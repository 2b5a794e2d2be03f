"""How a CrewAI crew or flow becomes journaled steps: the wrappers the CrewAI adapter installs.

Each model call (``BaseLLM.call`` of an agent's model), each tool call (``BaseTool._run``), each
task (``Task._execute_core``) and each flow method becomes a step of the durable run, keyed by
its position. A replayed task returns its journaled ``TaskOutput`` without running its agent; a
replayed model call returns its journaled answer (and adds its token usage back to the model's
counters, so the crew's usage totals match an uninterrupted run); a replayed flow method
restores the flow state it left. Wrappers are installed on the live objects (CrewAI models,
tasks and tools are pydantic models, so through ``object.__setattr__``), never on classes.

CrewAI turns a tool's exception into an observation and retries a failed task, which would hide
a letitloop stop (``InDoubtError``, ``NonDeterminismError``, a budget, an approval) and take new
positions. So letitloop errors join CrewAI's pass-through exceptions, and a stop raised inside a
tool is kept on the run's ``Guard`` and raised again by the next wrapper CrewAI calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

from letitloop.errors import LetItLoopError, ReplayedStepError
from letitloop.kernel import current_run

_MARK = "__letitloop_crewai__"
_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens", "successful_requests")


def allow_letitloop_errors() -> None:
    """Let letitloop's stops through CrewAI's task-retry loop (``max_retry_limit``)."""
    import crewai.agent.core as core

    if LetItLoopError not in core._passthrough_exceptions:
        core._passthrough_exceptions = (*core._passthrough_exceptions, LetItLoopError)


def _is_stop(exc: BaseException) -> bool:
    return isinstance(exc, LetItLoopError) and not isinstance(exc, ReplayedStepError)


class Guard:
    """The letitloop stop raised inside one kickoff, raised again until the kickoff ends."""

    def __init__(self) -> None:
        self.stop: BaseException | None = None
        self.llms: list[Any] = []  # the journaled models, in the order they were found
        self.board = False  # durable_crew(board=True): each task's output goes on the board

    def usage(self) -> list[dict[str, int]]:
        """Each journaled model's token counters now."""
        return [{k: llm._token_usage.get(k, 0) for k in _USAGE} for llm in self.llms]

    def usage_since(self, before: list[dict[str, int]]) -> list[list[Any]]:
        """``[index, counters added]`` of each model whose counters moved since ``before``."""
        moved = []
        for i, (now, then) in enumerate(zip(self.usage(), before, strict=False)):
            delta = {k: now[k] - then.get(k, 0) for k in _USAGE}
            if any(delta.values()):
                moved.append([i, delta])
        return moved

    def add_usage(self, moved: list[list[Any]]) -> None:
        """Add journaled usage back to the models (a replayed task did not call them)."""
        for i, delta in moved:
            if i < len(self.llms):
                _add_usage(self.llms[i], delta)

    def check(self) -> None:
        if self.stop is not None:
            raise self.stop

    def note(self, exc: BaseException) -> None:
        if _is_stop(exc) and self.stop is None:
            self.stop = exc


def _in_run() -> bool:
    return current_run.get() is not None


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)  # pydantic models: no validation, no field


def _wrapped(obj: Any) -> bool:
    return _MARK in getattr(obj, "__dict__", {})


# -- models -----------------------------------------------------------------------------------


def journal_llm(llm: Any, guard: Guard) -> None:
    """Make ``llm.call`` a step named ``model:<agent role>``; its answer and usage are journaled."""
    from crewai.llms.base_llm import BaseLLM

    if not isinstance(llm, BaseLLM) or _wrapped(llm):
        return
    inner = llm.call

    @functools.wraps(inner)
    def call(messages: Any, *args: Any, **kwargs: Any) -> Any:
        guard.check()
        if not _in_run():
            return inner(messages, *args, **kwargs)
        from letitloop.kernel import record_cost, step

        ran = False

        def model_call() -> dict[str, Any]:
            nonlocal ran
            ran = True
            before = dict(llm._token_usage)
            answer = inner(messages, *args, **kwargs)
            usage = {k: llm._token_usage.get(k, 0) - before.get(k, 0) for k in _USAGE}
            if usage["prompt_tokens"] or usage["completion_tokens"]:
                record_cost(
                    input_tokens=max(usage["prompt_tokens"], 0),
                    output_tokens=max(usage["completion_tokens"], 0),
                    model=llm.model,
                )
            return {"answer": answer, "usage": usage}

        agent = kwargs.get("from_agent")
        role = getattr(agent, "role", None) or llm.model
        try:
            data = step(f"model:{role}", model_call)
        except Exception as exc:
            guard.note(exc)
            raise
        if not ran:  # replayed: the model's counters see the usage an uninterrupted run saw
            _add_usage(llm, data["usage"])
        return data["answer"]

    _set(llm, "call", call)
    _set(llm, _MARK, True)
    guard.llms.append(llm)


def _add_usage(llm: Any, usage: dict[str, int]) -> None:
    for k, n in usage.items():
        llm._token_usage[k] = llm._token_usage.get(k, 0) + n


# -- tools ------------------------------------------------------------------------------------


def journal_tool(tool: Any, guard: Guard) -> None:
    """Make ``tool._run`` a step named ``tool:<name>`` with the call's arguments as its input.

    A replayed tool call returns its journaled result without running; a side effect inside it
    belongs in ``atomic_marker``, so one in flight at a crash is in doubt, never run twice.
    """
    from crewai.tools import BaseTool

    if not isinstance(tool, BaseTool) or _wrapped(tool):
        return
    inner = tool._run
    name = f"tool:{tool.name}"

    @functools.wraps(inner)
    def run(*args: Any, **kwargs: Any) -> Any:
        guard.check()
        if not _in_run():
            return inner(*args, **kwargs)
        from letitloop.kernel import step

        try:
            return step(name, inner, *args, **kwargs)
        except Exception as exc:
            guard.note(exc)
            raise

    _set(tool, "_run", run)
    _set(tool, _MARK, True)


# -- tasks ------------------------------------------------------------------------------------


def dump_task_output(out: Any) -> dict[str, Any]:
    """A ``TaskOutput`` as journal data; its pydantic output stays an object (the codec
    stores it under the journal key and rebuilds its class)."""
    return {"fields": out.model_dump(mode="json", exclude={"pydantic"}), "pydantic": out.pydantic}


def load_task_output(data: dict[str, Any]) -> Any:
    from crewai.tasks.task_output import TaskOutput

    return TaskOutput.model_validate({**data["fields"], "pydantic": data["pydantic"]})


def journal_task(task: Any, guard: Guard, label: str) -> None:
    """Make the task a step named ``task:<label>``: a finished task is skipped on the next
    kickoff, its output restored onto the task (``task.output``) and handed to the crew."""
    if _wrapped(task):
        return
    inner = task._execute_core

    @functools.wraps(inner)
    def execute_core(agent: Any, context: Any, tools: Any) -> Any:
        guard.check()
        if not _in_run():
            return inner(agent, context, tools)
        from letitloop.kernel import step

        produced: list[Any] = []

        def run_task() -> dict[str, Any]:
            before = guard.usage()
            out = inner(agent, context, tools)
            produced.append(out)
            return {"output": dump_task_output(out), "usage": guard.usage_since(before)}

        try:
            data = step(f"task:{label}", run_task)
        except Exception as exc:
            guard.note(exc)
            raise
        if guard.board:  # (a replayed task too: its put then replays at the same position)
            from letitloop.memory import blackboard

            raw = data["output"]["fields"].get("raw")
            blackboard().put(f"task/{label}", raw, tags=["crewai", "task"])
        if produced:
            return produced[0]
        out = load_task_output(data["output"])  # replayed: the task's agent did not run
        guard.add_usage(data["usage"])
        _set(task, "output", out)
        if agent is not None:
            _set(task, "agent", agent)
        return out

    def execute_async(agent: Any = None, context: Any = None, tools: Any = None) -> Any:
        """Run an ``async_execution`` task in the caller's thread: its steps then take the
        same positions on every replay (concurrent tasks would race for them)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        try:
            future.set_result(task.execute_sync(agent=agent, context=context, tools=tools))
        except Exception as exc:
            future.set_exception(exc)
        return future

    _set(task, "_execute_core", execute_core)
    _set(task, "execute_async", execute_async)
    _set(task, _MARK, True)


def journal_agent(agent: Any, guard: Guard) -> None:
    for llm in (getattr(agent, "llm", None), getattr(agent, "function_calling_llm", None)):
        journal_llm(llm, guard)
    for tool in getattr(agent, "tools", None) or []:
        journal_tool(tool, guard)


def journal_crew(crew: Any, guard: Guard) -> None:
    """Install the wrappers on a crew's agents, their models and tools, and its tasks."""
    allow_letitloop_errors()
    for agent in crew.agents:
        journal_agent(agent, guard)
    if crew.manager_agent is not None:
        journal_agent(crew.manager_agent, guard)
    journal_llm(crew.manager_llm, guard)
    journal_llm(getattr(crew, "function_calling_llm", None), guard)
    labels: set[str] = set()
    for i, task in enumerate(crew.tasks):
        label = task.name or str(i)
        label = label if label not in labels else f"{label}#{i}"
        labels.add(label)
        journal_task(task, guard, label)
        if task.agent is not None:
            journal_agent(task.agent, guard)
        for tool in task.tools or []:
            journal_tool(tool, guard)


# -- flows ------------------------------------------------------------------------------------


def dump_state(flow: Any) -> Any:
    """The flow's state as journal data (a structured state as pydantic's JSON dump)."""
    state = flow.state
    if isinstance(state, dict):
        return {"dict": dict(state)}
    return {"model": state.model_dump(mode="json")}


def restore_state(flow: Any, saved: Any) -> None:
    """Put a journaled state into the live flow (its state object stays the same object)."""
    state = flow.state
    if "dict" in saved:
        state.clear()
        state.update(saved["dict"])
        return
    rebuilt = type(state).model_validate(saved["model"])
    for field in type(state).model_fields:
        _set(state, field, getattr(rebuilt, field))


def journal_flow(flow: Any, guard: Guard) -> None:
    """Make each flow method a step named ``flow:<method>`` whose output carries the state.

    Methods run one at a time (parallel listeners too), in the order the flow starts them, so
    each takes the same positions on replay; a sync method still runs in a worker thread with
    the context copied, as CrewAI runs it. Crews, agents and models the flow holds as
    attributes are journaled too.
    """
    allow_letitloop_errors()
    if _wrapped(flow):
        return
    lock = _FlowLock()
    for name, method in list(flow._methods.items()):
        flow._methods[name] = _flow_method(flow, str(name), method, guard, lock)
    for value in _attributes(flow):
        _journal_found(value, guard)
    _set(flow, _MARK, True)


def _attributes(flow: Any) -> list[Any]:
    found = [v for k, v in vars(flow).items() if not k.startswith("__")]
    for k in getattr(type(flow), "model_fields", {}):
        found.append(getattr(flow, k, None))
    return found


def _journal_found(value: Any, guard: Guard) -> None:
    from crewai import Agent, Crew

    if isinstance(value, Crew):
        journal_crew(value, guard)
    elif isinstance(value, Agent):
        journal_agent(value, guard)
    else:
        journal_llm(value, guard)


class _FlowLock:
    """One flow method at a time, first come first served (``asyncio.Lock`` is FIFO)."""

    def __init__(self) -> None:
        self._locks: dict[int, asyncio.Lock] = {}
        self._guard = threading.Lock()

    def get(self) -> asyncio.Lock:
        loop = id(asyncio.get_running_loop())  # each kickoff runs its own event loop
        with self._guard:
            if loop not in self._locks:
                self._locks = {loop: asyncio.Lock()}
            return self._locks[loop]


def _flow_method(
    flow: Any, name: str, method: Callable[..., Any], guard: Guard, lock: _FlowLock
) -> Callable[..., Any]:
    is_async = inspect.iscoroutinefunction(method)

    async def run_method(*args: Any, **kwargs: Any) -> Any:
        if is_async:
            out = await method(*args, **kwargs)
        else:
            ctx = contextvars.copy_context()
            out = await asyncio.to_thread(ctx.run, method, *args, **kwargs)
        if asyncio.iscoroutine(out):
            out = await out
        return out

    @functools.wraps(method)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        guard.check()
        if not _in_run():
            return await run_method(*args, **kwargs)
        from letitloop.kernel import step

        loop = asyncio.get_running_loop()
        ran = False

        def body() -> dict[str, Any]:
            # a sync step in a worker thread (as CrewAI runs a sync method): unlike an async
            # step it records where its nested steps end, so a replay skips them
            nonlocal ran
            ran = True
            out = asyncio.run_coroutine_threadsafe(run_method(*args, **kwargs), loop).result()
            return {"output": out, "state": dump_state(flow)}

        async with lock.get():
            try:
                data = await asyncio.to_thread(step, f"flow:{name}", body)
            except Exception as exc:
                guard.note(exc)
                raise
        if not ran:  # replayed: the method did not run; the state it left comes back
            restore_state(flow, data["state"])
        return data["output"]

    return wrapper
