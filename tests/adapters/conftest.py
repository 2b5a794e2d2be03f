"""Where each agent framework's own environment lives (built by ``make adapters``)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def framework_python(name: str) -> Path:
    """The interpreter of ``.venvs/NAME`` (letitloop editable plus the framework); a missing one
    fails the test with the command that builds it, never skips it."""
    python = ROOT / ".venvs" / name / "bin" / "python"
    if not (python.parent.parent / ".installed").exists():
        msg = f"no environment for {name}: run `make adapters` (builds .venvs/{name})"
        raise AssertionError(msg)
    return python
