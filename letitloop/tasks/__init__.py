"""``lil run --task NAME``: a durable runner for coding-agent tasks.

    from letitloop.tasks import load_task, run_task

    result = run_task(".", "auth-refactor", strict=True)

A task file (``tasks/NAME.toml``) names the goal, the paths the agent may change, the agents to
try in order (presets for headless coding CLIs, or any command), acceptance checks and limits.
Each agent attempt is a durable step; failed checks are the next attempt's critique. See
docs/tasks.md.
"""

from __future__ import annotations

from letitloop._lazy import lazy_exports

TYPE_CHECKING = False

_EXPORTS = {
    "load_task": "letitloop.tasks._model",
    "TaskSpec": "letitloop.tasks._model",
    "Agent": "letitloop.tasks._model",
    "Check": "letitloop.tasks._model",
    "Limits": "letitloop.tasks._model",
    "TaskError": "letitloop.tasks._model",
    "TaskFileError": "letitloop.tasks._model",
    "TaskStateError": "letitloop.tasks._model",
    "PRESETS": "letitloop.tasks._agents",
    "run_task": "letitloop.tasks._runner",
    "run_id_of": "letitloop.tasks._runner",
    "task_detail": "letitloop.tasks._report",
    "task_runs": "letitloop.tasks._report",
}
__all__ = [
    "PRESETS",
    "Agent",
    "Check",
    "Limits",
    "TaskError",
    "TaskFileError",
    "TaskStateError",
    "TaskSpec",
    "load_task",
    "run_id_of",
    "run_task",
    "task_detail",
    "task_runs",
]

if TYPE_CHECKING:
    from letitloop.tasks._agents import PRESETS
    from letitloop.tasks._model import (
        Agent,
        Check,
        Limits,
        TaskError,
        TaskFileError,
        TaskSpec,
        TaskStateError,
        load_task,
    )
    from letitloop.tasks._report import task_detail, task_runs
    from letitloop.tasks._runner import run_id_of, run_task

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
