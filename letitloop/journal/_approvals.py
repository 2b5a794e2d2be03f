"""Approvals as journal data: ids, the request a step record carries, decisions, listings.

An approval is a step of kind ``approval``: its start record carries the request (``ask``: id,
payload and schema as JSON text, deadline, what happens on timeout) and an ``answer`` record
decides it. Anyone may write the answer, even while the run's process waits holding its lease;
the journal's state machine accepts only the first (``check_answer``), so two people deciding at
once get one winner and one clear error. Both journal backends build ``ApprovalInfo`` rows here.
"""

from __future__ import annotations

import json
import re
import sys
import time
from _thread import allocate_lock
from typing import TYPE_CHECKING, Any

from letitloop._digest import sha256
from letitloop.errors import ApprovalDecidedError, ConfigError, JournalError
from letitloop.journal._contract import ApprovalInfo
from letitloop.journal._records import ON_TIMEOUT, Record, validate

if TYPE_CHECKING:
    from letitloop.journal._state import RunEntry

STATUSES = ("pending", "approved", "rejected", "cancelled")
COLUMNS = list(ApprovalInfo._fields)  # the store's approvals columns, in this order
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def approval_id(run_id: str, epoch: int, position: int, attempt: int = 1) -> str:
    """A short id people can type, the same every time the run reaches this approval."""
    key = f"{run_id}/{epoch}/{position}" + (f"/{attempt}" if attempt > 1 else "")
    return sha256(key.encode()).hexdigest()[:10]


def parse_timeout(value: float | str | None) -> float | None:
    """Seconds from a number or a duration such as ``"90s"``, ``"30m"``, ``"2h"``, ``"1h30m"``."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    if isinstance(value, str):
        text = value.replace(" ", "").lower()
        parts = _DURATION.findall(text)
        if parts and "".join(n + u for n, u in parts) == text:
            return sum(float(n) * _UNITS[u] for n, u in parts)
    raise ConfigError(
        f"timeout must be seconds or a duration like '30m' or '2h', got {value!r}",
        fix='pass timeout=3600 or timeout="1h" (units: s, m, h, d)',
    )


def check_on_timeout(value: str) -> str:
    if value not in ON_TIMEOUT:
        raise ConfigError(
            f"on_timeout must be one of {sorted(ON_TIMEOUT)}, got {value!r}",
            fix='use on_timeout="reject" (the default), "approve" or "suspend"',
        )
    return value


def payload_json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except RecursionError:
        raise ConfigError(
            f"{what} is nested too deeply to journal",
            fix="send flatter JSON data (at most a few hundred levels)",
        ) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{what} must be JSON data (dicts, lists, strings, numbers, booleans, None): {exc}",
            fix="convert it first, e.g. pass a dict of the fields a person needs to see",
        ) from None


def check_payload(schema: dict[str, Any] | None, payload: Any, what: str) -> None:
    """Validate ``payload`` against a JSON schema (jsonschema is imported only when needed)."""
    if schema is None:
        return
    jsonschema = _jsonschema()

    try:
        jsonschema.validate(payload, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(the payload itself)"
        raise ConfigError(
            f"{what} does not match the approval's schema at {where}: {exc.message}",
            fix="change the payload so it satisfies the schema shown by `lil approvals show`",
        ) from None
    except jsonschema.SchemaError as exc:
        raise ConfigError(
            f"the approval's schema is not a valid JSON schema: {exc.message}",
            fix="pass a JSON schema (https://json-schema.org) as schema=, or none",
        ) from None
    except RecursionError:
        raise ConfigError(
            f"{what} is nested too deeply to check against the approval's schema",
            fix="send a flatter payload",
        ) from None


def _jsonschema() -> Any:
    """jsonschema, imported without ``rfc3987_syntax``: that optional format checker builds a
    grammar at import (about 3 s here) for a format approvals never check; the owner must not
    stall its clients that long."""
    with _import_lock:
        blocked = "rfc3987_syntax" not in sys.modules
        if blocked:
            sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]
        try:
            import jsonschema  # type: ignore[import-untyped]
        finally:
            if blocked:
                del sys.modules["rfc3987_syntax"]
        return jsonschema


def warm() -> None:
    """Import jsonschema on a thread now (an approval with a schema was asked), so that checking
    its answer later does not wait for the import."""
    if "jsonschema" not in sys.modules:
        import threading

        threading.Thread(target=_jsonschema, name="lil-jsonschema", daemon=True).start()


_import_lock = allocate_lock()  # threading.Lock, without importing threading


def approval_request(
    aid: str,
    payload: Any,
    schema: dict[str, Any] | None,
    deadline: float | None,
    on_timeout: str,
) -> dict[str, Any]:
    """The request carried by an approval's step record."""
    if schema is not None:
        check_payload(schema, payload, "the approval's payload")
    return {
        "id": aid,
        "payload": payload_json(payload, "an approval's payload"),
        "schema": None if schema is None else payload_json(schema, "an approval's schema"),
        "deadline": deadline,
        "on_timeout": check_on_timeout(on_timeout),
    }


def info(rec: Record) -> ApprovalInfo:
    """The pending ``ApprovalInfo`` of an approval's step record."""
    a = rec["ask"]
    return ApprovalInfo(
        id=a["id"],
        run_id=rec["run"],
        epoch=rec["epoch"],
        position=rec["pos"],
        name=rec["name"],
        payload=json.loads(a["payload"]),
        schema=json.loads(a["schema"]) if a["schema"] else None,
        created=rec["ts"],
        deadline=a["deadline"],
        on_timeout=a["on_timeout"],
        status="pending",
        attempt=rec["att"],
    )


def decided(row: ApprovalInfo, answer: Record) -> ApprovalInfo:
    """The row after its ``answer`` record."""
    return row._replace(
        status="approved" if answer["ok"] else "rejected",
        decided_by=answer["by"],
        decided_at=answer["ts"],
        comment=answer["comment"],
        edited=json.loads(answer["payload"]) if answer["payload"] is not None else None,
        timed_out=answer["timeout"],
    )


def approval_fields(
    run_id: str, epoch: int, pos: int, row: tuple[Any, ...] | None
) -> dict[str, Any]:
    """An approval step's request (``ask``) and decision (``ans``) as the live state keeps them,
    from a store's approvals row (``aid, payload, schema, deadline, on_timeout, status, by, at,
    comment, edited, timed_out, attempt``); the DuckDB owner and PostgreSQL both load it so."""
    if row is None:
        return {}
    aid, payload, schema, deadline, on_timeout, status, by, at, comment, edited, timed_out, att = (
        row
    )
    ask = {"id": aid, "payload": payload, "schema": schema, "deadline": deadline}
    out: dict[str, Any] = {"ask": ask | {"on_timeout": on_timeout}}
    if status in ("approved", "rejected"):
        out["ans"] = {
            "k": "answer",
            "run": run_id,
            "epoch": epoch,
            "pos": pos,
            "att": att,
            "id": aid,
            "ok": status == "approved",
            "by": by,
            "comment": comment,
            "payload": edited,
            "timeout": bool(timed_out),
            "ts": at,
        }
    return out


def match_approval(text: str, rows: list[ApprovalInfo]) -> ApprovalInfo:
    """The approval whose id is ``text`` or starts with it."""
    found = [r for r in rows if r.id == text] or [r for r in rows if r.id.startswith(text)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise JournalError(
            f"no approval {text!r} in this journal",
            fix="list them with `lil approvals list` (add --all for decided ones)",
        )
    raise JournalError(
        f"approval id {text!r} is ambiguous: {', '.join(r.id for r in found[:5])}",
        fix="type more of the id",
    )


def answer_record(
    row: ApprovalInfo,
    approved: bool,
    by: str,
    comment: str | None,
    payload: Any,
    timed_out_at: float | None,
) -> Record:
    """The ``answer`` record deciding ``row``; an edited payload must satisfy its schema."""
    if row.status == "cancelled":
        raise JournalError(
            f"approval {row.id} ({row.name!r}) was cancelled: run {row.run_id} was reset",
            fix="nothing to decide; when the run is called again it asks anew",
            run_id=row.run_id,
        )
    edited = None
    if payload is not None:
        check_payload(row.schema, payload, "the edited payload")
        edited = payload_json(payload, "the edited payload")
    return validate(
        {
            "k": "answer",
            "run": row.run_id,
            "epoch": row.epoch,
            "pos": row.position,
            "att": row.attempt,
            "id": row.id,
            "ok": bool(approved),
            "by": by,
            "comment": comment,
            "payload": edited,
            "timeout": timed_out_at is not None,
            "ts": timed_out_at if timed_out_at is not None else time.time(),
        }
    )


def check_answer(entry: RunEntry, rec: Record) -> bool:
    """Whether an answer is new (False: a resend of the one already taken); raise if the approval
    is unknown, already decided by someone else, or expired with a timeout decision pending."""
    step = entry.steps.get(rec["pos"])
    req = (step or {}).get("ask") or {}
    if step is None or step["kind"] != "approval" or req.get("id") != rec["id"]:
        raise JournalError(
            f"run {entry.run_id} has no approval {rec['id']} in its current epoch",
            fix="list pending approvals with `lil approvals list`",
            run_id=entry.run_id,
            position=rec["pos"],
        )
    first = step.get("ans")
    if first is not None:
        if (first["by"], first["ts"], first["ok"]) == (rec["by"], rec["ts"], rec["ok"]):
            return False  # a client resending after a reconnect
        verb = "approved" if first["ok"] else "rejected"
        raise ApprovalDecidedError(
            f"approval {rec['id']} ({step['name']!r} of run {entry.run_id}) was already {verb} "
            f"by {first['by']} at {_when(first['ts'])}",
            fix="the first decision stands; see it with `lil approvals show " + rec["id"] + "`",
            run_id=entry.run_id,
            step=step["name"],
            position=rec["pos"],
        )
    if rec["payload"] is not None and req.get("schema"):
        # the owner checks what `lil` checks: a client that skips it cannot slip a payload
        # outside the schema to the run (the record's JSON already parsed in validate())
        check_payload(
            json.loads(req["schema"]),
            json.loads(rec["payload"]),
            f"the edited payload of approval {rec['id']} ({step['name']!r})",
        )
    deadline = req.get("deadline")
    late = deadline is not None and rec["ts"] > deadline and not rec["timeout"]
    if deadline is not None and late and req["on_timeout"] != "suspend":
        raise ApprovalDecidedError(
            f"approval {rec['id']} ({step['name']!r} of run {entry.run_id}) timed out at "
            f"{_when(deadline)}; its on_timeout={req['on_timeout']!r} decides it",
            fix="nothing to do: the run applies that decision when it continues",
            run_id=entry.run_id,
            step=step["name"],
            position=rec["pos"],
        )
    return True


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
