"""Journal events as sentences a person reads in the run-detail log.

A raw event is a record kind and a position (``answer #9``); what people want to read is what
happened and who did it: ``#9 publish approved by ana@laptop: "ship it"``. ``describe`` turns
one event into that text and a style. It needs the names of the run's steps by position,
because a decision record (``answer``, ``resolve``) names its step only by position. This
module does not import Textual.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from letitloop.operate import error_line, money


class Line(NamedTuple):
    """What the log shows for one event: a short tag, the sentence, and the sentence's style."""

    tag: str
    text: str
    style: str


def _quoted(comment: Any) -> str:
    if not comment:
        return ""
    text = " ".join(str(comment).split())
    return f': "{text[:200]}"'


def _step(e: Any, names: Mapping[int, str]) -> str:
    if e.position is None:
        return ""
    name = e.name or names.get(e.position) or "?"
    return f"#{e.position} {name}"


def _by(data: Mapping[str, Any]) -> str:
    return f" by {data['by']}" if data.get("by") else ""


def _run(e: Any, d: Mapping[str, Any], where: str) -> Line:
    tries = d.get("try") or 1
    again = f" (try {tries})" if tries > 1 else ""
    return Line("run", f"run started{again}, epoch {d.get('epoch', 0)}", "")


def _started(e: Any, d: Mapping[str, Any], where: str) -> Line:
    kind = d.get("kind")
    if kind == "approval":
        return Line("ask", f"{where} asks for approval", "magenta")
    if kind == "marker":
        return Line("effect", f"{where} side effect started", "")
    again = f" (attempt {e.attempt})" if (e.attempt or 1) > 1 else ""
    return Line("step", f"{where} started{again}", "")


def _ok(e: Any, d: Mapping[str, Any], where: str) -> Line:
    what = "side effect recorded as done" if d.get("kind") == "marker" else "done"
    return Line("ok", f"{where} {what}", "green")


def _err(e: Any, d: Mapping[str, Any], where: str) -> Line:
    err = d.get("err") or {}
    what = "dead-lettered" if err.get("dead") else "failed"
    return Line("error", f"{where} {what}: {error_line(err)}", "red")


def _answer(e: Any, d: Mapping[str, Any], where: str) -> Line:
    verb = "approved" if d.get("ok") else "rejected"
    if d.get("timeout"):
        return Line("decided", f"{where} timed out: {verb} automatically", "yellow")
    edited = " with an edited payload" if d.get("payload") else ""
    text = f"{where} {verb}{_by(d)}{edited}{_quoted(d.get('comment'))}"
    return Line("decided", text, "green" if d.get("ok") else "red")


def _resolve(e: Any, d: Mapping[str, Any], where: str) -> Line:
    res = d.get("res")
    meaning = {
        "done": "marked done (it happened; it will not run again)",
        "redo": "marked redo (it runs again on resume)",
        "rearm": "re-armed (the dead-lettered step gets new attempts)",
    }.get(str(res), f"resolved {res}")
    return Line("resolved", f"{where} {meaning}{_by(d)}{_quoted(d.get('note'))}", "yellow")


def _budget(e: Any, d: Mapping[str, Any], where: str) -> Line:
    parts = []
    if d.get("usd_micros") is not None:
        parts.append(money(d["usd_micros"]))
    if d.get("tokens") is not None:
        parts.append(f"{d['tokens']} tokens")
    return Line("budget", f"budget set to {' and '.join(parts) or 'none'}{_by(d)}", "")


def _decide(e: Any, d: Mapping[str, Any], where: str) -> Line:
    note = d.get("note") if d.get("state") != "conflict" else None
    return Line("splice", f"splice {d.get('id')} {d.get('state')}{_by(d)}{_quoted(note)}", "")


def _fixed(tag: str, text: str, style: str = "") -> Callable[[Any, Mapping[str, Any], str], Line]:
    def line(e: Any, d: Mapping[str, Any], where: str) -> Line:
        return Line(tag, text.format(by=_by(d), where=where).strip(), style)

    return line


def _wait(e: Any, d: Mapping[str, Any], where: str) -> Line:
    seconds = d.get("seconds") if isinstance(d.get("seconds"), (int, float)) else 0.0
    text = f"{d.get('name')!r} waits {seconds:.1f} s for capacity of limit {d.get('limit')}"
    return Line("waiting", text, "cyan")


def alerts(events: list[Any]) -> list[tuple[str, str]]:
    """(title, text) of each event a person acts on: what lil-tui pops up as a notification
    (the same events the webhooks of ``journal._outbox`` report)."""
    from letitloop.journal import classify

    out = []
    for e in events:
        event = classify(e.kind, e.data or {})
        if event is not None:
            step = f", step {e.name!r}" if e.name else ""
            out.append((event.replace("_", " "), f"run {e.run_id}{step}"))
    return out


_KINDS: dict[str, Callable[[Any, Mapping[str, Any], str], Line]] = {
    "wait": _wait,
    "run": _run,
    "step": _started,
    "ok": _ok,
    "err": _err,
    "answer": _answer,
    "resolve": _resolve,
    "budget": _budget,
    "decide": _decide,
    "done": _fixed("done", "run completed", "green"),
    "interrupted": _fixed("died", "its process died while running it", "yellow"),
    "rewind": _fixed("rewind", "replay rewound to this cell's first change"),
}


def describe(e: Any, names: Mapping[int, str]) -> Line:
    """The log line for one event (``e`` is an ``EventInfo``); unknown kinds read as their
    kind and step, so a newer journal never breaks the log."""
    d: Mapping[str, Any] = e.data or {}
    where = _step(e, names)
    k = e.kind
    if k in _KINDS:
        return _KINDS[k](e, d, where)
    if k == "fail":
        return Line("failed", f"run failed: {error_line(d.get('err'))}", "red")
    if k == "suspend":
        return Line("paused", f"run suspended: {d.get('reason', '')}".rstrip(": "), "magenta")
    if k == "reset":
        text = f"run reset{_by(d)}: the next call runs every step again"
        return Line("reset", text + _quoted(d.get("note")), "yellow")
    if k == "cancel":
        return Line("cancel", f"run cancelled{_by(d)}{_quoted(d.get('reason'))}", "yellow")
    if k == "restart":
        return Line("restart", f"process restarted{_by(d)}{_quoted(d.get('reason'))}", "yellow")
    return Line(k, where, "")
