"""CrewAI on the letitloop journal: a Crew or a Flow whose kickoff resumes after a crash.

    from letitloop.adapters.crewai import durable_crew
    crew = durable_crew(Crew(agents=[...], tasks=[...]), run_id="report")
    result = crew.kickoff(inputs={"topic": "otters"})   # kill the process, call again: it resumes

The kickoff is a durable run (workflow ``crewai:<crew name>``, so ``lil runs list`` shows it).
Each task, model call and tool call is a step keyed by its position: called again after a
crash, finished tasks are skipped with their outputs restored, completed model and tool calls
inside the task that was running replay from the journal, and only the model call in flight
runs again. A tool's side effect inside ``atomic_marker`` is never silently repeated. Flows are
the same with one step per method, whose replay also restores the flow state. Token usage the
models report becomes each step's cost.

CrewAI's own ``CheckpointConfig`` is not used: it silently writes nothing for crews with
``@tool`` tools, and ``Crew.from_checkpoint`` rebuilds a custom ``BaseLLM`` as an OpenAI client;
the adapter restores into the live objects instead.
"""

from __future__ import annotations

import os
from typing import Any

from letitloop.errors import ConfigError

try:
    from crewai import Crew
    from crewai.crews.crew_output import CrewOutput
    from crewai.flow.flow import Flow
    from crewai.types.usage_metrics import UsageMetrics
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ConfigError(
        f"letitloop.adapters.crewai needs CrewAI, which is not installed ({exc})",
        fix="pip install 'letitloop[crewai]'",
    ) from exc

from letitloop.adapters import _crew_wrap as wrap

__all__ = ["CrewAIDurabilityHandler", "DurableCrew", "DurableFlow", "durable_crew"]

Journal = Any  # a journal object, a path, or None for the journal found as usual


class _DurableKickoff:
    """What a durable Crew and a durable Flow share: the run, its options, the guard."""

    kind = "crew"

    def __init__(
        self,
        target: Any,
        run_id: str | None,
        journal: Journal,
        name: str | None,
        options: dict[str, Any],
    ) -> None:
        if run_id is not None and (not isinstance(run_id, str) or not run_id):
            raise ConfigError(
                f"durable_crew() run_id must be a non-empty string, got {run_id!r}",
                fix='pass run_id="report" (the same id resumes the same run), or leave it out '
                "to key the run by the kickoff's inputs",
            )
        self.target = target
        self.run_id = run_id
        self.guard = wrap.Guard()
        label = name or getattr(target, "name", None) or type(target).__name__
        self.workflow = f"crewai:{label}"
        from letitloop.kernel import durable

        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise ConfigError(
                f"durable_crew() got unknown option(s) {', '.join(unknown)}",
                fix="pass only run_id=, journal=, name= and @durable's "
                + ", ".join(f"{o}=" for o in sorted(_OPTIONS)),
            )
        options = {**options, "name": self.workflow, "run_id": run_id}
        if journal is not None:
            options["journal"] = journal

        def kickoff(inputs: dict[str, Any] | None) -> Any:
            self.guard.stop = None
            try:
                return self._kickoff(inputs)
            finally:
                self.guard.stop = None

        kickoff.__qualname__ = f"crewai_{self.kind}"
        self._run = durable(**options)(kickoff)

    def _kickoff(self, inputs: dict[str, Any] | None) -> Any:
        raise NotImplementedError

    def _unjournaled(self, name: str) -> ConfigError:
        return ConfigError(
            f"{name}() of a durable {self.kind} is not journaled: it would run outside the run",
            fix=f"call kickoff(inputs) (from async code: await asyncio.to_thread("
            f"{self.kind}.kickoff, inputs)), once per input for kickoff_for_each",
        )

    def __getattr__(self, name: str) -> Any:
        if name in _UNJOURNALED:
            raise self._unjournaled(name)
        return getattr(self.target, name)


_OPTIONS = frozenset(
    ("budget", "retry", "timeout", "lock_timeout", "allow_pickle", "ignore_args", "on_change")
)
_UNJOURNALED = frozenset(
    ("akickoff", "kickoff_async", "kickoff_for_each", "kickoff_for_each_async", "akickoff_for_each")
)


class DurableCrew(_DurableKickoff):
    """A crew whose ``kickoff`` is a durable letitloop run (see the module docstring)."""

    def __init__(
        self,
        crew: Crew,
        *,
        run_id: str | None,
        journal: Journal,
        name: str | None,
        **options: Any,
    ) -> None:
        if crew.stream:
            raise ConfigError(
                "durable_crew() got a streaming crew (stream=True): its chunks cannot be journaled",
                fix="build the crew with stream=False to make it durable",
            )
        super().__init__(crew, run_id, journal, name, options)
        wrap.journal_crew(crew, self.guard)

    @property
    def crew(self) -> Crew:
        return self.target

    def _kickoff(self, inputs: dict[str, Any] | None) -> dict[str, Any]:
        out = self.crew.kickoff(inputs=inputs)
        if not isinstance(out, CrewOutput):
            raise ConfigError(
                f"durable_crew() got a {type(out).__name__} from kickoff (streaming turned on?)",
                fix="build the crew with stream=False to make it durable",
            )
        return _dump_crew_output(out)

    def kickoff(self, inputs: dict[str, Any] | None = None) -> CrewOutput:
        """Run the crew, or resume it: finished tasks are skipped with their outputs restored."""
        out = _load_crew_output(self._run(inputs))
        for task, task_out in zip(self.crew.tasks, out.tasks_output, strict=False):
            if task.output is None:  # the run had completed: its outputs come from the journal
                object.__setattr__(task, "output", task_out)
        return out


class DurableFlow(_DurableKickoff):
    """A flow whose ``kickoff`` is a durable letitloop run: one step per method."""

    kind = "flow"

    def __init__(
        self,
        flow: Flow[Any],
        *,
        run_id: str | None,
        journal: Journal,
        name: str | None,
        **options: Any,
    ) -> None:
        if getattr(flow, "stream", False):
            raise ConfigError(
                "durable_crew() got a streaming flow (stream=True): its chunks cannot be journaled",
                fix="set stream = False on the flow to make it durable",
            )
        super().__init__(flow, run_id, journal, name, options)
        wrap.journal_flow(flow, self.guard)

    @property
    def flow(self) -> Flow[Any]:
        return self.target

    def _kickoff(self, inputs: dict[str, Any] | None) -> dict[str, Any]:
        result = self.flow.kickoff(inputs=inputs)
        return {"result": result, "state": wrap.dump_state(self.flow)}

    def kickoff(self, inputs: dict[str, Any] | None = None) -> Any:
        """Run the flow, or resume it: finished methods are skipped, their state restored."""
        data = self._run(inputs)
        wrap.restore_state(self.flow, data["state"])
        return data["result"]


def durable_crew(
    crew_or_flow: Any,
    *,
    run_id: str | None = None,
    journal: Journal = None,
    name: str | None = None,
    board: bool = False,
    **options: Any,
) -> Any:
    """Make a CrewAI ``Crew`` (a ``DurableCrew``) or ``Flow`` (a ``DurableFlow``) resumable.

    ``run_id`` names the run (the same id resumes it; default: keyed by the kickoff's inputs),
    ``journal`` is a journal object or path (default: found as usual), ``name`` the workflow
    shown as ``crewai:<name>`` (default: the crew's or flow's name). The other keywords are
    ``@durable``'s (``budget=``, ``retry=``, ``timeout=``, ``lock_timeout=``...). With
    ``board=True`` each finished task's output is put on the run's blackboard as
    ``task/<name>`` (``letitloop.memory``); tools and flow methods use ``blackboard()`` anyway.
    """
    if isinstance(crew_or_flow, Crew):
        durable_one = DurableCrew(
            crew_or_flow, run_id=run_id, journal=journal, name=name, **options
        )
        durable_one.guard.board = board
        return durable_one
    if isinstance(crew_or_flow, Flow):
        return DurableFlow(crew_or_flow, run_id=run_id, journal=journal, name=name, **options)
    raise ConfigError(
        f"durable_crew() takes a crewai Crew or Flow, got {type(crew_or_flow).__name__}",
        fix="pass the Crew(...) or your Flow subclass instance itself",
    )


class CrewAIDurabilityHandler:
    """The name from the product's first description, kept as an alias of ``durable_crew``:
    ``CrewAIDurabilityHandler(session_id="report").wrap_crew(crew)``."""

    def __init__(
        self, session_id: str, journal: str | os.PathLike[str] | Journal | None = None
    ) -> None:
        self.session_id = session_id
        self.journal = journal

    def wrap_crew(self, crew: Crew) -> DurableCrew:
        return durable_crew(crew, run_id=self.session_id, journal=self.journal)  # type: ignore[no-any-return]

    def wrap_flow(self, flow: Flow[Any]) -> DurableFlow:
        return durable_crew(flow, run_id=self.session_id, journal=self.journal)  # type: ignore[no-any-return]


def _dump_crew_output(out: CrewOutput) -> dict[str, Any]:
    return {
        "raw": out.raw,
        "pydantic": out.pydantic,
        "json_dict": out.json_dict,
        "tasks_output": [wrap.dump_task_output(t) for t in out.tasks_output],
        "token_usage": out.token_usage.model_dump(mode="json"),
    }


def _load_crew_output(data: dict[str, Any]) -> CrewOutput:
    return CrewOutput(
        raw=data["raw"],
        pydantic=data["pydantic"],
        json_dict=data["json_dict"],
        tasks_output=[wrap.load_task_output(t) for t in data["tasks_output"]],
        token_usage=UsageMetrics.model_validate(data["token_usage"]),
    )
