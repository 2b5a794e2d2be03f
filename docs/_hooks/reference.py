"""The site's reference pages, written from the code at build time (see ``site.py``).

The Python API is documented by its public names only: ``letitloop.__all__`` (the front door,
whatever module a name lives in today), the classes of the errors module, the journal's face and
each public adapter module. mkdocstrings renders each from its docstring; a name moved between
private modules keeps its page and its anchor. The CLI reference is ``lil --help`` of every
command and subcommand, as the user would see it in a terminal 80 columns wide.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[2]

# Front-door names by task; a name not listed here still appears, under "More".
SECTIONS: dict[str, list[str]] = {
    "Durable functions and steps": [
        "durable",
        "durable_async",
        "step",
        "async_step",
        "atomic_marker",
        "current_step",
        "DurableOptions",
        "StepOptions",
    ],
    "Policies: retries, validation, budgets, limits": [
        "Retry",
        "Invalid",
        "Budget",
        "Limit",
        "record_cost",
    ],
    "People in the loop": ["approval", "async_approval", "suspend", "Decision"],
    "Forks and supervision": ["fork_run", "run_fork", "fork_thread", "supervise"],
    "Journals": ["open_journal", "MemoryJournal"],
    "Notebooks": ["runs", "report", "load_ipython_extension", "unload_ipython_extension"],
}
OPTIONS = "    options:\n      heading_level: 3\n"


def api_pages() -> dict[str, str]:
    """``reference/*.md`` for the Python API, as ``{path: markdown}``."""
    return {
        "reference/api.md": _front_door(),
        "reference/errors.md": _errors(),
        "reference/journal.md": _journal(),
        "reference/tracing.md": _module_page(
            "letitloop.tracing",
            "Tracing",
            "Trace runs and steps with OpenTelemetry; the guide is [Tracing](../tracing.md).",
        ),
        "reference/adapters.md": _adapters(),
    }


def _front_door() -> str:
    import letitloop

    names = list(letitloop.__all__)
    listed = {n for group in SECTIONS.values() for n in group}
    errors = {n for n in names if n not in listed and _is_error(getattr(letitloop, n))}
    groups = {title: [n for n in group if n in names] for title, group in SECTIONS.items()}
    groups["Errors and signals"] = sorted(errors)
    groups["More"] = sorted(set(names) - listed - errors)
    out = [
        "# Python API: `letitloop`\n",
        "Every name on this page is imported from the package itself "
        "(`from letitloop import durable, step`); `import letitloop` imports none of them "
        "until one is used. The errors are described with their hierarchy in "
        "[Errors](errors.md).\n",
    ]
    for title, group in groups.items():
        if not group:
            continue
        out.append(f"## {title}\n")
        if title == "Errors and signals":
            out.append(", ".join(f"[`{n}`](errors.md#letitloop.{n})" for n in group) + "\n")
            continue
        out += [f"::: letitloop.{name}\n{OPTIONS}" for name in group]
    return "\n".join(out)


def _is_error(value: object) -> bool:
    import letitloop

    base: type = letitloop.LetItLoopError  # type: ignore[attr-defined]  # a lazy export
    return inspect.isclass(value) and issubclass(value, base)


def _errors() -> str:
    """The errors module's hierarchy as a tree, then each class."""
    import letitloop

    base: type = letitloop.LetItLoopError  # type: ignore[attr-defined]  # a lazy export
    module = importlib.import_module(base.__module__)
    public = set(letitloop.__all__)
    classes = [
        c
        for c in vars(module).values()
        if inspect.isclass(c) and issubclass(c, base) and c.__module__ == module.__name__
    ]
    where = module.__name__
    front = sorted(c.__name__ for c in classes if c.__name__ in public)
    out = [
        "# Errors\n",
        "Every error letitloop raises is a `LetItLoopError`: it says what happened, and its "
        "`fix` says what to do (the `lil` commands print both as `error:` and `fix:` lines). "
        f"The classes below live in `{where}`; these are also importable from `letitloop`: "
        + ", ".join(f"`{n}`" for n in front)
        + ".\n",
        "```text",
        *_tree(base, classes),
        "```\n",
    ]
    for cls in _walk(base, classes):
        ident = f"letitloop.{cls.__name__}" if cls.__name__ in public else f"{where}.{cls.__name__}"
        out.append(f"::: {ident}\n{OPTIONS}      show_bases: true\n")
    return "\n".join(out)


def _walk(base: type, classes: list[type]) -> Iterator[type]:
    yield base
    for child in sorted((c for c in classes if c.__base__ is base), key=lambda c: c.__name__):
        yield from _walk(child, classes)


def _tree(base: type, classes: list[type], indent: str = "") -> list[str]:
    lines = [f"{indent}{base.__name__}"] if not indent else []
    children = sorted((c for c in classes if c.__base__ is base), key=lambda c: c.__name__)
    for i, child in enumerate(children):
        last = i == len(children) - 1
        lines.append(f"{indent}{'└── ' if last else '├── '}{child.__name__}")
        lines += _tree(child, classes, indent + ("    " if last else "│   "))
    return lines


# the journal face's functions a user calls (its other functions serve the layers above it)
JOURNAL_FUNCTIONS = ("open_journal", "find_location", "find_journal", "forked_from", "copy_journal")


def _journal() -> str:
    """The journal's face: its types (the contract's roles and the records it returns) and the
    functions a user calls, from ``letitloop.journal.__all__``."""
    import letitloop.journal as face

    names = list(getattr(face, "__all__", ["open_journal"]))
    types = [n for n in names if n[0].isupper() and not n.isupper()]
    calls = [n for n in JOURNAL_FUNCTIONS if n in names]
    out = [
        "# The journal: `letitloop.journal`\n",
        "Where runs are kept: open the project's journal (a DuckDB file behind its owner "
        "process, or PostgreSQL) and read it. The durable runtime and every front end use this "
        "face only. The guide's pages show it at work: [PostgreSQL](../postgres.md), "
        "[fork and rewind](../fork.md), [analytics](../analytics.md).\n",
        "## Opening and finding a journal\n",
        *(f"::: letitloop.journal.{n}\n{OPTIONS}" for n in calls),
        "## The contract and its records\n",
        *(f"::: letitloop.journal.{n}\n{OPTIONS}" for n in types),
    ]
    return "\n".join(out)


def _module_page(module: str, title: str, intro: str) -> str:
    return (
        f"# {title}: `{module}`\n\n{intro}\n\n::: {module}\n    options:\n      heading_level: 2\n"
    )


def _adapters() -> str:
    """One section per public module of ``letitloop/adapters/`` (a new adapter appears alone)."""
    folder = ROOT / "letitloop" / "adapters"
    modules = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    out = [
        "# Adapters\n",
        "Each framework's adapter is a module of `letitloop.adapters`, imported only when used "
        "(its framework is an extra: `pip install 'letitloop[langgraph]'`, `[smolagents]`, "
        "`[autogen]`, `[crewai]`). The guides are [Agent frameworks](../adapters.md) and "
        "[LangGraph](../langgraph.md).\n",
    ]
    for name in modules:
        out.append(
            f"::: letitloop.adapters.{name}\n    options:\n      heading_level: 2\n"
            "      show_root_full_path: true\n"
        )
    return "\n".join(out)


def cli_page() -> str:
    """``lil --help`` and the help of every command and subcommand below it."""
    from letitloop.cli import lil

    out = [
        "# CLI reference: `lil`\n",
        "Generated from `lil --help` at build time: every command and subcommand, with its "
        "options exactly as the terminal shows them. The task-by-task guide is "
        "[The command line](../cli.md).\n",
    ]
    for path, help_text in _helps(lil, ["lil"], None):
        depth = min(len(path) + 1, 4)
        out += [f"{'#' * depth} `{' '.join(path)}`\n", "```text", help_text.rstrip(), "```\n"]
    return "\n".join(out)


def _helps(
    command: click.Command, path: list[str], parent: click.Context | None
) -> Iterator[tuple[list[str], str]]:
    ctx = click.Context(
        command, info_name=path[-1], parent=parent, terminal_width=80, max_content_width=80
    )
    yield path, command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _helps(sub, [*path, name], ctx)
