"""What a splice returns (``SpliceResult``) and what ``list_targets`` lists (``Target``).

Both are plain frozen dataclasses; this module does not import libcst.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from letitloop.splice._text import unified_diff


@dataclass(frozen=True)
class SpliceResult:
    """The outcome of one splice. The input string is never modified; ``source`` is the new
    text.

    - ``source``: the whole new source text.
    - ``changed``: qualified names of the definitions replaced, inserted, deleted or edited
      (a renamed replacement lists the old name, then the new one); empty if nothing changed.
    - ``kind``: ``"replace"``, ``"insert"``, ``"delete"``, ``"wrap_in_step"``,
      ``"wrap_in_marker"`` or ``"add_durable"``.
    - ``diff``: a unified diff from the old text to ``source`` (``""`` if they are equal),
      labelled ``a/source.py`` and ``b/source.py``; ``diff_for(path)`` labels it with a path.
    - ``original``: the text the splice started from.
    """

    source: str
    changed: tuple[str, ...]
    kind: str
    diff: str
    original: str = field(repr=False)

    @property
    def unchanged(self) -> bool:
        """True if the splice left the text exactly as it was (``add_durable`` on a function
        that is already durable, replacing a definition with its own source)."""
        return self.source == self.original

    def diff_for(self, path: str, context: int = 3) -> str:
        """The unified diff labelled ``a/<path>`` and ``b/<path>``."""
        return unified_diff(self.original, self.source, path, context)


@dataclass(frozen=True)
class Target:
    """One definition a splice can name (see ``list_targets``)."""

    qualname: str  # Class.method, outer.<locals>.inner
    kind: str  # "function", "async function" or "class"
    line: int  # the line of its def/class keyword
    first_line: int  # the line of its first decorator, else ``line``
    end_line: int  # its last line
    choose: int | None  # its number among definitions sharing the name, else None
