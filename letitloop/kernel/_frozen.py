"""``@frozen``: the frozen-dataclass declaration of the option classes, without ``dataclasses``.

``Retry``, ``Budget``, ``StepOptions`` and ``DurableOptions`` are built by every durable call,
so their module is on the path of ``from letitloop import durable, step`` and of every resume;
``import dataclasses`` imports ``inspect`` (with ``ast``, ``dis``, ``tokenize``), about 10 ms on
a slow machine, more than a fresh process spends replaying a thousand steps. A class declared
with annotated fields and defaults gets here what ``@dataclass(frozen=True)`` would give it: an
``__init__`` with those parameters (positions or keywords) that calls ``__post_init__``, a
``repr`` naming every field, equality and hashing by the fields, instances that refuse
assignment, and ``replace(obj, **changes)``. The type checker sees a frozen dataclass
(``dataclass_transform``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen options object (as ``dataclasses`` raises it)."""


def _frozen(cls: type[T]) -> type[T]:
    annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (no inspect here)
    names = tuple(annotations)
    defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
    params = ", ".join(f"{n}=_d_{n}" if n in defaults else n for n in names)
    lines = [f"def __init__(self, {params}):"]
    lines += [f"    _set(self, {n!r}, {n})" for n in names]
    if hasattr(cls, "__post_init__"):
        lines.append("    self.__post_init__()")
    elif not names:
        lines.append("    pass")
    scope: dict[str, Any] = {"_set": object.__setattr__}
    scope.update({f"_d_{n}": v for n, v in defaults.items()})
    exec("\n".join(lines), scope)  # a real signature, as dataclasses makes it
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {**annotations, "return": None}

    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in names))

    def __setattr__(self: Any, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self: Any, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    for method in (init, __repr__, __eq__, __hash__, __setattr__, __delattr__):
        if method is not init:
            method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    setattr(cls, "__match_args__", names)  # noqa: B010 (the type checker has it from the transform)
    cls.__record_fields__ = names  # type: ignore[attr-defined]
    return cls


if TYPE_CHECKING:

    @dataclass_transform(frozen_default=True)
    def frozen(cls: type[T]) -> type[T]: ...
else:
    frozen = _frozen


def fields(obj: object) -> tuple[str, ...]:
    """The field names of a ``@frozen`` class or instance, in declaration order."""
    names: tuple[str, ...] = type.__getattribute__(
        obj if isinstance(obj, type) else type(obj), "__record_fields__"
    )
    return names


def replace(obj: T, **changes: Any) -> T:
    """A copy of a ``@frozen`` instance with ``changes`` (validated again, as a new one is)."""
    names = fields(obj)
    if unknown := sorted(set(changes) - set(names)):
        raise TypeError(f"{type(obj).__qualname__} has no field(s) {', '.join(unknown)}")
    values = {n: getattr(obj, n) for n in names}
    values.update(changes)
    return type(obj)(**values)
