"""Argument fingerprints: how replay knows a step was called with the same inputs.

A fingerprint is a stable digest of a call's arguments, journaled with each step and compared
on replay (a different one is a ``NonDeterminismError``). Scalar arguments hash their ``repr``
(and are remembered in the process); anything else is walked as the codec walks a value, with
opaque objects counting only by their type's name. Changing how fingerprints are computed makes
every unfinished run of an older version fail: the format is frozen.
"""

from __future__ import annotations

import json

from letitloop._digest import blake2b
from letitloop.kernel._codec import _tname, _Walker

_SCALARS = frozenset({str, int, bool, type(None)})

# fingerprints of short scalar arguments already hashed in this process: a run resumed in the
# process that ran it (a notebook cell run again) hashes none of its steps' arguments again
_FP_MEMO: dict[str, str] = {}
_FP_MEMO_TEXT = 256  # longer argument texts are hashed every time
_FP_MEMO_SIZE = 8192  # entries before the memo starts over
# the same for a call with one short scalar argument (a loop's index, an id), keyed by its type
# and value (True and 1 are equal, their fingerprints are not), so a replay builds no text
_FP_ONE: dict[tuple[type, object], str] = {}


def _scalars_only(args: tuple[object, ...], kwargs: dict[str, object]) -> bool:
    for a in args:
        if type(a) not in _SCALARS:
            return False
    for v in kwargs.values():
        if type(v) not in _SCALARS:
            return False
    return True


def fingerprint(args: tuple[object, ...], kwargs: dict[str, object]) -> str:
    """Stable hex digest of call arguments; opaque objects count only by their type's name.

    Fingerprints are stored in journals and compared on replay: changing how they are computed
    makes every unfinished run of an older version fail with NonDeterminismError.
    """
    if not kwargs and len(args) == 1 and type(args[0]) in _SCALARS:
        fp = _FP_ONE.get((type(args[0]), args[0]))
        if fp is not None:
            return fp
    if kwargs:
        text = "s:" + repr((args, sorted(kwargs.items()))) if _scalars_only(args, kwargs) else ""
    else:  # the common case, checked inline: repr is exact for these types
        for a in args:
            if type(a) not in _SCALARS:
                text = ""
                break
        else:
            text = "s:" + repr(args)
    if text:
        fp = _FP_MEMO.get(text)
        if fp is None:
            fp = blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
            if len(text) <= _FP_MEMO_TEXT:
                if len(_FP_MEMO) >= _FP_MEMO_SIZE:
                    _FP_MEMO.clear()
                _FP_MEMO[text] = fp
        if len(args) == 1 and not kwargs and len(text) <= _FP_MEMO_TEXT:
            if len(_FP_ONE) >= _FP_MEMO_SIZE:
                _FP_ONE.clear()
            _FP_ONE[type(args[0]), args[0]] = fp
        return fp
    walker = _Walker(lenient=True)
    try:
        doc: object = [
            [walker.walk(a, "") for a in args],
            {k: walker.walk(kwargs[k], "") for k in sorted(kwargs)},
        ]
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except Exception:  # never raise: too deep, an int too long for JSON...
        doc = [[_tname(type(a)) for a in args], {k: _tname(type(kwargs[k])) for k in kwargs}]
        text = json.dumps(doc, sort_keys=True)
    return blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
