"""Journal records: the only things ever written to a journal, as small msgpack-ready dicts.

Every state change of a run is one record, appended and never rewritten. Each record has a
natural key (``natural_key``): a resent record (a client that lost its connection resends) has
the same key and is dropped, which makes every write idempotent. Records are validated before
they reach the owner's log, so a malformed record can never poison recovery.

    run      a run starts or resumes        run wf key epoch try args entry parent by ts
    done     the run returned               run epoch codec out ts [shown]
    fail     the run raised                 run epoch try err ts
    step     an attempt started             run epoch pos att kind name fp ts [ask]
    ok       an attempt completed           run epoch pos att kind name fp codec out next ts [shown]
    err      an attempt raised              run epoch pos att kind name fp err codec out ts
    resolve  an in-doubt marker resolved    run epoch pos att res by ts
    reset    the run starts over            run epoch by ts   (epoch is the new one)
    cache    a step's output kept for reuse key fn codec out cost expires ts   (run is "")
    uncache  cached outputs dropped         fn ts   (fn None: all; run is "")
    budget   the run's budget set or raised run epoch usd_micros tokens by ts
    suspend  the run stopped to wait        run epoch reason ts
    answer   an approval decided            run epoch pos att id ok by comment payload timeout ts
    restart  a supervisor restarted the run's process   run epoch by reason ts
    wait     a step waits for a shared rate limit's capacity   run epoch at name limit seconds ts
    rewind   steps from pos on are superseded (changed code reruns them)   run epoch pos ts
    cancel   the run is stopped for good (until reset)   run epoch by reason ts
    board    a version of a key on the run's blackboard   run epoch key ver codec out tags pinned
             by ts   (written by anyone; ver must be the key's next version: compare-and-swap)
    propose  a splice proposal              id path target code reason by base old origin ts
    decide   a proposal applied, rejected or in conflict   id state by note ts
    lgput, lgwrite, lgdel, lgcopy   graph checkpoints (LangGraph threads), see journal._checkpoints
"""

from __future__ import annotations

import math
import re

from letitloop.errors import BoardConflictError, JournalError, LetItLoopError

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    Record = dict[str, Any]
else:
    Record = dict

_STR = (str,)
_INT = (int,)
_NUM = (int, float)
_OPT_STR = (str, type(None))
_OPT_BYTES = (bytes, type(None))
_OPT_INT = (int, type(None))
_OPT_DICT = (dict, type(None))
_OPT_LIST = (list, type(None))

_STEP_ID = {"run": _STR, "epoch": _INT, "pos": _INT, "att": _INT, "ts": _NUM}
_STEP_WHAT = {"kind": _STR, "name": _STR, "fp": _STR}

SCHEMA: dict[str, dict[str, tuple[type, ...]]] = {
    "run": {
        "run": _STR,
        "wf": _STR,
        "key": _STR,
        "epoch": _INT,
        "try": _INT,
        "args": _OPT_LIST,
        "entry": _OPT_STR,
        "parent": _OPT_STR,
        "by": _STR,
        "ts": _NUM,
    },
    "done": {
        "run": _STR,
        "epoch": _INT,
        "codec": _STR,
        "out": (bytes,),
        "ts": _NUM,
        "shown": _OPT_STR,  # a pickled result's short repr, taken when it was written
    },
    "fail": {"run": _STR, "epoch": _INT, "try": _INT, "err": (dict,), "ts": _NUM},
    "step": {**_STEP_ID, **_STEP_WHAT},
    "ok": {
        **_STEP_ID,
        **_STEP_WHAT,
        "codec": _STR,
        "out": (bytes,),
        "next": _OPT_INT,
        "shown": _OPT_STR,  # a pickled output's short repr, taken when it was written
    },
    "err": {**_STEP_ID, **_STEP_WHAT, "err": (dict,), "codec": _OPT_STR, "out": _OPT_BYTES},
    "resolve": {**_STEP_ID, "res": _STR, "by": _STR},
    "reset": {"run": _STR, "epoch": _INT, "by": _STR, "ts": _NUM},
    "cache": {
        "run": _STR,
        "key": _STR,
        "fn": _STR,
        "codec": _STR,
        "out": (bytes,),
        "cost": _INT,
        "expires": (int, float, type(None)),
        "ts": _NUM,
    },
    "uncache": {"run": _STR, "fn": _OPT_STR, "ts": _NUM},
    "budget": {
        "run": _STR,
        "epoch": _INT,
        "usd_micros": _OPT_INT,
        "tokens": _OPT_INT,
        "by": _STR,
        "ts": _NUM,
    },
    "suspend": {"run": _STR, "epoch": _INT, "reason": _STR, "ts": _NUM},
    "answer": {
        **_STEP_ID,
        "id": _STR,
        "ok": (bool,),
        "by": _STR,
        "comment": _OPT_STR,
        "payload": _OPT_STR,  # the approver's edited payload, as JSON text
        "timeout": (bool,),
    },
    "restart": {"run": _STR, "epoch": _INT, "by": _STR, "reason": _STR, "ts": _NUM},
    # a step waits for capacity of a shared rate limit (``at``: its position, not a step row)
    "wait": {"run": _STR, "epoch": _INT, "at": _INT, "name": _STR, "limit": _STR, "ts": _NUM}
    | {"seconds": _NUM},
    "rewind": {"run": _STR, "epoch": _INT, "pos": _INT, "ts": _NUM},
    "cancel": {"run": _STR, "epoch": _INT, "by": _STR, "reason": _OPT_STR, "ts": _NUM},
    "propose": {
        "run": _STR,
        "id": _STR,
        "path": _STR,
        "target": _STR,
        "code": _STR,
        "reason": _STR,
        "by": _STR,
        "base": _STR,
        "old": _STR,
        "origin": _OPT_STR,
        "ts": _NUM,
    },
    "decide": {"run": _STR, "id": _STR, "state": _STR, "by": _STR, "note": _OPT_STR, "ts": _NUM},
    "board": {
        "run": _STR,
        "epoch": _INT,
        "key": _STR,
        "ver": _INT,
        "codec": _STR,
        "out": (bytes,),
        "tags": (list,),
        "pinned": (bool,),
        "by": _STR,
        "ts": _NUM,
    },
    "lgput": {
        "run": _STR,
        "thread": _STR,
        "ns": _STR,
        "id": _STR,
        "parent": _OPT_STR,
        "wf": _STR,
        "status": _STR,
        "ctype": _STR,
        "cp": (bytes,),
        "mtype": _STR,
        "meta": (bytes,),
        "mjson": _STR,
        "run_id": _OPT_STR,
        "ts": _NUM,
    },
    "lgwrite": {
        "run": _STR,
        "thread": _STR,
        "ns": _STR,
        "id": _STR,
        "task": _STR,
        "path": _STR,
        "writes": (list,),  # [idx, channel, type, bytes] each
        "status": _OPT_STR,
        "err": _OPT_DICT,
        "ts": _NUM,
    },
    "lgdel": {"run": _STR, "threads": _OPT_LIST, "runs": _OPT_LIST, "keep": _STR, "ts": _NUM},
    "lgcopy": {"run": _STR, "src": _STR, "dst": _STR, "ts": _NUM},
}
# records of the journal, not of one run
JOURNAL_KINDS = frozenset({"cache", "uncache", "propose", "decide"})
CHECKPOINT_KINDS = frozenset({"lgput", "lgwrite", "lgdel", "lgcopy"})
JOURNAL_KINDS |= CHECKPOINT_KINDS  # a graph thread's records need no run lease
THREAD_STATUSES = frozenset({"running", "completed", "suspended", "failed"})
PROPOSAL_STATES = frozenset({"applied", "rejected", "conflict"})
MAX_NOTE = 4000  # characters of a person's comment kept with a decision (resolve, reset)
STEP_KINDS = frozenset({"step", "marker", "child", "approval", "suspend", "map"})
ON_TIMEOUT = frozenset({"approve", "reject", "suspend"})
# an approval's request, carried by its step record: payload and schema as JSON text
_ASK = {"id": _STR, "payload": _STR, "schema": _OPT_STR, "deadline": (int, float, type(None))}
RESOLUTIONS = frozenset({"done", "redo", "rearm"})  # rearm: a dead-lettered step
_INT_LIMIT = 2**31
# What the store's columns hold, checked here so that no record the owner accepts can fail to
# fold: token counts are INTEGER columns (2**30 each, so tokens_in + tokens_out still fits one),
# micro-dollars and budgets BIGINT, bounded far below so a run's sum cannot overflow either.
MAX_TOKENS = 2**30  # per attempt, input and output each (about a billion tokens)
MAX_MICROS = 10**15  # one billion US dollars, in micro-dollars
MAX_BUDGET_TOKENS = 10**15
MAX_TEXT = 1 << 20  # names, ids, workflow names: plenty; longer is a bug or an attack
_NAME_FIELDS = frozenset(("run", "wf", "key", "name", "by", "id", "thread"))
_COUNTERS = frozenset(("epoch", "try", "pos", "att", "next", "ver"))
MAX_TAGS = 32  # tags of one blackboard entry
_LIMITS = {  # numbers of other record kinds and their columns' bounds
    "budget": (("usd_micros", MAX_MICROS), ("tokens", MAX_BUDGET_TOKENS)),
    "cache": (("cost", MAX_MICROS),),
}
_COST_LIMITS = (("usd_micros", MAX_MICROS), ("in", MAX_TOKENS), ("out", MAX_TOKENS))
_BAD_TEXT = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def validate(rec: object) -> Record:
    """Return the record if every field has the declared type, else raise JournalError."""
    if not isinstance(rec, dict):
        raise JournalError(f"journal record must be a map, got {type(rec).__name__}")
    fields = SCHEMA.get(rec.get("k"))  # type: ignore[arg-type]
    if fields is None:
        raise JournalError(f"unknown journal record kind {rec.get('k')!r}")
    for name, types in fields.items():
        value = rec.get(name)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise JournalError(
                f"journal record {rec['k']!r}: field {name!r} must be "
                f"{' or '.join(t.__name__ for t in types)}, got {type(value).__name__}",
                fix="this is a bug in the client that wrote it; please report it",
            )
        counter = name in _COUNTERS
        if counter and isinstance(value, int) and not 0 <= value < _INT_LIMIT:
            raise JournalError(f"journal record {rec['k']!r}: {name}={value} out of range")
        if (
            name in _NAME_FIELDS
            and isinstance(value, str)
            and (_BAD_TEXT.search(value) or len(value) > MAX_TEXT)
        ):
            check_text(value, f"journal record {rec['k']!r}: field {name!r}")  # raises
    _check_numbers(rec)
    if "kind" in fields and rec["kind"] not in STEP_KINDS:
        raise JournalError(f"journal record {rec['k']!r}: unknown step kind {rec['kind']!r}")
    cost = rec.get("cost") if rec["k"] in ("ok", "err") else None
    if cost is not None and not _valid_cost(cost):
        raise JournalError(f"journal record {rec['k']!r}: malformed cost {cost!r}")
    cache = rec.get("cache")
    if cache is not None and not (
        isinstance(cache, dict)
        and type(cache.get("hit")) is bool
        and type(cache.get("saved")) is int
        and 0 <= cache["saved"] <= MAX_MICROS
    ):
        raise JournalError(f"journal record {rec['k']!r}: malformed cache note {cache!r}")
    if rec["k"] == "step" and rec["kind"] == "approval":
        _validate_ask(rec.get("ask"))
    if rec["k"] == "board":
        _validate_board(rec)
    if rec["k"] == "decide" and rec["state"] not in PROPOSAL_STATES:
        raise JournalError(f"a splice decision must be one of {sorted(PROPOSAL_STATES)}")
    if rec["k"] in CHECKPOINT_KINDS:
        _validate_checkpoint(rec)
    if rec["k"] == "run" and rec.get("fork") is not None:
        _validate_fork(rec["fork"])
    if rec["k"] == "resolve" and rec["res"] not in RESOLUTIONS:
        raise JournalError(f"resolution must be done, redo or rearm, got {rec['res']!r}")
    if rec["k"] in ("resolve", "reset") and "note" in rec:
        note = rec["note"]
        if not isinstance(note, str) or len(note) > MAX_NOTE:
            raise JournalError(
                f"journal record {rec['k']!r}: a comment must be text of at most {MAX_NOTE} "
                "characters",
                fix="shorten the comment",
            )
    return rec


def check_text(value: str, what: str, error: type[LetItLoopError] = JournalError) -> str:
    """A name or id as the journal keeps it: printable (a newline or an escape character would
    forge rows in listings), encodable as UTF-8 (no lone surrogates), and of a sane length."""
    found = _BAD_TEXT.search(value)
    if found is not None or len(value) > MAX_TEXT:
        why = f"contains {found[0]!r}" if found else f"is {len(value)} characters long"
        raise error(
            f"{what} {why}: names and ids must be printable text",
            fix="use a name without control characters, newlines or lone surrogates "
            f"(and under {MAX_TEXT} characters)",
        )
    return value


def _check_numbers(rec: Record) -> None:
    """Every number fits the column that will hold it, and times are finite."""
    k = rec["k"]
    for name in ("ts", "expires"):
        value = rec.get(name)
        if isinstance(value, float) and not math.isfinite(value):
            raise JournalError(f"journal record {k!r}: {name}={value} is not a finite time")
    for name, limit in _LIMITS.get(k, ()):
        value = rec.get(name)
        if value is not None and not 0 <= value <= limit:
            raise JournalError(
                f"journal record {k!r}: {name}={value} is out of range (0 to {limit})",
                fix="budgets and costs must be non-negative and at most "
                f"{MAX_MICROS // 1_000_000:,} USD or {MAX_BUDGET_TOKENS:,} tokens",
            )
    if k == "run" and rec.get("args") is not None:
        args = rec["args"]
        if not (len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], bytes)):
            raise JournalError("journal record 'run': args must be [codec, bytes]")
    if rec.get("ask") is not None or k == "answer":
        _check_json(rec)


def _check_json(rec: Record) -> None:
    """JSON text fields are stored in JSON columns: they must parse."""
    import json

    texts = [("payload", rec.get("payload"))] if rec["k"] == "answer" else []
    ask = rec.get("ask")
    if isinstance(ask, dict):
        texts += [("payload", ask.get("payload")), ("schema", ask.get("schema"))]
    for name, text in texts:
        if text is None:
            continue
        try:
            json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise JournalError(
                f"journal record {rec['k']!r}: {name} is not valid JSON ({exc})",
                fix="pass JSON-compatible data (nested at most a few hundred levels)",
            ) from None


def _validate_board(rec: Record) -> None:
    """A blackboard entry: a version from 1, at most ``MAX_TAGS`` tags, each printable text."""
    tags = rec["tags"]
    if rec["ver"] < 1 or len(tags) > MAX_TAGS or not all(isinstance(t, str) for t in tags):
        raise JournalError(
            f"journal record 'board': version {rec['ver']} and {len(tags)} tags: a version "
            f"counts from 1, and an entry has at most {MAX_TAGS} tags, each text",
            fix="use fewer tags (words such as 'facts' or 'draft')",
        )
    for tag in tags:
        check_text(tag, "a blackboard tag")


def _validate_ask(ask: object) -> None:
    ok = isinstance(ask, dict) and ask.get("on_timeout") in ON_TIMEOUT
    if isinstance(ask, dict):
        ok = ok and all(isinstance(ask.get(name), types) for name, types in _ASK.items())
    if not ok:
        raise JournalError(f"journal record 'step': malformed approval request {ask!r}")


def _validate_checkpoint(rec: Record) -> None:
    problem = None
    for w in rec.get("writes") or []:
        ok = isinstance(w, list) and len(w) == 4 and type(w[0]) is int
        if not (ok and isinstance(w[1], str) and isinstance(w[2], str) and isinstance(w[3], bytes)):
            problem = f"malformed write {w!r}"
    if rec.get("status") is not None and rec["status"] not in THREAD_STATUSES:
        problem = f"unknown thread status {rec['status']!r}"
    if rec["k"] == "lgdel" and rec["keep"] not in ("none", "latest"):
        problem = f"keep must be none or latest, got {rec['keep']!r}"
    if problem:
        raise JournalError(f"journal record {rec['k']!r}: {problem}")


def _validate_fork(fork: object) -> None:
    """A forked run's origin (``journal._fork``): the source run, position, epoch, step name."""
    ok = isinstance(fork, dict) and set(fork) <= {"run", "pos", "epoch", "step"}
    if isinstance(fork, dict) and ok:
        ok = isinstance(fork.get("run"), str) and isinstance(fork.get("step"), (str, type(None)))
        ok = ok and all(type(fork.get(n)) is int and 0 <= fork[n] < _INT_LIMIT for n in _FORK_INTS)
    if not ok:
        raise JournalError(f"journal record 'run': malformed fork origin {fork!r}")
    assert isinstance(fork, dict)
    for name in ("run", "step"):
        if fork.get(name) is not None:
            check_text(fork[name], f"journal record 'run': fork {name}")


_FORK_INTS = ("pos", "epoch")


def _valid_cost(cost: object) -> bool:
    """An attempt's cost: integer micro-dollars and token counts, and the model's name."""
    return (
        isinstance(cost, dict)
        and all(type(cost.get(k)) is int and 0 <= cost[k] <= n for k, n in _COST_LIMITS)
        and isinstance(cost.get("model"), (str, type(None)))
    )


def natural_key(rec: Record) -> str:
    """The record's idempotency key: two records with the same key are the same write."""
    k = rec["k"]
    if k in ("step", "ok", "err", "resolve", "answer"):
        return f"{k}/{rec['run']}/{rec['epoch']}/{rec['pos']}/{rec['att']}"
    if k in ("run", "fail"):
        return f"{k}/{rec['run']}/{rec['epoch']}/{rec['try']}"
    if k == "propose":
        return f"propose/{rec['id']}"
    if k in ("cache", "budget", "suspend", "decide", "restart", "rewind", "cancel", "wait"):
        return f"{k}/{rec.get('key') or rec.get('id') or rec['run']}/{rec['ts']}"
    if k == "uncache":
        return f"uncache/{rec['fn']}/{rec['ts']}"
    if k == "lgput":
        return f"lgput/{rec['thread']}/{rec['ns']}/{rec['id']}/{rec['ts']}"
    if k == "lgwrite":
        return f"lgwrite/{rec['thread']}/{rec['ns']}/{rec['id']}/{rec['task']}/{rec['ts']}"
    if k in ("lgdel", "lgcopy"):
        return f"{k}/{rec['run']}/{rec['ts']}"
    if k == "board":  # one version of a key by one writer: another writer's is a conflict
        return f"board/{rec['run']}/{rec['epoch']}/{rec['ver']}/{rec['by']}/{rec['key']}"
    if k == "done":  # a reopened run completes again in the same epoch
        return f"done/{rec['run']}/{rec['epoch']}/{rec['ts']}"
    return f"{k}/{rec['run']}/{rec['epoch']}"


def without_payload(rec: Record) -> Record:
    """The record as an event summary: everything but the (possibly large) output bytes."""
    return {k: v for k, v in rec.items() if k not in ("out", "args", "cp", "meta", "writes")}


def cache_record(
    key: str, fn: str, codec: str, out: bytes, cost: int, expires: float | None
) -> Record:
    import time

    rec = {"k": "cache", "run": "", "key": key, "fn": fn, "codec": codec, "out": out}
    return rec | {"cost": cost, "expires": expires, "ts": time.time()}


def uncache_record(fn: str | None) -> Record:
    import time

    return {"k": "uncache", "run": "", "fn": fn, "ts": time.time()}


def budget_record(
    run_id: str, epoch: int, usd_micros: int | None, tokens: int | None, by: str
) -> Record:
    import time

    rec = {"k": "budget", "run": run_id, "epoch": epoch, "usd_micros": usd_micros}
    return rec | {"tokens": tokens, "by": by, "ts": time.time()}


def board_record(
    run_id: str,
    epoch: int,
    key: str,
    version: int,
    value: tuple[str, bytes],
    tags: list[str],
    pinned: bool,
    by: str,
) -> Record:
    """The ``board`` record writing ``version`` of ``key`` on run ``run_id``'s blackboard."""
    import time

    rec = {"k": "board", "run": run_id, "epoch": epoch, "key": key, "ver": version}
    rec |= {"codec": value[0], "out": value[1], "tags": list(tags), "pinned": pinned}
    return validate(rec | {"by": by, "ts": time.time()})


def check_board(entry: Any, rec: Record) -> bool:
    """A blackboard write is the key's next version, or it lost a race (compare-and-swap): the
    writer expected the version before it, and someone else wrote one since (``entry``: the
    board's run in the live state, ``journal._state.RunEntry``)."""
    key, current = rec["key"], entry.board.get(rec["key"], 0)
    if rec["ver"] == current + 1:
        return True
    expected = rec["ver"] - 1
    raise BoardConflictError(
        f"blackboard of run {entry.run_id}: {key!r} is at version {current}, but this write "
        f"expected version {expected}" + (" (someone else wrote it first)" if current else ""),
        fix=f"read {key!r} again (board.get), decide what to write from its version {current}, "
        f"and put it with expect={current}; or put without expect= to write the next version",
        run_id=entry.run_id,
        key=key,
        expected=expected,
        current=current,
    )


def propose_record(p: Any) -> Record:
    """The ``propose`` record of a ``Proposal``."""
    return {
        "k": "propose",
        "run": "",
        "id": p.id,
        "path": p.path,
        "target": p.target,
        "code": p.code,
        "reason": p.reason,
        "by": p.by,
        "base": p.base,
        "old": p.old,
        "origin": p.origin,
        "ts": p.created,
    }


def decide_record(proposal_id: str, state: str, by: str, note: str | None) -> Record:
    import time

    return {
        "k": "decide",
        "run": "",
        "id": proposal_id,
        "state": state,
        "by": by,
        "note": note,
        "ts": time.time(),
    }
