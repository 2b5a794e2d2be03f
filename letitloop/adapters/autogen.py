"""AutoGen AgentChat on the letitloop journal: a team (or one agent) whose run resumes.

WORK IN PROGRESS (issue 23): an uninterrupted run is journaled correctly, but resuming after a
SIGKILL does not yet replay every completed model call, so a side effect can repeat. Not
exported, not documented, not an extra yet: do not rely on it.

    from letitloop.adapters.autogen import durable_team
    team = durable_team(RoundRobinGroupChat([writer, critic], ...), run_id="essay")
    result = await team.run(task="write a haiku")   # kill the process, call again: it resumes

Every model call (``ChatCompletionClient.create`` of each agent) and every tool call
(``BaseTool.run``) becomes a step of one durable run, keyed by its position, never by the
request's content (``ChatCompletionCache`` keys by content, so two equal prompts would share an
answer). Called again after a crash, the team runs from its start: completed model and tool
calls replay from the journal, so the conversation is rebuilt message by message, the same next
speaker takes its turn, and the first new model call is the one that was in flight. The result's
messages are journaled as JSON and rebuilt with AutoGen's ``MessageFactory`` (the kernel's codec
cannot rebuild a ``TaskResult``). Token usage is recorded as the step's cost (``record_cost``).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import json
import os
from typing import Any

from letitloop.kernel._errors import ConfigError

try:
    from autogen_agentchat.base import TaskResult
    from autogen_agentchat.messages import MessageFactory
    from autogen_core.models import CreateResult
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ConfigError(
        f"letitloop.adapters.autogen needs AutoGen AgentChat, which is not installed ({exc})",
        fix="pip install 'letitloop[autogen]'",
    ) from exc

__all__ = ["AutoGenStateSerializer", "DurableTeam", "durable_team"]


class _JournaledClient:
    """A model client whose ``create`` is a position-keyed step; everything else delegates."""

    def __init__(self, inner: Any, agent: str) -> None:
        self._inner = inner
        self._agent = agent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        from letitloop.kernel._cost import record_cost
        from letitloop.kernel._runtime import async_step

        ran = False

        async def call() -> dict[str, Any]:
            nonlocal ran
            ran = True
            out = await self._inner.create(*args, **kwargs)
            usage = out.usage
            model = (getattr(self._inner, "model_info", None) or {}).get("family")
            record_cost(
                input_tokens=int(usage.prompt_tokens or 0),
                output_tokens=int(usage.completion_tokens or 0),
                model=str(model) if model else None,
            )
            dumped: dict[str, Any] = json.loads(out.model_dump_json())
            return dumped

        data = await async_step(f"model:{self._agent}", call)
        if not ran and type(self._inner).__name__ == "ReplayChatCompletionClient":
            # it answers by its own counter: keep it in step with the replayed calls
            self._inner._current_index += 1
        return CreateResult.model_validate(data)


def _journal_tool(tool: Any, agent: str) -> None:
    """Make ``tool.run`` a step: a replayed call returns the journaled result."""
    if getattr(tool, "__letitloop_wrapped__", False):
        return
    inner = tool.run  # run_json and run_json_stream both end here

    @functools.wraps(inner)
    async def run(args: Any, cancellation_token: Any) -> Any:
        async def call() -> Any:
            func = getattr(tool, "_func", None)
            if func is None or inspect.iscoroutinefunction(func):
                return await inner(args, cancellation_token)
            run = contextvars.copy_context().run  # sync tools run on a thread without it

            @functools.wraps(func)
            def in_run(*a: Any, **k: Any) -> Any:
                return run(func, *a, **k)

            tool._func = in_run
            try:
                return await inner(args, cancellation_token)
            finally:
                tool._func = func

        # not a step of its own: a replayed step would hide the steps and markers inside the
        # tool, so the tool runs again on replay with the run context, and its side effects
        # are fenced by atomic_marker()/step() inside it
        return await call()

    tool.run = run
    tool.__letitloop_wrapped__ = True


def _agents(team_or_agent: Any) -> list[Any]:
    participants = getattr(team_or_agent, "_participants", None)
    if participants is None:
        return [team_or_agent]
    found: list[Any] = []
    for p in participants:  # a nested team's agents too
        found.extend(_agents(p))
    return found


def _instrument(team_or_agent: Any) -> None:
    for agent in _agents(team_or_agent):
        client = getattr(agent, "_model_client", None)
        if client is not None and not isinstance(client, _JournaledClient):
            agent._model_client = _JournaledClient(client, agent.name)
        for tool in getattr(agent, "_tools", None) or []:
            _journal_tool(tool, agent.name)


class DurableTeam:
    """A team or agent whose ``run`` is a durable letitloop run (``lil runs list`` shows it)."""

    def __init__(
        self,
        team_or_agent: Any,
        *,
        run_id: str,
        journal: Any = None,
        name: str = "autogen",
    ) -> None:
        if not run_id or not isinstance(run_id, str):
            raise ConfigError(
                f"durable_team() needs a run_id naming the conversation, got {run_id!r}",
                fix='pass run_id="essay" (the same id resumes the same run)',
            )
        self.team = team_or_agent
        self.run_id = run_id
        _instrument(team_or_agent)
        from letitloop.kernel._runtime import durable_async

        options: dict[str, Any] = {"name": f"autogen:{name}", "run_id": run_id}
        if journal is not None:
            options["journal"] = journal

        async def conversation(task: str | None) -> dict[str, Any]:
            result = await self.team.run(task=task)
            return {
                "messages": [m.dump() for m in result.messages],
                "stop_reason": result.stop_reason,
            }

        conversation.__qualname__ = f"autogen_{name}"
        self._run = durable_async(**options)(conversation)

    async def run(self, *, task: str | None = None) -> TaskResult:
        """Run (or resume) the conversation; the result's messages are rebuilt from JSON."""
        data = await self._run(task)
        factory = MessageFactory()
        messages = [factory.create(m) for m in data["messages"]]
        return TaskResult(messages=messages, stop_reason=data["stop_reason"])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.team, name)


def durable_team(
    team_or_agent: Any, *, run_id: str, journal: Any = None, name: str = "autogen"
) -> DurableTeam:
    """Wrap an AgentChat team or agent so ``await team.run(task=...)`` resumes after a crash."""
    return DurableTeam(team_or_agent, run_id=run_id, journal=journal, name=name)


class AutoGenStateSerializer:
    """Alias kept from the product's first description: ``wrap_agent`` is ``durable_team``."""

    def __init__(self, session_id: str, journal: str | os.PathLike[str] | None = None) -> None:
        self.session_id = session_id
        self.journal = journal

    def wrap_agent(self, agent: Any) -> DurableTeam:
        return durable_team(agent, run_id=self.session_id, journal=self.journal)

    wrap_team = wrap_agent
