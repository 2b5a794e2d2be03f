"""How every surface writes times, durations, money, sizes and errors: one rule each.

The CLI, lil-tui, the language server, the notebook widgets and the lab all call these, so the
same run reads the same everywhere ("2m ago" for 150 s, "$0.0042", "46ms", "KeyError: 'x'").
Pure functions of their arguments (``now`` may be given), importing nothing heavy.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

# (seconds in the unit, its suffix), largest first: "3d ago", "5h ago", "2m ago", "42s ago"
_AGO_UNITS = ((86400, "d"), (3600, "h"), (60, "m"))


def ago(ts: float | None, now: float | None = None) -> str:
    """A past time as people say it: ``just now``, ``42s ago``, ``2m ago`` (whole units,
    rounded down: 150 s is ``2m ago``), ``5h ago``, ``3d ago``; ``-`` for no time."""
    if not _is_time(ts):
        return "-"
    assert ts is not None
    delta = (time.time() if now is None else now) - ts
    if delta < 0:
        return "in the future"
    if delta < 1:
        return "just now"
    for size, unit in _AGO_UNITS:
        if delta >= size:
            return f"{int(delta // size)}{unit} ago"
    return f"{int(delta)}s ago"


def local_time(ts: float | None, *, relative: bool = False, now: float | None = None) -> str:
    """An epoch time in local time, ``2026-12-01 21:04:30`` (``-`` for none), with ``relative``
    followed by ``(5m ago)``."""
    if not _is_time(ts):
        return "-"
    assert ts is not None
    try:
        text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
    except (OverflowError, OSError, ValueError):
        return str(ts)
    return f"{text} ({ago(ts, now)})" if relative else text


def short_time(ts: float | None, now: float | None = None) -> str:
    """A time in at most 11 characters: ``21:04:30`` today, ``12-01 21:04`` another day."""
    if not _is_time(ts):
        return "-"
    assert ts is not None
    today = time.localtime(time.time() if now is None else now)[:3]
    if time.localtime(ts)[:3] == today:
        return time.strftime("%H:%M:%S", time.localtime(ts))
    return time.strftime("%m-%d %H:%M", time.localtime(ts))


def duration(seconds: float | None) -> str:
    """A length of time: ``46ms``, ``1.5s``, ``12.3s``, ``2.5m``, ``3.1h``; ``-`` for none."""
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def money(micros: int | None) -> str:
    """Millionths of a dollar as money: ``$0`` for nothing, cents from a dollar (``$12.35``,
    ``$1,234.50``), below it as many places as the amount needs, at least two and at most four
    (``$0.05``, ``$0.0042``), six below $0.0001 (``$0.000042``)."""
    if not micros:
        return "$0"
    sign, micros = ("-" if micros < 0 else ""), abs(micros)
    if micros >= 1_000_000:
        return f"{sign}${micros / 1e6:,.2f}"
    text = f"{micros / 1e6:.4f}" if micros >= 100 else f"{micros / 1e6:.6f}"
    whole, _, places = text.partition(".")
    return f"{sign}${whole}.{places.rstrip('0').ljust(2, '0')}"


def dollars(value: float | None) -> str:
    """An amount in dollars (a report's sum) written as ``money`` writes it; ``-`` for none."""
    return "-" if value is None else money(round(value * 1_000_000))


def pct(value: float | None) -> str:
    """A ratio as a percentage: ``12.5%``; ``-`` for none."""
    return "-" if value is None else f"{value * 100:.1f}%"


BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    """``▁▃█▅``: each value as a block of its height relative to the largest."""
    top = max(values, default=0)
    if top <= 0:
        return BARS[0] * len(values)
    return "".join(BARS[min(len(BARS) - 1, int(v / top * (len(BARS) - 1) + 0.5))] for v in values)


def since_words(since: float | None) -> str:
    """What a report covers, in words: ``all time`` or ``since 2026-11-05 08:00``."""
    if not _is_time(since):
        return "all time"
    assert since is not None
    return "since " + time.strftime("%Y-%m-%d %H:%M", time.localtime(since))


def tokens(count: int | None) -> str:
    """``1,234 tokens`` (``-`` for none)."""
    return f"{count:,} tokens" if count else "-"


def size(n: int | None) -> str:
    """Bytes as ``512 B``, ``1.5 KiB``, ``3.2 MiB``; ``-`` for unknown."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def one_line(value: object, limit: int = 60) -> str:
    """Whitespace collapsed, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(value).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_line(error: dict[str, Any] | None) -> str:
    """A journaled error in one line: its class name and the first line of its message
    (``KeyError: 'x'``); empty for no error."""
    if not error:
        return ""
    kind = str(error.get("type") or "Error").rsplit(".", 1)[-1]
    lines = str(error.get("message") or "").strip().splitlines()
    return f"{kind}: {lines[0]}" if lines else kind


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def human_times(data: Any, fields: tuple[str, ...] = ("ts", "at", "created", "updated")) -> Any:
    """A copy of JSON data whose time fields (named in ``fields``, ``deadline`` or ending in
    ``_at``) read as local times, for showing a record (a decision, an event)."""
    if isinstance(data, dict):
        return {
            k: local_time(v)
            if (k in fields or k.endswith("_at") or k == "deadline") and _is_time(v)
            else human_times(v, fields)
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [human_times(v, fields) for v in data]
    return data


def _is_time(ts: object) -> bool:
    return isinstance(ts, (int, float)) and not isinstance(ts, bool) and ts > 0
