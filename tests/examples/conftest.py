"""The ``example`` fixture: a cookbook example's folder in a stand-in checkout of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.examples.cookbook import Example


@pytest.fixture
def example(tmp_path: Path) -> Iterator[Callable[..., Example]]:
    """``example("research_pipeline")``: the folder, copied; its processes and journal owners
    are stopped after the test."""
    made: list[Example] = []

    def make(name: str, **env: str) -> Example:
        ex = Example(name, tmp_path / f"{name}-{len(made) + 1}", extra_env=env)
        made.append(ex)
        return ex

    yield make
    for ex in made:
        ex.close()
