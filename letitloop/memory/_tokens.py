"""Counting tokens offline: exact with a tokenizer you installed, a documented estimate otherwise.

A counter has a ``name`` (said in every context report), says whether it is ``exact``, counts a
text and cuts one to a number of tokens. Nothing here downloads anything at run time:

* ``tiktoken_counter("cl100k_base")`` uses tiktoken's cached encoding (``TIKTOKEN_CACHE_DIR``,
  else tiktoken's temp cache); one that is not cached is refused with how to cache it, never
  fetched. An ``Encoding`` object you built works too.
* ``hf_counter("tokenizer.json")`` uses a Hugging Face ``tokenizers`` file on disk.
* ``ESTIMATE`` (the default): ``ceil(characters / 4)``, about right for English prose with
  OpenAI's and Anthropic's tokenizers, off by up to 2x for code or other languages. Each message
  also counts ``MESSAGE_TOKENS`` (4) for its framing (role, separators), whatever the counter.

tiktoken and tokenizers are imported only when such a counter is made.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from letitloop.errors import ConfigError

MESSAGE_TOKENS = 4  # a chat message's framing, counted on top of its content
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class TokenCounter:
    """How tokens are counted: ``count(text)``, ``truncate(text, tokens)`` (the text's first
    ``tokens`` tokens), a ``name`` for reports and whether it is ``exact``."""

    name: str
    exact: bool
    count: Callable[[str], int]
    truncate: Callable[[str, int], str]

    def describe(self) -> str:
        return f"{self.name} ({'exact' if self.exact else 'estimate'})"


def _estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _estimate_cut(text: str, tokens: int) -> str:
    return text[: max(tokens, 0) * CHARS_PER_TOKEN]


ESTIMATE = TokenCounter("characters/4", False, _estimate, _estimate_cut)

_tiktoken_lock = threading.Lock()


def tiktoken_counter(encoding: Any = "cl100k_base") -> TokenCounter:
    """Exact counts with tiktoken: an encoding's name (from tiktoken's cache, never downloaded)
    or an ``Encoding`` object."""
    try:
        import tiktoken
        import tiktoken.load
    except ImportError:
        raise ConfigError(
            "tiktoken_counter needs tiktoken, which is not installed",
            fix="pip install tiktoken (or 'letitloop[tokens]'), or count with the estimate",
        ) from None
    enc = encoding if not isinstance(encoding, str) else _cached_encoding(tiktoken, encoding)

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    def truncate(text: str, tokens: int) -> str:
        return str(enc.decode(enc.encode(text, disallowed_special=())[: max(tokens, 0)]))

    return TokenCounter(f"tiktoken:{enc.name}", True, count, truncate)


def _cached_encoding(tiktoken: Any, name: str) -> Any:
    """``tiktoken.get_encoding(name)`` with downloads refused: tiktoken reads a cached file
    through ``tiktoken.load.read_file`` only when it must fetch it."""
    loader = tiktoken.load
    with _tiktoken_lock:
        original = loader.read_file

        def local_only(blobpath: str) -> bytes:
            if "://" in blobpath:
                raise _NotCached(blobpath)
            return original(blobpath)  # type: ignore[no-any-return]

        loader.read_file = local_only
        try:
            return tiktoken.get_encoding(name)
        except _NotCached:
            raise ConfigError(
                f"tiktoken's encoding {name!r} is not in its cache, and letitloop downloads "
                "nothing at run time",
                fix=f'cache it once where the network is allowed (python -c "import tiktoken; '
                f"tiktoken.get_encoding('{name}')\") and point TIKTOKEN_CACHE_DIR at that cache "
                "here, or count with the estimate (counter=None)",
            ) from None
        except ValueError as exc:
            raise ConfigError(
                f"tiktoken has no encoding {name!r}: {exc}",
                fix="name one of tiktoken.list_encoding_names()",
            ) from None
        finally:
            loader.read_file = original


class _NotCached(Exception):
    pass


def hf_counter(path: str) -> TokenCounter:
    """Exact counts with a Hugging Face ``tokenizers`` file (``tokenizer.json``) on disk."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ConfigError(
            "hf_counter needs the tokenizers package, which is not installed",
            fix="pip install tokenizers (or 'letitloop[tokens]'), or count with the estimate",
        ) from None
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # the library raises plain Exceptions for unreadable files
        raise ConfigError(
            f"cannot read the tokenizer file {path}: {exc}",
            fix="pass the path of a tokenizer.json saved by tokenizers (Tokenizer.save)",
        ) from None

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids)

    def truncate(text: str, tokens: int) -> str:
        if tokens <= 0:
            return ""
        offsets = tok.encode(text, add_special_tokens=False).offsets
        return text if tokens >= len(offsets) else text[: offsets[tokens - 1][1]]

    name = str(path).rsplit("/", 1)[-1]
    return TokenCounter(f"tokenizers:{name}", True, count, truncate)


def counter_for(spec: Any) -> TokenCounter:
    """A counter from what ``context(counter=...)`` was given: None (the estimate), a
    ``TokenCounter``, ``"tiktoken:NAME"``, ``"hf:PATH"``, or a function text -> tokens."""
    if spec is None:
        return ESTIMATE
    if isinstance(spec, TokenCounter):
        return spec
    if isinstance(spec, str):
        kind, _, arg = spec.partition(":")
        if kind == "tiktoken":
            return tiktoken_counter(arg or "cl100k_base")
        if kind in ("hf", "tokenizers") and arg:
            return hf_counter(arg)
        if kind == "estimate":
            return ESTIMATE
    if callable(spec):
        fn: Callable[[str], int] = spec
        name = getattr(fn, "__qualname__", type(fn).__name__)
        return TokenCounter(f"custom:{name}", True, fn, _estimate_cut)
    raise ConfigError(
        f"counter={spec!r} is not a token counter",
        fix='pass None (the estimate), "tiktoken:cl100k_base", "hf:path/tokenizer.json", a '
        "TokenCounter, or a function that counts a text's tokens",
    )
