"""``operate._cells.claim``: which run a notebook's cell continues, on the in-memory journal with a
fake file system (the kernel tests in ``test_first_hour.py`` do the same with real files)."""

from __future__ import annotations

from collections.abc import Callable

from letitloop import MemoryJournal
from letitloop.kernel._runtime import run_workflow
from letitloop.operate._cells import claim, path_key

WF = "cell.ingest"


def ran(journal: MemoryJournal, notebook: str, key: str | None = None) -> str:
    """A cell run of ``notebook`` under ``key`` (its own by default), as ``run_cell`` makes it."""
    key = key or path_key(notebook)
    run_workflow(
        lambda **_kw: None,
        (),
        {"notebook": notebook},
        name=WF,
        run_id=key,
        journal=journal,
        reopen=True,
        ignore_args=True,
    )
    return key


def files(*paths: str) -> Callable[[str], bool]:
    return set(paths).__contains__


def test_own_run_then_adoption_after_a_rename() -> None:
    j = MemoryJournal()
    old = ran(j, "/nb/Untitled.ipynb")
    assert claim(j, WF, "/nb/Untitled.ipynb", files("/nb/Untitled.ipynb")).key == old
    moved = claim(j, WF, "/nb/blog.ipynb", files("/nb/blog.ipynb"))
    assert moved.key == old and moved.adopted_from == "/nb/Untitled.ipynb"
    assert moved.note is not None and "Untitled.ipynb, which no longer exists" in moved.note


def test_a_new_notebook_at_the_old_path_gets_a_key_of_its_own() -> None:
    j = MemoryJournal()
    old = ran(j, "/nb/Untitled.ipynb")
    ran(j, "/nb/blog.ipynb", old)  # blog.ipynb adopted it: its path is journaled now
    both = files("/nb/Untitled.ipynb", "/nb/blog.ipynb")
    fresh = claim(j, WF, "/nb/Untitled.ipynb", both)
    assert fresh.key == f"{old}~2" and fresh.note is None
    assert claim(j, WF, "/nb/blog.ipynb", both).key == old  # blog keeps it, with no note


def test_several_vanished_notebooks_are_not_guessed_between() -> None:
    j = MemoryJournal()
    a, b = ran(j, "/nb/a.ipynb"), ran(j, "/nb/b.ipynb")
    found = claim(j, WF, "/nb/c.ipynb", files("/nb/c.ipynb"))
    assert found.key == path_key("/nb/c.ipynb") and found.adopted_from is None
    assert (
        found.note is not None and "--run-id" in found.note and a in found.note and b in found.note
    )


def test_a_terminal_session_never_adopts_or_is_adopted() -> None:
    j = MemoryJournal()
    terminal = ran(j, "/work/ipython")  # no notebook file: keyed by its directory
    assert claim(j, WF, "/nb/new.ipynb", files("/nb/new.ipynb")).key != terminal
    ran(j, "/nb/gone.ipynb")
    assert claim(j, WF, "/work/ipython", files()).key == terminal
