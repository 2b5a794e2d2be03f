"""AutoGen AgentChat on the letitloop journal: a team (or one agent) whose run resumes.

    from letitloop.adapters.autogen import durable_team
    team = durable_team(RoundRobinGroupChat([writer, critic], ...), run_id="essay")
    result = await team.run(task="write a haiku")   # kill the process, call again: it resumes

Every model call (``create``/``create_stream`` of each agent's model client, and a selector's)
is a step of one durable run keyed by its position, never by the request's content
(``ChatCompletionCache`` keys by content, so two equal prompts would share one answer). Every
tool call (a workbench's ``call_tool``) is a step too, whose body is a child run: a tool's own
``step()``/``atomic_marker()`` calls are journaled there, so a completed tool call returns its
journaled result and a side effect is never silently repeated. Called again after a crash, the
team runs from its start and the journal answers every completed call: the conversation is
rebuilt message by message (that is the team's state, journaled per message), the same next
speaker takes its turn, and the first model call that really runs is the one in flight when
the process died. The result's messages are journaled as JSON and rebuilt with AutoGen's
``MessageFactory`` (a ``TaskResult`` itself has no decodable form). Token usage is the step's
cost. The run is an ordinary letitloop run: ``lil runs list/show``, budgets, approvals.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import AsyncGenerator, Sequence
from contextvars import ContextVar
from typing import Any, TypeAlias

from letitloop.errors import ConfigError

try:
    from autogen_agentchat.base import TaskResult
    from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, MessageFactory
    from autogen_core import CancellationToken
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ConfigError(
        f"letitloop.adapters.autogen needs AutoGen AgentChat, which is not installed ({exc})",
        fix="pip install 'letitloop[autogen]'",
    ) from exc

from letitloop.adapters._autogen_calls import RUN, TeamRun, instrument, reset_clients

__all__ = ["AutoGenStateSerializer", "DurableTeam", "durable_team"]

Task: TypeAlias = str | BaseChatMessage | Sequence[BaseChatMessage] | None


@dataclasses.dataclass
class _Call:
    """What one ``run``/``run_stream`` call passes around the journal (never journaled)."""

    cancellation_token: CancellationToken | None = None
    sink: asyncio.Queue[Any] | None = None  # run_stream: messages as the team produces them
    streamed: int = 0


_CALL: ContextVar[_Call | None] = ContextVar("letitloop_autogen_call", default=None)


def _task_arg(task: Task) -> Any:
    """The task as the run's journaled argument: a message without its fresh id and time, so
    the same task given again after a crash names the same run."""
    if task is None or isinstance(task, str):
        return task
    if isinstance(task, BaseChatMessage):
        return _bare(task)
    return [_bare(m) for m in task]


def _bare(message: BaseChatMessage) -> dict[str, Any]:
    data = dict(message.dump())
    data.pop("id", None)
    data.pop("created_at", None)
    return data


class DurableTeam:
    """A team or agent whose ``run`` (and ``run_stream``) is a durable letitloop run."""

    def __init__(
        self,
        team_or_agent: Any,
        *,
        run_id: str,
        journal: Any = None,
        name: str | None = None,
        board: bool = False,
        **options: Any,
    ) -> None:
        if not run_id or not isinstance(run_id, str):
            raise ConfigError(
                f"durable_team() needs a run_id naming the conversation, got {run_id!r}",
                fix='pass run_id="essay" (the same id resumes the same run)',
            )
        if not callable(getattr(team_or_agent, "run_stream", None)):
            raise ConfigError(
                f"durable_team() takes an AgentChat team or agent, got {type(team_or_agent)!r}",
                fix="pass e.g. RoundRobinGroupChat([...]) or AssistantAgent(...)",
            )
        self.team = team_or_agent
        self.run_id = run_id
        self.name = name or str(getattr(team_or_agent, "name", None) or "team")
        self.workflow = f"autogen:{self.name}"
        self.board = board  # each message of the team a turn of the thread <name> on the board
        self._factory: MessageFactory = getattr(team_or_agent, "_message_factory", None) or (
            MessageFactory()
        )
        self._ran = False  # the team ran in this process: rewind it before a replay
        instrument(team_or_agent)
        from letitloop.kernel import durable_async

        for fixed in ("name", "run_id", "goal_id", "reopen", "ignore_args"):
            if fixed in options:
                raise ConfigError(
                    f"durable_team() sets {fixed}= itself",
                    fix="name the run with run_id= and the workflow with name=",
                )
        options |= {"name": self.workflow, "run_id": run_id}
        if journal is not None:
            options["journal"] = journal

        async def conversation(task: Any, output_task_messages: bool) -> dict[str, Any]:
            return await self._conversation(task, output_task_messages)

        conversation.__qualname__ = f"autogen_{self.name}"
        self._durable = durable_async(**options)(conversation)
        # inside another durable run without a journal of its own, the team's run is a child
        # run in the parent's journal (not in the one found from the current directory)
        self._child = None if journal is not None else (options, conversation)

    def _run(self, task: Any, output_task_messages: bool) -> Any:
        from letitloop.kernel import current_run

        parent = current_run.get()
        if parent is None or self._child is None:
            return self._durable(task, output_task_messages)
        from letitloop.kernel import durable_async

        options, conversation = self._child
        durable = durable_async(**options, journal=parent.journal)(conversation)
        return durable(task, output_task_messages)

    async def _rewind(self) -> None:
        """Back to the initial state, so replaying the journal rebuilds the conversation."""
        if hasattr(self.team, "_participants"):
            if getattr(self.team, "_embedded_runtime", False):
                # after an agent's error the embedded runtime never runs the chat again ("The
                # group chat is stopped."): give the team a fresh one, as its constructor does
                from autogen_core import SingleThreadedAgentRuntime

                self.team._runtime = SingleThreadedAgentRuntime(ignore_unhandled_exceptions=False)
                self.team._initialized = False
            await self.team.reset()
        else:
            await self.team.on_reset(CancellationToken())
        reset_clients(self.team)

    def _task(self, task: Any) -> Task:
        if task is None or isinstance(task, str):
            return task
        if isinstance(task, dict):
            return self._factory.create(task)
        return [self._factory.create(m) for m in task]

    async def _conversation(self, task: Any, output_task_messages: bool) -> dict[str, Any]:
        call = _CALL.get() or _Call()
        run = TeamRun(self.workflow, self.run_id)
        token = RUN.set(run)
        try:
            if self._ran:
                await self._rewind()
            self._ran = True
            result: TaskResult | None = None
            try:
                stream = self.team.run_stream(
                    task=self._task(task),
                    cancellation_token=call.cancellation_token,
                    output_task_messages=output_task_messages,
                )
                async for item in stream:
                    if isinstance(item, TaskResult):
                        result = item
                    elif call.sink is not None:
                        call.streamed += 1
                        call.sink.put_nowait(item)
            except Exception:
                run.check()  # AutoGen hides it behind a RuntimeError: the original wins
                raise
            run.check()
            assert result is not None, "AgentChat's run_stream ended without a TaskResult"
            if self.board:
                self._to_thread(result)
            return {
                "messages": [dict(m.dump()) for m in result.messages],
                "stop_reason": result.stop_reason,
            }
        finally:
            RUN.reset(token)

    def _to_thread(self, result: TaskResult) -> None:
        """The team's messages as the turns of its thread (journaled board writes, after the
        conversation: a resumed run replays them at the same positions)."""
        from letitloop.memory import agents

        thread = agents.thread(self.name)
        for m in result.messages:
            role = "user" if m.source == "user" else "assistant"
            thread.say(m.source, m.to_text(), role=role)

    def _result(self, data: dict[str, Any]) -> TaskResult:
        messages = [self._factory.create(m) for m in data["messages"]]
        return TaskResult(messages=messages, stop_reason=data["stop_reason"])

    async def run(
        self,
        *,
        task: Task = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> TaskResult:
        """Run (or resume, or return the journaled result of) the conversation."""
        token = _CALL.set(_Call(cancellation_token))
        try:
            data = await self._run(_task_arg(task), output_task_messages)
        finally:
            _CALL.reset(token)
        return self._result(data)

    async def run_stream(
        self,
        *,
        task: Task = None,
        cancellation_token: CancellationToken | None = None,
        output_task_messages: bool = True,
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | TaskResult, None]:
        """Like AgentChat's ``run_stream``: each message as it comes (replayed ones too), then
        the ``TaskResult``; a completed run yields its journaled messages."""
        call = _Call(cancellation_token, asyncio.Queue())
        token = _CALL.set(call)
        try:
            running = asyncio.ensure_future(self._run(_task_arg(task), output_task_messages))
        finally:
            _CALL.reset(token)
        assert call.sink is not None
        try:
            while True:
                getting = asyncio.ensure_future(call.sink.get())
                await asyncio.wait({getting, running}, return_when=asyncio.FIRST_COMPLETED)
                if getting.done():
                    yield getting.result()
                    continue
                getting.cancel()
                while not call.sink.empty():
                    yield call.sink.get_nowait()
                break
            result = self._result(running.result())
            if call.streamed == 0:  # journaled before: nothing ran, show what it said
                for message in result.messages:
                    yield message
            yield result
        finally:
            if not running.done():
                running.cancel()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.team, name)


def durable_team(
    team_or_agent: Any,
    *,
    run_id: str,
    journal: Any = None,
    name: str | None = None,
    board: bool = False,
    **options: Any,
) -> DurableTeam:
    """Wrap an AgentChat team or agent so ``await team.run(task=...)`` resumes after a crash.

    ``run_id`` names the conversation (the same id resumes it); ``journal`` is a path or
    journal object (default: found as usual); ``name`` names the workflow ``autogen:NAME``
    (default: the team's or agent's name). The other keywords are ``@durable``'s (``budget=``,
    ``retry=``, ``timeout=``, ``lock_timeout=``, ``on_change=``...), applied to the run. With
    ``board=True`` the team's messages become the turns of the blackboard thread ``NAME``
    (``letitloop.memory``: ``lil runs show`` shows it as a conversation); tools may use
    ``blackboard()`` anyway (a tool call is a child run: it writes the team's board).
    """
    return DurableTeam(
        team_or_agent, run_id=run_id, journal=journal, name=name, board=board, **options
    )


class AutoGenStateSerializer:
    """The name from the product's first description, kept as a thin alias:
    ``AutoGenStateSerializer(session_id="s1").wrap_agent(agent)`` is
    ``durable_team(agent, run_id="s1")`` (``wrap_team`` too)."""

    def __init__(
        self, session_id: str, journal: str | os.PathLike[str] | Any | None = None
    ) -> None:
        self.session_id = session_id
        self.journal = journal

    def wrap_agent(self, agent: Any) -> DurableTeam:
        return durable_team(agent, run_id=self.session_id, journal=self.journal)

    wrap_team = wrap_agent
