"""The front door stays small and cheap; the kernel imports no front end."""

from __future__ import annotations

from pathlib import Path

import letitloop
from tests.conftest import modules_after

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ["duckdb", "textual", "pygls", "lsprotocol", "ipywidgets", "libcst", "IPython", "rich"]
HEAVY += ["psycopg"]  # the PostgreSQL driver: imported only when a Postgres journal is opened


def test_import_letitloop_loads_no_heavy_module() -> None:
    loaded = modules_after("import letitloop")
    assert not [m for m in HEAVY if m in loaded]
    assert "asyncio" not in loaded and "msgpack" not in loaded  # resolved lazily, on first use


def test_kernel_runtime_loads_no_front_end() -> None:
    loaded = modules_after(
        "from letitloop import durable, step, atomic_marker, durable_async, async_step\n"
        "import letitloop.journal.duckdb._client, letitloop.journal._memory"
    )
    assert not [m for m in HEAVY if m in loaded]
    assert not [m for m in loaded if m.startswith(("letitloop.cli", "letitloop.tui"))]


FRONT_ENDS = (
    "letitloop.cli",
    "letitloop.notebook_ext",
    "letitloop.lsp",
    "letitloop.tui",
    "letitloop.jupyter",
    "letitloop.splice",
    "letitloop.adapters",
)
BACKENDS = ("letitloop.journal.duckdb", "letitloop.journal.postgres")


def _imports(path: Path, rooms: tuple[str, ...]) -> list[str]:
    text = path.read_text()
    return [room for room in rooms if f"import {room}" in text or f"from {room}" in text]


def test_kernel_sources_import_no_front_end() -> None:
    for path in (ROOT / "letitloop" / "kernel").glob("*.py"):
        assert not _imports(path, FRONT_ENDS), path


def test_runtime_imports_no_backend_directly() -> None:
    """The runtime reaches a backend only through ``letitloop.journal.open_journal``."""
    for path in (ROOT / "letitloop" / "kernel").glob("*.py"):
        assert not _imports(path, BACKENDS), path


def test_backends_import_no_front_end() -> None:
    for path in (ROOT / "letitloop" / "journal").rglob("*.py"):
        assert not _imports(path, FRONT_ENDS), path


def test_exported_members_resolve_and_are_documented() -> None:
    assert letitloop.__all__ == sorted(letitloop.__all__)
    for name in letitloop.__all__:
        value = getattr(letitloop, name)
        assert value.__doc__, f"{name} has no docstring"
    assert set(letitloop.__all__) <= set(dir(letitloop))
