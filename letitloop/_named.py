"""Named tuples declared as ``typing.NamedTuple`` classes, made by ``collections.namedtuple``.

The records a resume builds (``StepRecord``, ``RunState``) and ``StepInfo`` are on the path of
``from letitloop import durable, step`` and of every fresh-process resume, and ``import
typing`` costs a few milliseconds there (more than the rest of the import on a slow machine).
A class body declares the fields once, with their types and defaults, as a ``NamedTuple``:

    class StepRecord(NamedTuple):        # NamedTuple: typing's for the checker, else object
        position: int
        codec: str | None = None

    if not TYPE_CHECKING:
        StepRecord = named_tuple(StepRecord)

The type checker reads the ``NamedTuple`` (``TYPE_CHECKING`` is true for it); at run time the
body is a plain class, whose annotations (strings, under ``from __future__ import
annotations``) and defaults ``named_tuple`` turns into the same tuple type: same fields,
defaults, docstring, annotations, methods and properties, picklable by its module and name.
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any


def named_tuple(cls: type) -> Any:
    """The ``collections.namedtuple`` of a class body declared as a ``typing.NamedTuple``."""
    from collections import namedtuple as make  # (a dynamic call: the checker has the class)

    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (no inspect here)
    names = tuple(annotations)
    defaults = [cls.__dict__[n] for n in names if n in cls.__dict__]
    made: Any = make(cls.__name__, names, defaults=defaults, module=cls.__module__)  # type: ignore[misc]
    made.__qualname__ = cls.__qualname__
    made.__doc__ = cls.__doc__
    made.__annotations__ = dict(annotations)
    skip = {"__dict__", "__weakref__", "__annotations__", "__doc__", "__module__", "__qualname__"}
    for name, value in cls.__dict__.items():
        if name not in names and name not in skip:
            setattr(made, name, value)  # methods and properties of the body
    return made
