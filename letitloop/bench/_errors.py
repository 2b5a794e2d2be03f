"""The benchmark's errors, in letitloop's one hierarchy (each says what happened and the fix).

LetItLoopError
└── BenchError          the benchmark cannot run as asked (an option, an environment)
    └── ScenarioError       a scenario file is missing or malformed
"""

from __future__ import annotations

from letitloop.errors import LetItLoopError


class BenchError(LetItLoopError):
    """``lil bench`` cannot run as asked."""

    title = "benchmark cannot run"


class ScenarioError(BenchError):
    """A scenario file is missing, unreadable or malformed."""

    title = "bad scenario file"
