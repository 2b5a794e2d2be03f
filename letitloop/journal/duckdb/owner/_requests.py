"""The shape of every request the owner accepts: decoded and checked before it is handled.

The owner serves every client of a journal, so one client's bad bytes must cost that client an
error reply and nobody else anything. A request is decoded strictly (no duplicate keys, no
msgpack extension types, string keys at the top) and checked against ``SHAPES``: a known
``op``, every required field present with its declared type, no field the op does not know.
Records inside an ``append`` are checked by ``journal._records.validate`` as they are applied.
"""

from __future__ import annotations

import msgpack

from letitloop.errors import JournalError

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

_S, _I, _F, _B, _N = str, int, float, bool, type(None)
_NUM = (int, float)
_OPT_S = (str, _N)
_OPT_I = (int, _N)

# op -> field -> (types, required). "op" and "id" are common to every request.
SHAPES: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "hello": {"session": ((_S,), True)},
    "open_run": {
        "run": ((_S,), True),
        "wf": ((_S,), True),
        "key": ((_S,), True),
        "lease": ((_B,), False),
        "args": ((list, _N), False),
        "entry": (_OPT_S, False),
        "parent": (_OPT_S, False),
        "lock_timeout": ((*_NUM, _N), False),
        "reopen": ((_B,), False),
        "inv": (_OPT_S, False),  # the invocation (one call in the process) taking the lease
        "head": ((_B,), False),  # no lease: the run's header only (owner feature "head")
        # the attempt's start durable with the next acknowledged write (feature "lazy_open")
        "lazy": ((_B,), False),
    },
    "append": {
        "recs": ((list,), True),
        "ack": ((_B,), False),
        "run": (_OPT_S, False),
        "import": ((_B,), False),  # lil journal copy: history written without a lease
    },
    "release": {"run": ((_S,), True), "inv": (_OPT_S, False)},
    "relock": {"runs": ((list,), True), "invs": ((dict, _N), False)},
    "resolve": {
        "run": ((_S,), True),
        "marker": ((_S, _I), True),
        "res": ((_S,), True),
        "by": ((_S,), True),
        "note": ((_S,), False),
    },
    "rearm": {"run": ((_S,), True), "step": ((_S, _I, _N), False), "by": ((_S,), True)},
    "budget": {
        "run": ((_S,), True),
        "usd": (_OPT_I, False),
        "tokens": (_OPT_I, False),
        "by": ((_S,), True),
    },
    "reset": {"run": ((_S,), True), "by": ((_S,), True), "note": ((_S,), False)},
    "output": {
        "run": ((_S,), True),
        "epoch": ((_I,), True),
        "pos": ((_I,), True),
        "att": ((_I,), True),
    },
    "subscribe": {"run": (_OPT_S, False)},
    "stop": {},
    "runs": {
        "status": (_OPT_S, False),
        "workflow": (_OPT_S, False),
        "limit": ((_I,), False),
        "before": ((list, _N), False),  # [updated, run id] of the last run of the page before
    },
    "run_ids": {},
    "results": {"runs": ((list,), True)},
    "run": {"run": ((_S,), True)},
    "events": {"after": ((_I,), True), "run": (_OPT_S, False), "limit": ((_I,), True)},
    "sql": {"sql": ((_S,), True)},
    "stats": {},
    "gc": {"older_than": (_NUM, True), "statuses": ((list,), True)},
    "cache_get": {"key": ((_S,), True)},
    "cache_list": {"limit": ((_I,), False)},
    "proposals": {"state": (_OPT_S, False)},
    "approvals": {"status": (_OPT_S, False), "run": (_OPT_S, False), "limit": ((_I,), False)},
    "board": {"run": ((_S,), True), "key": (_OPT_S, False), "history": ((_B,), False)},
    "quarantine": {"action": (_OPT_S, False), "lsn": (_OPT_I, False)},
    "limit": {
        "act": ((_S,), True),  # take | adjust | block (journal._limits bounds every value)
        "name": ((_S,), True),
        "rpm": (_OPT_I, False),
        "tpm": (_OPT_I, False),
        "tokens": ((_I,), False),
        "seconds": (_NUM, False),
        "ack": ((_B,), False),
    },
    "capacity": {},
    "queue": {  # journal._queues checks what the lists hold (item_from, worker_from, spec_from)
        "act": ((_S,), True),  # enqueue claim beat finish leave hold unhold pause queues items ...
        "spec": ((list,), False),
        "item": ((list,), False),
        "worker": ((list,), False),
        "wid": ((_S,), False),  # a worker's id (finish, leave)
        "n": ((_I,), False),
        "run": ((_S,), False),
        "outcome": ((_S,), False),
        "name": ((_S,), False),
        "paused": ((_B,), False),
        "declare": ((_B,), False),  # hold: the spec's limits replace the queue's
        "queue": (_OPT_S, False),
        "state": (_OPT_S, False),
        "limit": ((_I,), False),
    },
    "notices": {"state": (_OPT_S, False), "limit": ((_I,), False)},
    "notice_retry": {"key": ((_S,), True)},
    "checkpoints": {
        "thread": (_OPT_S, False),
        "ns": (_OPT_S, False),
        "cid": (_OPT_S, False),
        "before": (_OPT_S, False),
        "filter": ((dict, _N), False),
        "limit": (_OPT_I, False),
    },
}
# list fields whose items are strings
_LISTS_OF_STR = {"relock": "runs", "gc": "statuses", "results": "runs"}
_INT_FIELDS_LIMIT = 2**63  # what DuckDB's BIGINT holds: larger never reaches a query


class BadRequest(JournalError):
    """A request that cannot be decoded or does not have its op's shape (the client's bug)."""

    title = "malformed journal request"


def _pairs(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a map has the same key twice")
    return out


def _no_ext(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack extension type {code} is not part of the protocol")


def decode(body: bytes | bytearray | memoryview) -> dict[str, Any]:
    """One request from a frame's body, checked against its op's shape; raise ``BadRequest``."""
    try:
        req = msgpack.unpackb(
            body,
            raw=False,
            strict_map_key=False,
            object_pairs_hook=_pairs,
            ext_hook=_no_ext,
            max_bin_len=len(body),
            max_str_len=len(body),
        )
    except Exception as exc:  # every decoding failure is the sender's, whatever its class
        raise BadRequest(
            f"a request is not valid msgpack: {type(exc).__name__}: {exc}"[:300],
            fix="send one msgpack map per frame (see letitloop.journal.duckdb._wire)",
        ) from None
    check(req)
    return req  # type: ignore[no-any-return]


def check(req: object) -> None:
    """Raise ``BadRequest`` unless ``req`` is a request map of a known op with its fields."""
    if not isinstance(req, dict):
        raise BadRequest(f"a request must be a map, got {type(req).__name__}")
    op = req.get("op")
    shape = SHAPES.get(op) if isinstance(op, str) else None
    if shape is None:
        raise BadRequest(
            f"unknown journal operation {op!r}"[:200],
            fix="the client and owner may be of different versions: run `lil journal stop`",
        )
    for name, value in req.items():
        if name in ("op", "id"):
            continue
        spec = shape.get(name) if isinstance(name, str) else None
        if spec is None:
            raise BadRequest(f"request {op!r} has an unknown field {name!r}"[:200])
        _check_field(str(op), name, value, spec[0])
    for name, (_, required) in shape.items():
        if required and name not in req:
            raise BadRequest(f"request {op!r} lacks its field {name!r}")
    rid = req.get("id")
    if rid is not None and (type(rid) is not int or not 0 <= rid < _INT_FIELDS_LIMIT):
        raise BadRequest(f"request id must be a non-negative integer, got {rid!r}"[:200])
    if op in _LISTS_OF_STR and not all(isinstance(i, str) for i in req[_LISTS_OF_STR[op]]):
        raise BadRequest(f"request {op!r}: every item of the list must be a string")
    limit = req.get("limit")
    if type(limit) is int and limit < 0:
        raise BadRequest(
            f"request {op!r}: limit {limit} is negative",
            fix="ask for 0 or more rows (the owner answers a bounded number per reply)",
        )
    before = req.get("before") if op == "runs" else None
    if before is not None and (
        len(before) != 2 or type(before[0]) not in (int, float) or type(before[1]) is not str
    ):
        raise BadRequest(f"request {op!r}: before must be [updated, run id]")
    if op == "append" and not all(isinstance(r, dict) for r in req["recs"]):
        raise BadRequest("request 'append': every record must be a map")


def _check_field(op: str, name: str, value: object, types: tuple[type, ...]) -> None:
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        want = " or ".join("None" if t is _N else t.__name__ for t in types)
        raise BadRequest(
            f"request {op!r}: field {name!r} must be {want}, got {type(value).__name__}"
        )
    in_range = -_INT_FIELDS_LIMIT <= value < _INT_FIELDS_LIMIT if type(value) is int else True
    if not in_range:
        raise BadRequest(f"request {op!r}: field {name!r}={value} is out of range")
    if isinstance(value, float) and value != value:  # NaN: no deadline or age can be NaN
        raise BadRequest(f"request {op!r}: field {name!r} is NaN")
