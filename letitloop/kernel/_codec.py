"""Turn step outputs, run arguments and run results into journal bytes, and back.

Values are stored with the simplest of four codecs that can represent them, so that most
journal entries stay readable by tools that never run user code (the TUI, the language server):

* ``json``   plain JSON text; anything can read it.
* ``lilj``   JSON with tagged rich values, ``{"__lil__": tag, "v": ...}`` (tuple, set, bytes,
             datetime, Decimal, UUID, path...). No tag names a class, so loading runs no user code.
* ``liljc``  a 32-byte HMAC-SHA256 followed by JSON whose tags name importable classes
             (dataclasses, pydantic models, enums, namedtuples).
* ``pickle`` a 32-byte HMAC-SHA256 followed by pickle protocol 5: the last resort.

Security rule: a journal is data that whoever can write the file may edit, so loading it must
never run code that person chose. Classes are imported (``liljc``) and bytes are unpickled
(``pickle``) only after their HMAC was verified with ``hmac.compare_digest`` under the journal
key, which lives outside the journal (``key_path`` or ``$LIL_PICKLE_KEY``); a failed check raises
``TamperedDataError``. ``preview`` never imports or unpickles anything.

Only the standard library is imported: pydantic models are recognised when pydantic is already
loaded, never by importing it, so ``import letitloop`` stays cheap.

``fingerprint`` hashes call arguments canonically so replay can notice changed arguments;
``load_or_create_key`` creates each journal's key once, atomically, readable only by its owner.
"""

from __future__ import annotations

import enum
import functools
import importlib
import io
import json
import json.scanner  # loaded by json itself: the replay path calls its scanner
import math
import pathlib
import sys

from letitloop._digest import compare_digest, hmac_sha256
from letitloop._keys import key_hint
from letitloop.errors import CodecError, TamperedDataError, UnencodableError

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypedDict

    class _Ids(TypedDict):
        run_id: str | None
        step: str | None
        position: int | None


CODEC_JSON = "json"
CODEC_TAGGED = "lilj"
CODEC_CLASS = "liljc"
CODEC_PICKLE = "pickle"

TAG = "__lil__"
_MAC_LEN = 32
_JSON, _TAGGED, _CLASS = 0, 1, 2  # what a walked value needs, simplest first
_PATH_NAMES = ("Path", "PosixPath", "WindowsPath", "PurePosixPath", "PureWindowsPath")
_PATHS: dict[str, type[pathlib.PurePath]] = {n: getattr(pathlib, n) for n in _PATH_NAMES}
_SIMPLE: dict[type, tuple[str, Callable[[Any], object]]] = {
    bytes: ("bytes", lambda b: _base64().b64encode(b).decode("ascii")),
}  # dates, Decimal and UUID join on first sight (_late_simple): no value of theirs exists before
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_UNSIMPLE: dict[str, Callable[[Any], object]] = {
    "bytes": lambda s: _base64().b64decode(s, validate=True),
    "datetime": lambda s: _module("datetime").datetime.fromisoformat(s),
    "date": lambda s: _module("datetime").date.fromisoformat(s),
    "time": lambda s: _module("datetime").time.fromisoformat(s),
    "timedelta": lambda v: _module("datetime").timedelta(
        days=v[0], seconds=v[1], microseconds=v[2]
    ),
    "decimal": lambda s: _module("decimal").Decimal(s),
    "uuid": lambda s: _module("uuid").UUID(s),
    "float": _FLOATS.__getitem__,
}


def _module(name: str) -> Any:
    """Standard modules only some values need, imported when such a value first shows up."""
    return sys.modules.get(name) or __import__(name)


def _is_dataclass(v: object) -> bool:
    """``dataclasses.is_dataclass``; no dataclass exists before its module was imported."""
    loaded = sys.modules.get("dataclasses")
    return loaded is not None and bool(loaded.is_dataclass(v))


def _base64() -> Any:
    return _module("base64")


def _late_simple(t: type) -> tuple[str, Callable[[Any], object]] | None:
    """Dates, Decimal and UUID: registered the first time one is encoded (their modules are
    loaded then), so importing the codec imports none of them."""
    if t.__module__ == "datetime":
        dt = _module("datetime")
        _SIMPLE[dt.datetime] = ("datetime", lambda d: d.isoformat())
        _SIMPLE[dt.date] = ("date", lambda d: d.isoformat())
        _SIMPLE[dt.time] = ("time", lambda t: t.isoformat())
        _SIMPLE[dt.timedelta] = ("timedelta", lambda d: [d.days, d.seconds, d.microseconds])
        return _SIMPLE.get(t)
    if t.__module__ in ("decimal", "_decimal", "_pydecimal", "uuid"):
        _SIMPLE[_module("decimal").Decimal] = ("decimal", str)
        _SIMPLE[_module("uuid").UUID] = ("uuid", str)
        return _SIMPLE.get(t)
    return None


_FIX_UNENCODABLE = (
    "Return JSON-compatible data (dict, list, str, int, float, bool, None), a dataclass or "
    "pydantic model defined at module level, or what is needed to rebuild the object (an id, "
    "a path, a run_id) instead of the live object; or convert it yourself before returning it."
)


class _Fail(Exception):
    """An element the walker cannot represent: where it is, and why."""

    def __init__(self, path: str, value: object, reason: str, *, cycle: bool = False) -> None:
        super().__init__(path)
        self.path, self.value, self.reason, self.cycle = path, value, reason, cycle


def _tname(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def _canon(x: object) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _dumps(x: object) -> bytes:
    text = json.dumps(x, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: escaped JSON is still valid UTF-8
        return json.dumps(x, separators=(",", ":"), allow_nan=False).encode("ascii")


def _importable(t: type) -> bool:
    """Whether `module:qualname` finds this very class again (without importing anything)."""
    obj: object = sys.modules.get(t.__module__)
    if obj is None or "<locals>" in t.__qualname__:
        return False
    for part in t.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is t


def _is_model(t: type) -> bool:
    """A pydantic (v2) model class, recognised without importing pydantic."""
    return "pydantic" in sys.modules and all(
        any(name in vars(c) for c in t.__mro__) for name in ("model_dump", "model_validate")
    )


def _index(k: object) -> str:
    if type(k) in (str, int, float, bool, type(None)):
        return json.dumps(k, ensure_ascii=False) if type(k) is str else repr(k)
    return f"<{_tname(type(k))} key>"


class _Walker:
    """Converts a value to JSON-ready data and notes the simplest codec level it needs.

    A lenient walker (for fingerprints) never fails: what it cannot represent becomes its type
    name, classes are named without checking they import, and dict pairs are sorted.
    """

    def __init__(self, *, lenient: bool = False) -> None:
        self.lenient = lenient
        self.level = _JSON
        self.first_class: tuple[str, object] = ("value", None)
        self._open: set[int] = set()  # ids of the containers being walked, to catch cycles

    def walk(self, v: Any, path: str) -> Any:
        t = type(v)
        if v is None or t is bool or t is int or t is str:
            return v
        if t is float:
            if math.isfinite(v):
                return v
            return self._tag("float", "nan" if math.isnan(v) else "inf" if v > 0 else "-inf")
        simple = _SIMPLE.get(t) or _late_simple(t)
        if simple is not None:
            name, convert = simple
            return self._tag(name, convert(v))
        if t is list:
            return self._nest(v, path, self._items)
        if t is dict:
            return self._nest(v, path, self._dict)
        if t is tuple:
            return self._nest(v, path, lambda v, p: self._tag("tuple", self._items(v, p)))
        if t is set or t is frozenset:
            return self._nest(v, path, self._set)
        if _PATHS.get(t.__name__) is t:
            return self._tag("path", str(v), cls=t.__name__)
        return self._rich(v, path)

    def _rich(self, v: Any, path: str) -> Any:
        t = type(v)
        if isinstance(v, enum.Enum):
            return self._cls(v, path, "enum", lambda v, p: self.walk(v.value, f"{p}.value"))
        if isinstance(v, tuple) and hasattr(t, "_fields") and hasattr(t, "_make"):
            return self._nest(
                v, path, functools.partial(self._cls, tag="namedtuple", body=self._items)
            )
        if _is_dataclass(v) and not isinstance(v, type):
            return self._nest(
                v, path, functools.partial(self._cls, tag="dataclass", body=self._fields)
            )
        if _is_model(t):
            return self._cls(v, path, "pydantic", self._dump)
        return self._fail(path, v, "has no safe encoding")

    def _tag(self, tag: str, body: object, **extra: object) -> dict[str, object]:
        self.level = max(self.level, _TAGGED)
        return {TAG: tag, **extra, "v": body}

    def _cls(self, v: Any, path: str, tag: str, body: Callable[[Any, str], object]) -> Any:
        t = type(v)
        if not self.lenient and not _importable(t):
            reason = "has a class that cannot be imported by name (defined inside a function?)"
            return self._fail(path, v, reason)
        if self.level < _CLASS:
            self.level, self.first_class = _CLASS, (path, v)
        return {TAG: tag, "cls": f"{t.__module__}:{t.__qualname__}", "v": body(v, path)}

    def _nest(self, v: Any, path: str, build: Callable[[Any, str], object]) -> Any:
        if id(v) in self._open:
            return self._fail(path, v, "is part of a reference cycle (it contains itself)", True)
        self._open.add(id(v))
        try:
            return build(v, path)
        finally:
            self._open.discard(id(v))

    def _set(self, v: Any, path: str) -> Any:
        return self._tag(type(v).__name__, sorted(self._items(v, path), key=_canon))

    def _items(self, v: Any, path: str) -> list[Any]:
        return [self.walk(x, f"{path}[{i}]") for i, x in enumerate(v)]

    def _dict(self, d: dict[Any, Any], path: str) -> Any:
        if TAG not in d and all(type(k) is str for k in d):
            return {k: self.walk(x, f"{path}[{_index(k)}]") for k, x in d.items()}
        pairs = [
            [self.walk(k, f"{path}.keys()[{i}]"), self.walk(x, f"{path}[{_index(k)}]")]
            for i, (k, x) in enumerate(d.items())
        ]
        return self._tag("dict", sorted(pairs, key=_canon) if self.lenient else pairs)

    def _fields(self, v: Any, path: str) -> dict[str, Any]:
        return {
            f.name: self.walk(getattr(v, f.name), f"{path}.{f.name}")
            for f in _module("dataclasses").fields(v)
            if hasattr(v, f.name)
        }

    def _dump(self, v: Any, path: str) -> Any:
        try:
            return v.model_dump(mode="json")
        except Exception as e:  # any failure means "not representable"
            return self._fail(path, v, f"cannot be dumped by pydantic ({type(e).__name__}: {e})")

    def _fail(self, path: str, v: object, reason: str, cycle: bool = False) -> Any:
        if self.lenient:
            return {TAG: "object", "type": _tname(type(v))}
        raise _Fail(path, v, reason, cycle=cycle)


class _Decoder:
    """Rebuilds values from tagged JSON; imports classes only when `classes` (verified data)."""

    def __init__(self, *, classes: bool) -> None:
        self.classes = classes

    def dec(self, v: Any) -> Any:
        if isinstance(v, list):
            return [self.dec(x) for x in v]
        if not isinstance(v, dict):
            return v
        if TAG not in v:
            return {k: self.dec(x) for k, x in v.items()}
        tag, body = v[TAG], v["v"]
        if tag in _UNSIMPLE:
            return _UNSIMPLE[tag](body)
        if tag in ("tuple", "set", "frozenset"):
            items = (self.dec(x) for x in body)
            return (
                tuple(items) if tag == "tuple" else set(items) if tag == "set" else frozenset(items)
            )
        if tag == "dict":
            return {self.dec(k): self.dec(x) for k, x in body}
        if tag == "path":
            return _path(v["cls"], body)
        if tag not in _CLASS_CHECKS:
            raise CodecError(f"unknown tag {tag!r}", fix="Upgrade letitloop to read this journal.")
        if not self.classes:
            raise CodecError(f"tag {tag!r} names a class, which {CODEC_TAGGED!r} data must not do")
        return self._instance(tag, _import_class(v["cls"], tag), body)

    def _instance(self, tag: str, cls: Any, body: Any) -> object:
        if tag == "enum":
            return cls(self.dec(body))
        if tag == "namedtuple":
            return cls._make(self.dec(x) for x in body)
        if tag == "pydantic":
            return cls.model_validate(body)
        fields = {f.name: f for f in _module("dataclasses").fields(cls)}
        values = {k: self.dec(x) for k, x in body.items()}
        if unknown := sorted(set(values) - set(fields)):
            raise CodecError(
                f"dataclass {_tname(cls)} has no field(s) {', '.join(unknown)}",
                fix="The class changed since the value was stored; restore the removed fields.",
            )
        obj = cls(**{k: x for k, x in values.items() if fields[k].init})
        for k, x in values.items():
            if not fields[k].init:
                object.__setattr__(obj, k, x)
        return obj


_CLASS_CHECKS: dict[str, Callable[[type], bool]] = {
    "enum": lambda c: issubclass(c, enum.Enum),
    "dataclass": _is_dataclass,
    "pydantic": _is_model,
    "namedtuple": lambda c: issubclass(c, tuple) and hasattr(c, "_fields") and hasattr(c, "_make"),
}


def _path(name: str, text: str) -> pathlib.PurePath:
    try:
        return _PATHS[name](text)
    except NotImplementedError:  # a concrete path of the other OS: keep its pure flavour
        return pathlib.PurePosixPath(text) if "Posix" in name else pathlib.PureWindowsPath(text)


def _import_class(ref: str, tag: str) -> type:
    """Import `module:qualname` (verified data only) and check it is the kind the tag claims."""
    module, _, qualname = ref.partition(":")
    if not module or not qualname or "<locals>" in qualname:
        raise CodecError(f"{ref!r} is not an importable class reference")
    try:
        obj: object = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise CodecError(
            f"class {ref} cannot be imported ({type(e).__name__}: {e})",
            fix="Make the module importable (same code and sys.path as when the value was stored).",
        ) from e
    if not isinstance(obj, type) or not _CLASS_CHECKS[tag](obj):
        raise CodecError(f"{ref} is not a {tag} class, although the journal says it is")
    return obj


@functools.cache
def _pickler() -> Any:
    """A pickler class that refuses classes pickle.loads could not find by name again."""
    import pickle

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            cls = obj if isinstance(obj, type) else type(obj)
            if "<locals>" in cls.__qualname__:
                raise pickle.PicklingError(f"class {_tname(cls)} is defined inside a function")
            return NotImplemented

    return Pickler


# Modules of ours that moved since journals were written: an authenticated pickle that names the
# old module loads from the new one (a pickled LetItLoopError of 2026-12-06 names kernel._errors).
_MOVED = {"letitloop.kernel._errors": "letitloop.errors"}


@functools.cache
def _unpickler() -> Any:
    """``pickle.Unpickler`` that finds our moved modules under their new names."""
    import pickle

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            return super().find_class(_MOVED.get(module, module), name)

    return Unpickler


def _unpickle(data: bytes) -> object:
    import io

    return _unpickler()(io.BytesIO(data)).load()


class Codec:
    """Encodes values with the simplest codec that represents them, and decodes them safely."""

    def __init__(self, key: bytes | None, *, allow_pickle: bool = True) -> None:
        self._key = key
        self._allow_pickle = allow_pickle

    def encode(
        self,
        value: object,
        *,
        what: str = "value",
        run_id: str | None = None,
        step: str | None = None,
        position: int | None = None,
    ) -> tuple[str, bytes]:
        """Return `(codec, data)` for `value`; raise UnencodableError naming the culprit."""
        ids: _Ids = {"run_id": run_id, "step": step, "position": position}
        walker = _Walker()
        try:
            text = _dumps(walker.walk(value, "value"))
        except _Fail as f:
            if f.cycle:
                raise self._unencodable(what, f, "", ids) from None
            failure = f
        except RecursionError:
            raise UnencodableError(
                f"cannot journal the {what}: it is nested too deeply", fix=_FIX_UNENCODABLE, **ids
            ) from None
        except ValueError as e:  # e.g. an int too long for JSON, or a model dumping nan
            failure = _Fail("value", value, f"cannot be written as JSON ({e})")
        else:
            if walker.level < _CLASS:
                return (CODEC_JSON if walker.level == _JSON else CODEC_TAGGED), text
            if self._key is not None:
                return CODEC_CLASS, self._sign(text)
            path, culprit = walker.first_class
            failure = _Fail(path, culprit, "names a class, which needs a journal key (none is set)")
        blob, why = self._pickle(value)
        if blob is not None:
            return CODEC_PICKLE, blob
        raise self._unencodable(what, failure, why, ids)

    def decode(
        self,
        codec: str,
        data: bytes,
        *,
        what: str = "value",
        run_id: str | None = None,
        step: str | None = None,
        position: int | None = None,
    ) -> object:
        """Rebuild a value; authenticated codecs import or unpickle only after the HMAC check."""
        ids: _Ids = {"run_id": run_id, "step": step, "position": position}
        try:
            if codec == CODEC_JSON:
                return _json_decode(data.decode("utf-8"))
            if codec == CODEC_TAGGED:
                return _Decoder(classes=False).dec(json.loads(data))
            if codec == CODEC_CLASS:
                return _Decoder(classes=True).dec(json.loads(self._verify(codec, data, what, ids)))
            if codec == CODEC_PICKLE:
                return _unpickle(self._verify(codec, data, what, ids))
        except CodecError as e:
            if e.run_id is None and e.step is None:
                e.run_id, e.step, e.position = run_id, step, position
            raise
        except Exception as e:
            raise CodecError(
                f"cannot load the {what}: its {codec!r} data is malformed "
                f"({type(e).__name__}: {e})",
                fix="The journal entry is damaged or was written by another version of the code.",
                **ids,
            ) from e
        raise CodecError(
            f"cannot load the {what}: unknown codec {codec!r}",
            fix="The journal was written by a newer letitloop; upgrade to read it.",
            **ids,
        )

    def mac(self, body: bytes) -> bytes | None:
        """HMAC-SHA256 of ``body`` under the journal key (None without a key): authenticates
        other journaled data, such as a run's entry point (``kernel._entry``)."""
        if self._key is None:
            return None
        return hmac_sha256(self._key, body)

    def _sign(self, body: bytes) -> bytes:
        assert self._key is not None
        return hmac_sha256(self._key, body) + body

    def _verify(self, codec: str, data: bytes, what: str, ids: _Ids) -> bytes:
        if self._key is None:
            raise CodecError(
                f"cannot load the {what}: {codec!r} data is authenticated with the journal key, "
                "and no key was given",
                fix=f"The key is needed; it is looked for at {key_hint()}.",
                **ids,
            )
        mac, body = data[:_MAC_LEN], data[_MAC_LEN:]
        expected = hmac_sha256(self._key, body)
        if len(data) < _MAC_LEN or not compare_digest(mac, expected):
            raise TamperedDataError(
                f"the stored {what} ({codec!r}) failed authentication: it was modified after it "
                "was written, or written under another key; it was not loaded",
                fix="Do not trust this journal. If it is yours, use the key it was written with: "
                f"the key lives at {key_hint()}.",
                **ids,
            )
        return body

    def _pickle(self, value: object) -> tuple[bytes | None, str]:
        if self._key is None:
            return None, "pickle needs a journal key too (none is set)"
        if not self._allow_pickle:
            return None, "pickle is disabled (allow_pickle=False)"
        buffer = io.BytesIO()
        try:
            _pickler()(buffer, protocol=5).dump(value)
        except Exception as e:  # reducers may raise anything
            return None, f"pickle failed too ({type(e).__name__}: {e})"
        return self._sign(buffer.getvalue()), ""

    def _unencodable(self, what: str, f: _Fail, why: str, ids: _Ids) -> UnencodableError:
        message = f"cannot journal the {what}: {f.path} of type {_tname(type(f.value))} {f.reason}"
        fix = _FIX_UNENCODABLE
        if not self._allow_pickle:
            fix += " Pickle is disabled (allow_pickle=False), so other objects cannot be stored."
        if self._key is None:
            fix += " Classes and pickle need a key: pass load_or_create_key(journal_id) to Codec."
        return UnencodableError(message + (f"; {why}" if why else ""), fix=fix, **ids)


def preview(codec: str, data: bytes, limit: int = 2000) -> str:
    """Human-readable text for stored data, without importing or unpickling anything (the one
    preview of every surface lives in ``letitloop.journal.preview``)."""
    from letitloop.journal import preview as _preview

    return _preview(codec, data, limit=limit)


_SCALARS = frozenset({str, int, bool, type(None)})
_json_full_decode = json.JSONDecoder().decode
# json.decoder's own (C) scanner; typeshed types its argument as a scanner, not a decoder
_json_scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def _json_decode(text: str) -> Any:
    """``json.loads`` for what this codec writes (no whitespace around the value), calling the
    scanner directly: a replayed step's output decodes in about a third of the time. Anything
    else goes through the full decoder, which accepts or refuses it exactly as before."""
    try:
        value, end = _json_scan(text, 0)
    except StopIteration:  # not a value at position 0 (whitespace, or not JSON at all)
        return _json_full_decode(text)
    if end != len(text):
        return _json_full_decode(text)
    return value
