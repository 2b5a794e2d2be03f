"""Values as a person reads them, for every surface (CLI, TUI, widgets, LSP hovers).

``preview(codec, data, shown=...)`` turns stored bytes into text without importing a class or
unpickling anything: plain JSON stays JSON, tagged values read like Python
(``Response(text="hi", usage=Usage(input=3))``, ``(1, 2)``, ``2026-12-01 21:04:30+00:00``),
never the codec's ``{"__lil__": ...}`` envelope. Authenticated pickle cannot be read safely, so
its text is ``shown``: a short repr taken when the value was written (``short_repr``) and kept
in the record. Times, durations and money are written by ``letitloop.operate`` (its ``_format``).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
from collections.abc import Callable
from typing import Any

_MAC_LEN = 32  # authenticated codecs start with an HMAC-SHA256 (see kernel._codec)
_TAG = "__lil__"
_BYTES_SHOWN = 32  # of a bytes value, this many bytes are shown
LIMIT = 2000


class _Full(Exception):
    """The text reached its limit: stop walking."""


def preview(
    codec: str | None, data: bytes | None, *, shown: str | None = None, limit: int = LIMIT
) -> str:
    """Human-readable text for stored data; never imports or unpickles anything."""
    if codec is None or data is None:
        return shown if shown is not None else "-"
    if codec == "pickle":
        if shown is not None:
            return _cut(shown, limit)
        return f"<pickled object, {len(data)} bytes>"
    if codec not in ("json", "lilj", "liljc"):
        return f"<{codec!r} data, {len(data)} bytes>"
    text = (data[_MAC_LEN:] if codec == "liljc" else data).decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return _cut(text, limit)
    if codec == "json":
        with contextlib.suppress(ValueError, RecursionError):
            pretty = json.dumps(value, indent=2, ensure_ascii=False)
            if len(pretty) <= limit:
                return pretty
        return _cut(text, limit, len(data))
    out = _Text(limit)
    try:
        out.value(value)
    except _Full:
        return "".join(out.parts)[:limit] + f"… ({len(data)} bytes)"
    except RecursionError:
        return _cut(text, limit, len(data))
    return "".join(out.parts)


def call_preview(workflow: str, codec: str, data: bytes, limit: int = 300) -> str:
    """A call's journaled ``[args, kwargs]`` as it was written: ``sync_workflow(7, plan="pro")``."""
    name = workflow.rpartition(".")[2] or workflow
    if codec == "pickle" or codec not in ("json", "lilj", "liljc"):
        return f"{name}(<{codec} arguments, {len(data)} bytes>)"
    try:
        args, kwargs = json.loads((data[_MAC_LEN:] if codec == "liljc" else data).decode())
        out = _Text(limit)
        out.put(name + "(")
        for i, a in enumerate(args):
            out.put(", " if i else "")
            out.value(a)
        for i, (k, v) in enumerate(kwargs.items()):
            out.put(", " if i or args else "")
            out.put(f"{k}=")
            out.value(v)
        out.put(")")
    except _Full:
        return "".join(out.parts)[:limit] + "…)"
    except (ValueError, TypeError, AttributeError, RecursionError):
        return f"{name}(<{len(data)} bytes of arguments>)"
    return "".join(out.parts)


def short_repr(value: object, limit: int = 200) -> str:
    """A repr cut to ``limit`` characters, kept with a pickled value so it can be shown later
    without unpickling; a ``__repr__`` that raises gives the type's name instead."""
    import reprlib

    r = reprlib.Repr()
    r.maxstring, r.maxother, r.maxlong = limit, limit, 60
    try:
        text = r.repr(value)
    except Exception:
        text = f"<{type(value).__module__}.{type(value).__qualname__} object>"
    return _cut(" ".join(text.split()), limit)


def _cut(text: str, limit: int, size: int | None = None) -> str:
    if len(text) <= limit:
        return text
    if size is not None:
        return f"{text[:limit]}… ({size} bytes)"
    return text[: limit - 1] + "…"


def _short_class(ref: object) -> str:
    """``pkg.mod:Outer.Response`` as ``Response``."""
    return str(ref).rpartition(":")[2].rpartition(".")[2] or "?"


class _Text:
    """Writes decoded tagged JSON as Python-like text, stopping at the limit."""

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit

    def put(self, s: str) -> None:
        self.parts.append(s)
        self.size += len(s)
        if self.size > self.limit:
            raise _Full

    def seq(self, items: list[Any], open_: str, close: str, one: str = "") -> None:
        self.put(open_)
        for i, x in enumerate(items):
            if i:
                self.put(", ")
            self.value(x)
        self.put(one if len(items) == 1 else "")
        self.put(close)

    def pairs(self, pairs: list[tuple[Any, Any]], open_: str, close: str, sep: str) -> None:
        self.put(open_)
        for i, (k, x) in enumerate(pairs):
            if i:
                self.put(", ")
            if sep == "=" and isinstance(k, str):
                self.put(k)
            else:
                self.value(k)
            self.put(sep)
            self.value(x)
        self.put(close)

    def value(self, v: Any) -> None:
        if isinstance(v, str):
            self.put(json.dumps(v, ensure_ascii=False))
        elif v is None or isinstance(v, (bool, int, float)):
            self.put(json.dumps(v))
        elif isinstance(v, list):
            self.seq(v, "[", "]")
        elif isinstance(v, dict) and _TAG in v and "v" in v:
            self.tagged(v)
        elif isinstance(v, dict):
            self.pairs(list(v.items()), "{", "}", ": ")
        else:  # pragma: no cover - json.loads gives nothing else
            self.put(repr(v))

    def tagged(self, v: dict[str, Any]) -> None:
        tag, body = v[_TAG], v["v"]
        simple = _SIMPLE.get(tag)
        if simple is not None:
            self.put(simple(body))
        elif tag == "tuple" and isinstance(body, list):
            self.seq(body, "(", ")", ",")
        elif tag in ("set", "frozenset") and isinstance(body, list):
            if not body:
                self.put(f"{tag}()")
            else:
                self.put("frozenset(" if tag == "frozenset" else "")
                self.seq(body, "{", "}")
                self.put(")" if tag == "frozenset" else "")
        elif tag == "dict" and isinstance(body, list):
            pairs = [(p[0], p[1]) for p in body if isinstance(p, list) and len(p) == 2]
            self.pairs(pairs, "{", "}", ": ")
        elif tag == "path":
            self.put(f"Path({json.dumps(str(body), ensure_ascii=False)})")
        elif tag in ("dataclass", "pydantic") and isinstance(body, dict):
            self.pairs(list(body.items()), _short_class(v.get("cls")) + "(", ")", "=")
        elif tag == "namedtuple" and isinstance(body, list):
            self.seq(body, _short_class(v.get("cls")) + "(", ")")
        elif tag == "enum":
            self.put(_short_class(v.get("cls")) + "(")
            self.value(body)
            self.put(")")
        else:
            self.put(f"<{tag}>")


def _bytes(body: Any) -> str:
    try:
        raw = base64.b64decode(str(body), validate=True)
    except ValueError:
        return "b'?'"
    more = f"… ({len(raw)} bytes)" if len(raw) > _BYTES_SHOWN else ""
    return repr(raw[:_BYTES_SHOWN]) + more


def _timedelta(body: Any) -> str:
    try:
        return str(dt.timedelta(days=body[0], seconds=body[1], microseconds=body[2]))
    except (TypeError, IndexError, ValueError, OverflowError):
        return "timedelta(?)"


_SIMPLE: dict[str, Callable[[Any], str]] = {
    "bytes": _bytes,
    "datetime": lambda b: str(b).replace("T", " "),
    "date": str,
    "time": str,
    "timedelta": _timedelta,
    "decimal": str,
    "uuid": str,
    "float": str,
}
