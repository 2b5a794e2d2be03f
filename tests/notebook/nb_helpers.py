"""Step functions for notebooks run by the tests (imported by the notebook's kernel)."""

from __future__ import annotations

import dataclasses
import os
import time


def work(i: int) -> int:
    """A slow side effect: one line per execution in $NB_SIDE_EFFECTS."""
    with open(os.environ["NB_SIDE_EFFECTS"], "a") as f:
        f.write(f"{i} {os.getpid()}\n")
    time.sleep(float(os.environ.get("NB_STEP_SECONDS", "0.1")))
    return i * i


@dataclasses.dataclass
class Usage:
    """Token counts, as a model client returns them."""

    input: int
    output: int


@dataclasses.dataclass
class Response:
    """A model's answer: what a step output usually is (the inspector previews its fields)."""

    text: str
    usage: Usage
