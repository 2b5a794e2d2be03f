"""smolagents on the letitloop journal: an agent whose run resumes after a crash.

    from letitloop.adapters.smolagents import durable_agent
    agent = durable_agent(CodeAgent(tools=[...], model=model), run_id="research")
    answer = agent.run("...")   # kill the process anywhere, call again: it resumes

Each model call (``Model.generate``), each tool call (``Tool.forward``) and each managed
agent's run becomes a step of one durable run, keyed by its position. Called again after a
crash, the agent runs from its start: completed model and tool calls replay from the journal,
so its memory is rebuilt step by step, and the next model call is the first new one (the call
in flight when the process died runs again, once). A tool with side effects fences them with
``atomic_marker`` inside it, so they are never silently repeated. Token usage is the model
steps' cost; ``lil runs show`` lists the steps. smolagents is imported only by this module.
"""

from __future__ import annotations

import contextvars
from typing import Any

from letitloop.errors import ConfigError

try:
    import smolagents  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ConfigError(
        f"letitloop.adapters.smolagents needs smolagents, which is not installed ({exc})",
        fix="pip install 'letitloop[smolagents]'",
    ) from exc

from letitloop.adapters._smol_journal import Capture, Halt, agent_label, instrument

__all__ = ["DurableAgent", "SmolagentsWALCallback", "durable_agent"]


class DurableAgent:
    """A smolagents agent whose ``run`` is a durable letitloop run (``lil runs list`` shows it).

    The run is ``smolagents:<name>:<run_id>`` of workflow ``smolagents:<name>`` (``name``
    defaults to the agent's name, else its class). ``options`` are ``@durable``'s
    (``journal=``, ``budget=``, ``retry=``, ``lock_timeout=``...; see ``DurableOptions``). Any
    other attribute is the agent's.
    """

    def __init__(self, agent: Any, *, run_id: str, name: str | None = None, **options: Any) -> None:
        if not run_id or not isinstance(run_id, str):
            raise ConfigError(
                f"durable_agent() needs a run_id naming the run, got {run_id!r}",
                fix='pass run_id="research" (the same id resumes the same run)',
            )
        from letitloop.kernel import durable

        self.agent = agent
        self.run_id = run_id
        self._capture = Capture()
        instrument(agent, self._capture)
        capture = self._capture

        def agent_run(task: str, **kwargs: Any) -> Any:
            # again at each run: another durable_agent() of the same agent, or tools added
            # since, would otherwise leave calls on a worker thread outside this run
            instrument(agent, capture)
            capture.context, capture.agent = contextvars.copy_context(), agent_label(agent)
            try:
                return _plain(agent.run(task, **kwargs))
            except Halt as halt:  # a letitloop error, carried past smolagents' handlers
                raise halt.error from None
            finally:
                capture.context = None

        agent_run.__qualname__ = f"smolagents_{agent_label(agent)}"
        workflow = f"smolagents:{name or agent_label(agent)}"
        self._run = durable(name=workflow, run_id=run_id, **options)(agent_run)

    def run(self, task: str, **kwargs: Any) -> Any:
        """Run (or resume) the agent on ``task``; ``kwargs`` are ``agent.run``'s, except
        ``stream`` (the answer of a durable run is journaled whole)."""
        if kwargs.get("stream"):
            raise ConfigError(
                "a durable smolagents run cannot stream its steps (stream=True)",
                fix="call run(task) without stream=; watch the steps with `lil runs show` or "
                "the TUI instead",
            )
        kwargs.pop("stream", None)
        return _agent_type(self._run(task, **kwargs))

    __call__ = run

    def __getattr__(self, name: str) -> Any:
        return getattr(self.agent, name)


def _plain(answer: Any) -> Any:
    """An answer as the journal keeps it: ``AgentText`` (a ``str`` subclass) as JSON text."""
    from smolagents.agent_types import AgentText

    return str(answer) if isinstance(answer, AgentText) else answer


def _agent_type(answer: Any) -> Any:
    """The answer as smolagents returns it: text as ``AgentText``, on replay as on a run."""
    from smolagents.agent_types import AgentText

    return AgentText(answer) if isinstance(answer, str) else answer


def durable_agent(agent: Any, *, run_id: str, name: str | None = None, **options: Any) -> Any:
    """Wrap a smolagents ``CodeAgent`` or ``ToolCallingAgent`` (managed agents included) so
    ``agent.run(task)`` resumes after a crash; see ``DurableAgent``."""
    return DurableAgent(agent, run_id=run_id, name=name, **options)


class SmolagentsWALCallback:
    """The name from the product's first description, kept as a thin alias of
    ``durable_agent``: ``SmolagentsWALCallback(session_id="s1").wrap_agent(agent)``."""

    def __init__(self, session_id: str, **options: Any) -> None:
        self.session_id = session_id
        self.options = options

    def wrap_agent(self, agent: Any) -> DurableAgent:
        return DurableAgent(agent, run_id=self.session_id, **self.options)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(
            "SmolagentsWALCallback is no longer a step callback: a callback sees steps after "
            "they ran, so it cannot make a run resume",
            fix='wrap the agent instead: agent = SmolagentsWALCallback(session_id="s1")'
            ".wrap_agent(agent), then agent.run(task)",
        )
