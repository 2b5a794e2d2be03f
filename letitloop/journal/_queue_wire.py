"""Queue records on the wire (the DuckDB owner's requests and replies): lists in field order,
each field's type and size checked before a record is built from what a client sent.
"""

# no ``from __future__ import annotations``: see journal._queues
from collections.abc import Sequence
from typing import Any, NamedTuple

from letitloop.errors import JournalError
from letitloop.journal._queues import ITEM_STATES, QueueItem, QueueSpec, WorkerInfo, check_spec
from letitloop.journal._records import check_text

_OPT_S = (str, type(None))
_OPT_I = (int, type(None))
_OPT_F = (int, float, type(None))
_SPEC_TYPES = ((str,), _OPT_I, _OPT_I, _OPT_I, (int, float), (bool,))
_ITEM_TYPES = (
    (str,), (str,), (str,), (str,), (int,), (str,), (int, float), _OPT_S, _OPT_F, (int,),
    _OPT_F, _OPT_S, _OPT_S, (list, type(None)),
)  # fmt: skip
_WORKER_TYPES = (
    (str,), (str,), (int,), (list,), (int,), (int, float), (int, float), (int, float), (str,),
    (list,),
)  # fmt: skip
MAX_ITEM_BYTES = 1 << 20  # a queued run's entry and arguments: pass bigger data by reference


def to_wire(value: NamedTuple) -> list[Any]:
    """A spec, item or worker as a list (tuples as lists)."""
    return [list(v) if isinstance(v, tuple) else v for v in value]


def _checked(what: str, obj: object, types: Sequence[tuple[type, ...]]) -> list[Any]:
    if not isinstance(obj, list) or len(obj) != len(types):
        raise JournalError(f"a queue {what} must be a list of {len(types)} fields")
    for i, (value, allowed) in enumerate(zip(obj, types, strict=True)):
        if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
            raise JournalError(f"a queue {what}'s field {i} has the wrong type")
        if type(value) is int and not -(2**62) < value < 2**62:
            raise JournalError(f"a queue {what}'s field {i} is out of range")
        if isinstance(value, float) and value != value:
            raise JournalError(f"a queue {what}'s field {i} is NaN")
        if isinstance(value, str):
            check_text(value, f"a queue {what}'s field {i}")
    return obj


def spec_from(obj: object) -> QueueSpec:
    return check_spec(QueueSpec(*_checked("spec", obj, _SPEC_TYPES)))


def item_from(obj: object) -> QueueItem:
    fields = _checked("item", obj, _ITEM_TYPES)
    args = fields[-1]
    if args is not None:
        if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], bytes):
            raise JournalError("a queue item's arguments must be [codec, bytes]")
        fields[-1] = (args[0], args[1])
    item = QueueItem(*fields)
    size = len(item.entry or "") + (len(item.args[1]) if item.args else 0)
    if size > MAX_ITEM_BYTES:
        raise JournalError(
            f"run {item.run_id}: its entry point and arguments take {size} bytes, more than a "
            f"queued run may ({MAX_ITEM_BYTES})",
            fix="pass large data by reference (a path, a URL, an id) and load it in a step",
        )
    if item.state not in ITEM_STATES:
        raise JournalError(f"a queue item's state must be one of {sorted(ITEM_STATES)}")
    return item


def worker_from(obj: object) -> WorkerInfo:
    fields = _checked("worker", obj, _WORKER_TYPES)
    for i in (3, 9):
        if len(fields[i]) > 10_000 or not all(isinstance(v, str) for v in fields[i]):
            raise JournalError("a worker's queues and runs must be lists of names")
        for v in fields[i]:
            check_text(v, "a worker's queue or run")
        fields[i] = tuple(fields[i])
    return WorkerInfo(*fields)


def items_of(rows: Sequence[Any]) -> list[QueueItem]:
    """Queue items from rows in ``QueueItem``'s field order (args as codec, bytes)."""
    out = []
    for r in rows:
        *head, codec, data = r
        out.append(QueueItem._make([*head, (codec, bytes(data)) if codec is not None else None]))
    return out
