"""The front door stays small and cheap; the kernel imports no front end."""

from __future__ import annotations

from pathlib import Path

import letitloop
from tests.conftest import modules_after

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ["duckdb", "textual", "pygls", "lsprotocol", "ipywidgets", "libcst", "IPython", "rich"]


def test_import_letitloop_loads_no_heavy_module() -> None:
    loaded = modules_after("import letitloop")
    assert not [m for m in HEAVY if m in loaded]
    assert "asyncio" not in loaded and "msgpack" not in loaded  # resolved lazily, on first use


def test_kernel_runtime_loads_no_front_end() -> None:
    loaded = modules_after(
        "from letitloop import durable, step, atomic_marker, durable_async, async_step\n"
        "import letitloop.kernel._client, letitloop.kernel._memory"
    )
    assert not [m for m in HEAVY if m in loaded]
    assert not [m for m in loaded if m.startswith(("letitloop.cli", "letitloop.tui"))]


def test_kernel_sources_import_no_front_end() -> None:
    rooms = ("letitloop.cli", "letitloop.notebook_ext", "letitloop.lsp", "letitloop.tui")
    for path in (ROOT / "letitloop" / "kernel").glob("*.py"):
        text = path.read_text()
        for room in rooms:
            assert f"import {room}" not in text and f"from {room}" not in text, (path, room)


def test_exported_members_resolve_and_are_documented() -> None:
    assert letitloop.__all__ == sorted(letitloop.__all__)
    for name in letitloop.__all__:
        value = getattr(letitloop, name)
        assert value.__doc__, f"{name} has no docstring"
    assert set(letitloop.__all__) <= set(dir(letitloop))
