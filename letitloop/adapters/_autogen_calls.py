"""The journaled boundary of an AutoGen team: model calls and tool calls as steps of one run.

``instrument(team)`` walks a team (nested teams, a SocietyOfMind agent's inner team) and, in
place, wraps every model client (``create``/``create_stream``), every workbench
(``call_tool``/``call_tool_stream``) and every UserProxyAgent's input. While a durable team runs
(``RUN`` is set), a model call is a step keyed by its position in the run, never by the
request's content; a person's answer is a step too; and a tool call is a step whose body is a
child run of its own, so markers and steps inside a tool are numbered there and parallel tool
calls cannot interleave their positions. Outside a durable run the wrappers just delegate: an
instrumented agent still works on its own.

AutoGen swallows errors in two places: a tool's exception becomes an error result the model
reads, and an agent's exception reaches ``team.run`` as a bare ``RuntimeError``. A letitloop
error (an approval pending, a marker in doubt, a replay that diverged) must stop the run, so the
wrappers keep it in ``RUN``'s ``trouble`` list, fail the step it happened in, take no step after
it, and the durable team raises the original.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any

from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, MessageFactory
from autogen_core.models import CreateResult
from autogen_core.tools import TextResultContent, ToolResult

from letitloop.errors import LetItLoopError, MapItemError, ReplayedStepError, Suspended

try:  # the offline model answers by its own counter: replayed calls must advance it
    from autogen_ext.models.replay import ReplayChatCompletionClient
except ImportError:  # pragma: no cover - autogen-ext is optional
    ReplayChatCompletionClient = None

_MARK = "__letitloop_autogen__"


@dataclasses.dataclass
class TeamRun:
    """The durable team run executing now: where tool calls' child runs go, and the letitloop
    errors seen inside AutoGen, which must stop the run instead of becoming chat messages."""

    workflow: str
    key: str
    trouble: list[BaseException] = dataclasses.field(default_factory=list)
    suspended: bool = False

    def check(self) -> None:
        """Raise the first letitloop error seen in this run (before any new step is taken); a
        tool's run that suspended (an approval pending) suspends the team's run too."""
        if not self.trouble:
            return
        exc = self.trouble[0]
        if isinstance(exc, Suspended) and not self.suspended:
            from letitloop.kernel import current_run

            ctx = current_run.get()
            if ctx is not None and ctx.run_id != exc.run_id:
                self.suspended = True
                ctx.suspend(f"a tool call is suspended: {exc.title} in run {exc.run_id}")
        raise exc

    def keep(self, exc: BaseException) -> None:
        """Keep a letitloop error (not a user's failure replayed, which a tool reports)."""
        if isinstance(exc, LetItLoopError) and not isinstance(
            exc, (ReplayedStepError, MapItemError)
        ):
            self.trouble.append(exc)

    def stopped(self, name: str, exc: BaseException) -> ToolResult:
        """A tool step that cannot complete: the run stops at its next call, and AutoGen gets
        an error result (an exception out of a tool call would hang the agent: AssistantAgent
        waits for the end of its tool stream forever)."""
        self.trouble.append(exc)
        text = f"letitloop stopped the run: {type(exc).__name__}: {exc}"
        return ToolResult(name=name, result=[TextResultContent(content=text)], is_error=True)


RUN: ContextVar[TeamRun | None] = ContextVar("letitloop_autogen_run", default=None)


def _dumped(result: CreateResult) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.model_dump_json())
    return data


class JournaledClient:
    """A model client whose ``create``/``create_stream`` are position-keyed steps."""

    def __init__(self, inner: Any, agent: str) -> None:
        self._inner = inner
        self._agent = agent
        setattr(self, _MARK, True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _model(self) -> str | None:
        args = getattr(self._inner, "_create_args", None)
        if isinstance(args, Mapping) and isinstance(args.get("model"), str):
            return str(args["model"])
        family = (getattr(self._inner, "model_info", None) or {}).get("family")
        return str(family) if family and family != "unknown" else None

    def _cost(self, result: CreateResult) -> None:
        from letitloop.kernel import record_cost

        usage = result.usage
        record_cost(
            input_tokens=max(int(usage.prompt_tokens or 0), 0),
            output_tokens=max(int(usage.completion_tokens or 0), 0),
            model=self._model(),
        )

    def _replayed(self) -> None:
        if ReplayChatCompletionClient is not None and isinstance(
            self._inner, ReplayChatCompletionClient
        ):
            self._inner._current_index += 1

    async def _step(
        self, run: TeamRun, call: Callable[[], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        """The model call as a step of the run: made once; on replay its journaled reply, and a
        replay client's script moves on as if it had answered. A failure is kept for the run."""
        from letitloop.kernel import async_step

        ran = False

        async def once() -> dict[str, Any]:
            nonlocal ran
            ran = True
            return await call()

        try:
            data: dict[str, Any] = await async_step(f"model:{self._agent}", once)
        except Exception as exc:
            run.keep(exc)
            raise
        if not ran:
            self._replayed()
        return data

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        run = RUN.get()
        if run is None:
            return await self._inner.create(*args, **kwargs)
        run.check()

        async def call() -> dict[str, Any]:
            result = await self._inner.create(*args, **kwargs)
            self._cost(result)
            return _dumped(result)

        return CreateResult.model_validate(await self._step(run, call))

    async def create_stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        """Streamed calls are journaled whole: the chunks reach the agent once the call ends
        (and again, from the journal, on replay)."""
        run = RUN.get()
        if run is None:
            async for item in self._inner.create_stream(*args, **kwargs):
                yield item
            return
        run.check()

        async def call() -> dict[str, Any]:
            chunks: list[str] = []
            final: CreateResult | None = None
            async for item in self._inner.create_stream(*args, **kwargs):
                if isinstance(item, CreateResult):
                    final = item
                else:
                    chunks.append(str(item))
            if final is None:
                raise RuntimeError(f"the model client of {self._agent} streamed no CreateResult")
            self._cost(final)
            return {"chunks": chunks, "result": _dumped(final)}

        data = await self._step(run, call)
        for chunk in data["chunks"]:
            yield chunk
        yield CreateResult.model_validate(data["result"])


def _dump_item(item: Any) -> dict[str, Any] | None:
    """A streamed tool item as JSON (a result, or an event the agent shows), else None."""
    if isinstance(item, ToolResult):
        return {"tool_result": item.model_dump(mode="json")}
    if isinstance(item, (BaseAgentEvent, BaseChatMessage)):
        return {"message": dict(item.dump())}
    return None


def _load_item(data: Mapping[str, Any], factory: MessageFactory) -> Any:
    if "tool_result" in data:
        return ToolResult.model_validate(data["tool_result"])
    return factory.create(data["message"])


async def _tool_step(
    run: TeamRun, name: str, arguments: Mapping[str, Any] | None, body: Callable[[], Any]
) -> Any:
    """A tool call as a step of the team's run, its body a child run keyed by that step."""
    from letitloop.kernel import (
        DurableOptions,
        async_step,
        current_run,
        current_step_var,
        run_child_async,
    )

    parent = current_run.get()
    assert parent is not None  # RUN is only set inside the durable run

    async def call(_name: str, _arguments: dict[str, Any]) -> Any:
        ref = current_step_var.get()
        assert ref is not None
        opts = DurableOptions(
            name=f"{run.workflow}.tool",
            run_id=f"{run.key}.{parent.epoch}.{ref[1]}",
            journal=parent.journal,
        )

        async def tool_call() -> Any:
            out = await body()
            run.check()  # an error inside the tool that AutoGen made into a result
            return out

        tool_call.__qualname__ = f"tool:{name}"
        return await run_child_async(opts, tool_call, (), {}, parent.run_id)

    return await async_step(f"tool:{name}", call, name, dict(arguments or {}), _kind="child")


def _journal_workbench(workbench: Any) -> None:
    """Wrap a workbench's ``call_tool`` and ``call_tool_stream`` as journaled tool calls."""
    if getattr(workbench, _MARK, False):
        return
    call_tool = workbench.call_tool
    call_stream = getattr(workbench, "call_tool_stream", None)
    factory = MessageFactory()

    async def journaled_call(
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: Any = None,
        call_id: str | None = None,
    ) -> Any:
        run = RUN.get()
        if run is None:
            return await call_tool(name, arguments, cancellation_token, call_id)
        run.check()

        async def body() -> dict[str, Any]:
            result = await call_tool(name, arguments, cancellation_token, call_id)
            return result.model_dump(mode="json")  # type: ignore[no-any-return]

        try:
            return ToolResult.model_validate(await _tool_step(run, name, arguments, body))
        except Exception as exc:
            return run.stopped(name, exc)

    async def journaled_stream(
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: Any = None,
        call_id: str | None = None,
    ) -> AsyncGenerator[Any, None]:
        assert call_stream is not None
        run = RUN.get()
        if run is None:
            async for item in call_stream(name, arguments, cancellation_token, call_id):
                yield item
            return
        run.check()

        async def body() -> list[dict[str, Any]]:
            items = []
            async for item in call_stream(name, arguments, cancellation_token, call_id):
                dumped = _dump_item(item)
                if dumped is not None:
                    items.append(dumped)
            return items

        try:
            items = await _tool_step(run, name, arguments, body)
        except Exception as exc:
            yield run.stopped(name, exc)
            return
        for data in items:
            yield _load_item(data, factory)

    workbench.call_tool = journaled_call
    if call_stream is not None:
        workbench.call_tool_stream = journaled_stream
    for tool in getattr(workbench, "_tools", None) or []:
        _watch_tool(tool)
    setattr(workbench, _MARK, True)


def _watch_tool(tool: Any) -> None:
    """Keep a tool's letitloop errors (AutoGen turns exceptions into results), and run a sync
    function tool in the run's context (AutoGen runs it on an executor thread without it)."""
    if getattr(tool, _MARK, False):
        return
    inner = tool.run
    func: Callable[..., Any] | None = getattr(tool, "_func", None)
    sync = func is not None and not inspect.iscoroutinefunction(func)

    async def run(args: Any, cancellation_token: Any) -> Any:
        team_run = RUN.get()
        if team_run is None:
            return await inner(args, cancellation_token)
        if sync:
            context = contextvars.copy_context()

            def in_context(*a: Any, **k: Any) -> Any:
                assert func is not None
                return context.run(func, *a, **k)

            # FunctionTool.run reads _func before its first await: concurrent calls each get
            # their own wrapper, and the original is back before any other task runs
            tool._func = in_context
        try:
            return await inner(args, cancellation_token)
        except Exception as exc:
            team_run.keep(exc)
            raise
        finally:
            if sync:
                tool._func = func

    tool.run = run
    setattr(tool, _MARK, True)


def _journal_input(agent: Any) -> None:
    """A UserProxyAgent's ``_get_input`` as a step: a person is not asked again on replay."""
    if getattr(agent, "__letitloop_input__", False):
        return
    inner = agent._get_input

    async def get_input(prompt: str, cancellation_token: Any) -> str:
        run = RUN.get()
        if run is None:
            return await inner(prompt, cancellation_token)  # type: ignore[no-any-return]
        run.check()
        from letitloop.kernel import async_step

        try:
            answer = await async_step(  # keyed by the prompt, not by the token object
                f"input:{agent.name}", lambda p: inner(p, cancellation_token), prompt
            )
        except Exception as exc:
            run.keep(exc)
            raise
        return str(answer)

    agent._get_input = get_input
    agent.__letitloop_input__ = True


def _parts(obj: Any) -> list[Any]:
    """A team or agent and everything inside it that may call a model or a tool."""
    found = [obj]
    for p in getattr(obj, "_participants", None) or []:
        found.extend(_parts(p))
    inner = getattr(obj, "_team", None)  # SocietyOfMindAgent
    if inner is not None:
        found.extend(_parts(inner))
    return found


def instrument(team_or_agent: Any) -> None:
    """Journal every model client and workbench of a team or agent, in place (idempotent)."""
    for part in _parts(team_or_agent):
        client = getattr(part, "_model_client", None)
        if client is not None and not getattr(client, _MARK, False):
            part._model_client = JournaledClient(client, str(getattr(part, "name", "team")))
        for workbench in getattr(part, "_workbench", None) or []:
            _journal_workbench(workbench)
        if callable(getattr(part, "_get_input", None)) and hasattr(part, "input_func"):
            _journal_input(part)


def reset_clients(team_or_agent: Any) -> None:
    """Rewind offline replay clients, so a run replayed in the same process answers the same."""
    for part in _parts(team_or_agent):
        client = getattr(part, "_model_client", None)
        inner = getattr(client, "_inner", client)
        if ReplayChatCompletionClient is not None and isinstance(inner, ReplayChatCompletionClient):
            inner.reset()
