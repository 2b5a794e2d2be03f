"""Text from the journal or the user's file, made safe for where the editor shows it.

A hover is Markdown: a step name with a backtick closed its code span and the rest rendered as
bold text and links; a pipe in a run id split its table cell. ``code`` makes a code span whose
fence is longer than any run of backticks inside, ``fenced`` does the same for a block, and
``text`` backslash-escapes every ASCII punctuation character (CommonMark allows it for each, and
it keeps ``https://`` and ``www.`` from being linked). In a GFM table a pipe splits the row even
inside a code span, so table cells pass ``table=True`` (``\\|``, which the table turns back into
a pipe). Code-lens titles are plain text, but VS Code draws ``$(name)`` in them as an icon:
``lens`` keeps it text, on one line (code-action titles too: they show a splice's reason).
Commands a message suggests quote their arguments for the shell
(``shell``), so a run id with a space or a ``;`` is one argument when pasted.
"""

from __future__ import annotations

import re
import shlex
import string

_BACKTICKS = re.compile(r"`+")
_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
_ICON = re.compile(r"\$\(")
ZWSP = "\u200b"


def _fence(value: str, least: int) -> str:
    longest = max((len(m) for m in _BACKTICKS.findall(value)), default=0)
    return "`" * max(least, longest + 1)


def code(value: object, *, table: bool = False) -> str:
    """``value`` as a Markdown code span that shows it as written (one line)."""
    body = " ".join(str(value).splitlines()) or " "
    fence = _fence(body, 1)
    if body[0] in "` " or body[-1] in "` ":  # the one space each side CommonMark strips
        body = f" {body} "
    span = f"{fence}{body}{fence}"
    return span.replace("|", "\\|") if table else span


def fenced(value: str, info: str = "text") -> list[str]:
    """``value`` as the lines of a fenced code block that no line inside it can close."""
    fence = _fence(value, 3)
    return [fence + info, value, fence]


def text(value: object) -> str:
    """``value`` as Markdown text that shows it as written (no emphasis, link, HTML or
    heading; a pipe is ``\\|``, which is also right in a table cell)."""
    flat = " ".join(str(value).splitlines())
    return _PUNCTUATION.sub(r"\\\1", flat)


def lens(value: object) -> str:
    """``value`` as a code-lens or code-action title: one line, and ``$(`` (VS Code's icon
    syntax) split by a zero-width space, so it stays text in every editor."""
    return _ICON.sub("$" + ZWSP + "(", " ".join(str(value).split()))


def shell(*words: object) -> str:
    """A command line whose every word is one shell argument as written."""
    return " ".join(shlex.quote(str(w)) for w in words)
