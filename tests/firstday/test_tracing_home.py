"""Issue 29, point 5: `use_tracer_provider` has a public home, and the docs import it from there."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import modules_after

DOC = Path(__file__).resolve().parents[2] / "docs" / "tracing.md"


def test_the_tracing_docs_import_only_public_modules() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks
    code = "\n".join(blocks)
    assert "from letitloop.tracing import use_tracer_provider" in code
    assert not re.search(r"letitloop(\.\w+)*\._\w+", code), "a private module in the docs"


def test_the_public_home_is_cheap_and_the_front_door_stays_so() -> None:
    from letitloop import tracing
    from letitloop.kernel import _tracing

    assert tracing.use_tracer_provider is _tracing.use_tracer_provider
    assert tracing.__all__ == ["use_tracer_provider"]
    loaded = modules_after("import letitloop.tracing")
    assert not {m for m in loaded if m.startswith("opentelemetry")}
    assert "letitloop.tracing" not in modules_after("import letitloop; letitloop.durable")
