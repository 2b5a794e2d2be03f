"""The front door stays small and cheap, and the layers point one way.

The import rules (front ends never import each other; the base imports nothing; the journal and
its backends import no runtime, operate layer or front end; the runtime no operate layer or front
end; only the journal's face reaches a backend) are import-linter contracts in pyproject.toml,
run here. Our own checks add what import-linter cannot say: a package's private modules are
imported only inside that package (everyone else uses its face), and no module is over 600
lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import letitloop
from tests.conftest import modules_after

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ["duckdb", "textual", "pygls", "lsprotocol", "ipywidgets", "libcst", "IPython", "rich"]
HEAVY += ["psycopg"]  # the PostgreSQL driver: imported only when a Postgres journal is opened
HEAVY += ["mcp", "mcp_types", "starlette", "uvicorn", "pydantic"]  # lil mcp's, when it starts


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
    "letitloop.mcp",
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


def test_the_import_contracts_hold() -> None:
    """``lint-imports`` with the contracts of pyproject.toml (a broken one names the chain)."""
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(ROOT / "pyproject.toml")) == 0


# packages whose modules are private (``_name``) behind a face (their ``__init__``)
FACES = ("letitloop.journal", "letitloop.kernel", "letitloop.operate", "letitloop.memory")
# the journal-administration commands (lil journal stop|status|sql|doctor|copy|quarantine, and
# the demo that stops its own owner) speak to the DuckDB or PostgreSQL backend as such
ADMIN = {
    "letitloop/cli/_doctor.py",
    "letitloop/cli/_journal.py",
    "letitloop/cli/_journal_copy.py",
    "letitloop/cli/_quarantine.py",
    "letitloop/cli/_notify.py",
    "letitloop/cli/_shared.py",
    "letitloop/cli/_demo.py",
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, with its line: ``import a.b`` and ``from a.b import c``
    give ``a.b``; ``from a import _b`` gives ``a._b`` (a private name is a module or as bad)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [
                (node.lineno, f"{node.module}.{alias.name}")
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
    return found


def private_imports(path: Path) -> list[str]:
    """Imports by ``path`` of a private module of a package with a face, from outside it."""
    own = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    bad = []
    for line, module in imported_modules(path):
        parts = module.split(".")
        for i, part in enumerate(parts[1:], start=1):
            if part.startswith("_") and not part.startswith("__"):
                package = ".".join(parts[:i])  # the package whose private module this is
                face = next((f for f in FACES if package == f or package.startswith(f + ".")), "")
                if face and not (own == face or own.startswith(face + ".")):
                    bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
                break
    return sorted(set(bad))


def test_other_packages_import_a_face_never_its_private_modules() -> None:
    bad = []
    for path in sorted((ROOT / "letitloop").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "letitloop/__init__.py" or rel in ADMIN:
            continue  # the front door resolves its names from the runtime's modules
        bad += private_imports(path)
    assert not bad, "\n".join(bad)


def test_the_private_import_check_finds_a_violation(tmp_path: Path) -> None:
    """The checker itself: a module that reaches behind a face is named with its line."""
    module = ROOT / "letitloop" / "cli" / "_probe_layering.py"
    module.write_text("from letitloop.journal._state import error_dict\nimport letitloop.operate\n")
    try:
        assert private_imports(module) == [
            "letitloop/cli/_probe_layering.py:1 imports letitloop.journal._state"
        ]
    finally:
        module.unlink()


LIMIT = 600


@pytest.mark.parametrize("path", sorted((ROOT / "letitloop").rglob("*.py")), ids=str)
def test_no_module_is_over_600_lines(path: Path) -> None:
    rel = path.relative_to(ROOT).as_posix()
    lines = len(path.read_text().splitlines())
    assert lines <= LIMIT, f"{rel} has {lines} lines: split it by job (one concept a module)"


def test_faces_resolve_every_name() -> None:
    import importlib

    for face in FACES:
        module = importlib.import_module(face)
        assert module.__all__ == sorted(module.__all__), face
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{face}.{name}"


def _imported_modules(path: Path) -> set[str]:
    """Every module a source file imports, at its top or inside a function."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_duckdb_client_side_never_imports_duckdb() -> None:
    """Only the owner package opens DuckDB: the client side (client, connection, link, wire,
    files) imports neither duckdb nor anything of the owner's, so a workflow never loads it."""
    client_side = ROOT / "letitloop" / "journal" / "duckdb"
    checked = 0
    for path in client_side.glob("*.py"):
        imported = _imported_modules(path)
        assert not {m for m in imported if m == "duckdb" or m.startswith("duckdb.")}, path
        assert not [m for m in imported if m.startswith("letitloop.journal.duckdb.owner")], path
        checked += 1
    assert checked >= 5
    owner = client_side / "owner"
    assert any("duckdb" in _imported_modules(p) for p in owner.glob("*.py"))  # (it is there)


# the notebook's magic drives the runtime itself: only these of its modules use the runtime's face
NOTEBOOK_RUNTIME = ("_cell.py", "_progress.py")
NOTEBOOK_MAY_IMPORT = (
    "letitloop",  # the front door's public names, and ``from letitloop import operate``
    "letitloop.operate",
    "letitloop.journal",
    "letitloop.errors",
    "letitloop._lazy",
)


def test_the_notebook_reads_and_acts_through_operate() -> None:
    """notebook_ext imports operate, the journal's face and errors: no other front end, no
    backend; the runtime's face only where the magic runs a cell."""
    for path in (ROOT / "letitloop" / "notebook_ext").glob("*.py"):
        for line, module in imported_modules(path):
            if not module.startswith("letitloop") or module.startswith("letitloop.notebook_ext"):
                continue
            where = f"{path.name}:{line} imports {module}"
            if module == "letitloop.kernel":
                assert path.name in NOTEBOOK_RUNTIME, where
            else:
                assert module in NOTEBOOK_MAY_IMPORT, where
