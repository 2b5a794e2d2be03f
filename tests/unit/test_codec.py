"""Tests for letitloop.kernel._codec: codec choice, round-trips, errors, authentication, keys."""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import decimal
import enum
import hashlib
import hmac
import importlib
import json
import math
import os
import pathlib
import pickle
import stat
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pydantic
import pytest

import letitloop
import letitloop.kernel._codec as codec_module
from letitloop._keys import key_path, load_or_create_key
from letitloop.errors import CodecError, ConfigError, TamperedDataError, UnencodableError
from letitloop.kernel._codec import (
    CODEC_CLASS,
    CODEC_JSON,
    CODEC_PICKLE,
    CODEC_TAGGED,
    Codec,
    preview,
)
from letitloop.kernel._fingerprint import fingerprint

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
ROOT = pathlib.Path(letitloop.__file__).resolve().parents[1]


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Order:
    id: int
    items: list[str]
    total: float = dataclasses.field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self.total = float(len(self.items))


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


class Pair(NamedTuple):
    left: int
    right: str


class User(pydantic.BaseModel):
    name: str
    tags: list[str]
    joined: dt.datetime


class Plain:
    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return type(other) is Plain and other.n == self.n

    __hash__ = None  # type: ignore[assignment]


class MyInt(int):
    pass


def same(a: object, b: object) -> bool:
    """Equal, with the same types all the way down (bool is not int, tuple is not list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return repr(a) == repr(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    return a == b


def roundtrip(value: object, codec: Codec | None = None) -> tuple[str, bytes, object]:
    codec = codec or Codec(KEY)
    name, data = codec.encode(value)
    return name, data, codec.decode(name, data)


def sub_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


# --- plain JSON ------------------------------------------------------------------------------

PLAIN: list[object] = [
    None,
    True,
    False,
    0,
    -5,
    2**70,
    1.5,
    -0.0,
    0.1 + 0.2,
    1 / 3,
    5e-324,
    1.7976931348623157e308,
    "héllo ☃ \x00",
    [],
    {},
    {"a": [1, {"b": None, "c": [True, 2.5]}], "z": "x"},
]


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_plain_json_roundtrips_as_json(value: object) -> None:
    name, data, back = roundtrip(value)
    assert name == CODEC_JSON
    assert same(back, value)
    assert same(json.loads(data), value)


def test_plain_json_needs_no_key() -> None:
    name, _, back = roundtrip({"x": [1, 2]}, Codec(None))
    assert (name, back) == (CODEC_JSON, {"x": [1, 2]})


def test_dict_key_order_preserved() -> None:
    for value in ({"b": 1, "a": 2, "c": 3}, {3: "c", 1: "a", 2: "b"}):
        _, _, back = roundtrip(value)
        assert isinstance(back, dict)
        assert list(back) == list(value)


def test_bool_stays_bool_and_tuple_stays_tuple() -> None:
    value = [True, 1, False, 0, (1, [2, (3,)]), {True: 1, 1.5: False}]
    _, _, back = roundtrip(value)
    assert same(back, value)
    assert isinstance(back, list)
    assert [type(x) for x in back[:4]] == [bool, int, bool, int]
    assert type(back[4]) is tuple and type(back[4][1]) is list and type(back[4][1][1]) is tuple


# --- tagged (class-free) types ---------------------------------------------------------------

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
TAGGED = [
    (1, "a", (2.5, None)),
    [(1, 2), [(3,)]],
    {3, 1, 2},
    frozenset({"x", "y"}),
    {frozenset({1, 2}), (1, "a")},
    bytes(range(256)),
    b"",
    dt.datetime(2024, 2, 29, 12, 30, 45, 123456),
    dt.datetime(2024, 2, 29, 12, 30, 45, 1, tzinfo=IST),
    dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    dt.date(1999, 12, 31),
    dt.time(23, 59, 58, 999999),
    dt.time(1, 2, 3, tzinfo=IST),
    dt.timedelta(days=-3, seconds=5, microseconds=7),
    decimal.Decimal("1.10"),
    decimal.Decimal("-0.000001E+30"),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    float("inf"),
    float("-inf"),
    {1: "one", 2: "two"},
    {1: "int", "1": "str", None: "none", (1, 2): "tuple"},
    {"__lil__": "tuple", "v": [1]},
    {"outer": {"__lil__": 1}},
    pathlib.PurePosixPath("/etc/hosts"),
    pathlib.PureWindowsPath(r"C:\Users\me"),
    pathlib.Path("relative/file.txt"),
    {"when": dt.date(2020, 1, 1), "ids": [uuid.UUID(int=5)], "raw": {b"k": (1.5, float("inf"))}},
]


@pytest.mark.parametrize("value", TAGGED, ids=repr)
def test_tagged_types_roundtrip_as_lilj(value: object) -> None:
    name, data, back = roundtrip(value, Codec(None))
    assert name == CODEC_TAGGED
    assert same(back, value)
    json.loads(data)  # readable by any JSON tool


def test_nan_roundtrips() -> None:
    name, _, back = roundtrip([float("nan")])
    assert name == CODEC_TAGGED
    assert isinstance(back, list) and math.isnan(back[0])


def test_datetime_timezones_kept() -> None:
    aware = dt.datetime(2024, 6, 1, 8, 0, tzinfo=IST)
    _, _, back = roundtrip([aware, aware.replace(tzinfo=None)])
    assert isinstance(back, list)
    assert back[0].utcoffset() == dt.timedelta(hours=5, minutes=30)
    assert back[1].tzinfo is None
    assert back == [aware, aware.replace(tzinfo=None)]


def test_decimal_precision_kept() -> None:
    _, data, back = roundtrip(decimal.Decimal("1.10"))
    assert str(back) == "1.10"
    assert json.loads(data) == {"__lil__": "decimal", "v": "1.10"}


def test_bytes_with_every_value() -> None:
    _, _, back = roundtrip(bytes(range(256)) * 3)
    assert back == bytes(range(256)) * 3


def test_set_encoding_is_deterministic_and_sorted() -> None:
    words = [f"w{i}" for i in range(200)]
    codec = Codec(None)
    grown = set(words) | {f"extra{i}" for i in range(5000)}
    grown -= {f"extra{i}" for i in range(5000)}  # same items, bigger table, other order
    assert grown == set(words) and list(grown) != list(set(words))
    first = codec.encode(set(words))
    second = codec.encode(grown)
    assert first == second
    assert json.loads(first[1])["v"] == sorted(words, key=json.dumps)


def test_path_keeps_its_class() -> None:
    _, data, back = roundtrip(pathlib.Path("/tmp/x"))
    assert type(back) is type(pathlib.Path("/tmp/x"))
    assert json.loads(data)["cls"] in ("PosixPath", "WindowsPath")


# --- class-referencing types -----------------------------------------------------------------

CLASSY = [
    Color.BLUE,
    Level.HIGH,
    Point(1, 2),
    Pair(3, "x"),
    User(name="ann", tags=["a"], joined=dt.datetime(2024, 1, 1, tzinfo=dt.UTC)),
    {"orders": [Order(1, ["a"])], "pairs": {(1, 2): Pair(1, "y")}, "at": {Color.RED}},
]


@pytest.mark.parametrize("value", CLASSY, ids=repr)
def test_class_types_roundtrip_as_liljc(value: object) -> None:
    name, data, back = roundtrip(value)
    assert name == CODEC_CLASS
    assert same(back, value)
    json.loads(data[32:])


def test_intenum_is_not_flattened_to_int() -> None:
    _, data, back = roundtrip([Level.LOW])
    assert isinstance(back, list) and back[0] is Level.LOW
    assert json.loads(data[32:])[0] == {
        "__lil__": "enum",
        "cls": f"{__name__}:Level",
        "v": 1,
    }


def test_dataclass_init_false_field_is_restored_not_recomputed() -> None:
    order = Order(7, ["a", "b"])
    order.total = 99.0
    _, _, back = roundtrip(order)
    assert isinstance(back, Order)
    assert (back.id, back.items, back.total) == (7, ["a", "b"], 99.0)


def test_frozen_dataclass() -> None:
    _, _, back = roundtrip(Point(3, 4))
    assert back == Point(3, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        back.x = 5  # type: ignore[misc]


def test_namedtuple_is_not_flattened_to_tuple() -> None:
    _, data, back = roundtrip(Pair(1, "a"))
    assert type(back) is Pair
    assert json.loads(data[32:])["__lil__"] == "namedtuple"


def test_pydantic_model() -> None:
    user = User(name="bo", tags=["x", "y"], joined=dt.datetime(2020, 5, 5, 5, 5, tzinfo=dt.UTC))
    _, data, back = roundtrip(user)
    assert type(back) is User and back == user
    assert json.loads(data[32:])["__lil__"] == "pydantic"


# --- pickle fallback -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [Plain(3), MyInt(5), collections.OrderedDict(a=1), [1, Plain(2)]], ids=repr
)
def test_other_objects_fall_back_to_pickle(value: object) -> None:
    name, data, back = roundtrip(value)
    assert name == CODEC_PICKLE
    assert same(back, value)
    assert data[32:] == pickle.dumps(value, protocol=5)


def test_codec_choice() -> None:
    codec = Codec(KEY)
    assert codec.encode({"a": 1})[0] == CODEC_JSON
    assert codec.encode(dt.datetime(2020, 1, 1))[0] == CODEC_TAGGED
    assert codec.encode(Point(1, 2))[0] == CODEC_CLASS
    assert codec.encode(Plain(1))[0] == CODEC_PICKLE


# --- unencodable values ----------------------------------------------------------------------


def _local_instance() -> object:
    class Local:
        pass

    return Local()


def _local_dataclass() -> object:
    @dataclasses.dataclass
    class LocalData:
        x: int

    return LocalData(1)


def _local_reducible() -> object:
    class Reducible:  # pickles fine (to a dict), but its class cannot be found by name
        def __reduce__(self) -> tuple[Any, ...]:
            return (dict, ())

    return Reducible()


def _generator() -> Iterator[int]:
    yield 1


@pytest.mark.parametrize(
    ("make", "type_name"),
    [
        (lambda: lambda: 1, "builtins.function"),
        (threading.Lock, "_thread.lock"),
        (_local_instance, "_local_instance.<locals>.Local"),
        (_local_dataclass, "_local_dataclass.<locals>.LocalData"),
        (_local_reducible, "_local_reducible.<locals>.Reducible"),
        (_generator, "builtins.generator"),
    ],
)
def test_unencodable_names_what_type_and_path(make: Callable[[], object], type_name: str) -> None:
    with pytest.raises(UnencodableError) as info:
        Codec(KEY).encode(
            {"items": [1, 2, 3, make()]},
            what="output of step 'fetch'",
            run_id="run-1",
            step="fetch",
            position=4,
        )
    err = info.value
    assert "output of step 'fetch'" in err.message
    assert 'value["items"][3]' in err.message
    assert type_name in err.message
    assert (err.run_id, err.step, err.position) == ("run-1", "fetch", 4)
    assert err.fix is not None and "dataclass" in err.fix and "module level" in err.fix


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_cycle_is_an_error_not_recursion(kind: str) -> None:
    value: Any = [] if kind == "list" else {}
    if kind == "list":
        value.append(value)
    else:
        value["self"] = value
    with pytest.raises(UnencodableError, match="cycle"):
        Codec(KEY).encode({"x": value})


def test_shared_references_are_not_cycles() -> None:
    shared = [1, 2]
    assert Codec(None).encode([shared, shared])[0] == CODEC_JSON


def test_deep_nesting_is_an_error() -> None:
    value: list[Any] = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(UnencodableError, match="nested too deeply"):
        Codec(KEY).encode(value)


def test_pickle_disabled() -> None:
    with pytest.raises(UnencodableError) as info:
        Codec(KEY, allow_pickle=False).encode([Plain(1)], step="s")
    assert "pickle is disabled" in info.value.message
    assert info.value.fix is not None and "allow_pickle=False" in info.value.fix
    assert "value[0]" in info.value.message and f"{__name__}.Plain" in info.value.message
    assert Codec(KEY, allow_pickle=False).encode(Point(1, 2))[0] == CODEC_CLASS


def test_class_values_need_a_key() -> None:
    with pytest.raises(UnencodableError) as info:
        Codec(None).encode({"p": Point(1, 2)})
    assert 'value["p"]' in info.value.message and "key" in info.value.message
    with pytest.raises(UnencodableError, match="key"):
        Codec(None).encode(Plain(1))


# --- decoding: authentication and malformed data ---------------------------------------------


@pytest.fixture
def no_unpickle_no_import(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def fail(name: str) -> Callable[..., Any]:
        def record(*args: object, **kwargs: object) -> Any:
            calls.append(name)
            raise AssertionError(f"{name} must not be called")

        return record

    monkeypatch.setattr(pickle, "loads", fail("pickle.loads"))
    monkeypatch.setattr(pickle, "Unpickler", fail("pickle.Unpickler"))
    monkeypatch.setattr(codec_module, "_unpickle", fail("_unpickle"))
    monkeypatch.setattr(importlib, "import_module", fail("import_module"))
    return calls


def test_a_pickle_naming_a_moved_module_loads_from_its_new_home() -> None:
    """Errors lived in ``letitloop.kernel._errors`` until 2026-12-07: a journal written then
    holds authenticated pickles that name it, and they still load, as the same class."""
    from letitloop.errors import InDoubtError

    raw = pickle.dumps(InDoubtError("m", fix="f", run_id="r"), protocol=0)  # names as text
    old = raw.replace(b"letitloop.errors", b"letitloop.kernel._errors")
    assert old != raw
    sealed = hmac.new(KEY, old, hashlib.sha256).digest() + old
    value = Codec(KEY).decode(CODEC_PICKLE, sealed)
    assert type(value) is InDoubtError and value.fix == "f" and value.run_id == "r"


@pytest.mark.parametrize("where", [0, 31, 32, -1])
def test_tampered_pickle_is_rejected_without_unpickling(
    where: int, no_unpickle_no_import: list[str]
) -> None:
    _, data = Codec(KEY).encode(Plain(1))
    forged = bytearray(data)
    forged[where] ^= 0x01
    with pytest.raises(TamperedDataError) as info:
        Codec(KEY).decode(CODEC_PICKLE, bytes(forged), what="output of step 'a'", step="a")
    err = info.value
    assert "failed authentication" in err.message and "output of step 'a'" in err.message
    assert "modified" in err.message and "another key" in err.message
    assert err.fix is not None and "Do not trust this journal" in err.fix
    assert "LIL_PICKLE_KEY" in err.fix and str(key_path("x").parent) in err.fix
    assert err.step == "a"
    assert no_unpickle_no_import == []


def test_blob_from_another_key_is_rejected(no_unpickle_no_import: list[str]) -> None:
    for value in (Plain(1), Point(1, 2)):
        name, data = Codec(OTHER_KEY).encode(value)
        with pytest.raises(TamperedDataError):
            Codec(KEY).decode(name, data)
    with pytest.raises(TamperedDataError):
        Codec(KEY).decode(CODEC_PICKLE, b"short")
    assert no_unpickle_no_import == []


def test_forged_class_blob_is_rejected_before_import(no_unpickle_no_import: list[str]) -> None:
    _, data = Codec(KEY).encode(Point(1, 2))
    body = json.loads(data[32:])
    body["cls"], body["v"] = "os:system", "echo pwned"
    forged = data[:32] + json.dumps(body).encode()
    with pytest.raises(TamperedDataError):
        Codec(KEY).decode(CODEC_CLASS, forged)
    assert no_unpickle_no_import == []


def test_class_tag_in_unauthenticated_lilj_is_refused(no_unpickle_no_import: list[str]) -> None:
    forged = json.dumps({"__lil__": "enum", "cls": "os:system", "v": "echo pwned"}).encode()
    with pytest.raises(CodecError, match="names a class"):
        Codec(KEY).decode(CODEC_TAGGED, forged)
    assert no_unpickle_no_import == []


def _signed(body: object, key: bytes = KEY) -> bytes:
    raw = json.dumps(body).encode()
    return hmac.new(key, raw, hashlib.sha256).digest() + raw


@pytest.mark.parametrize(
    ("tag", "ref"),
    [
        ("dataclass", "collections:OrderedDict"),
        ("enum", f"{__name__}:Point"),
        ("pydantic", f"{__name__}:Order"),
        ("namedtuple", "builtins:tuple"),
        ("enum", "collections:OrderedDict"),  # OrderedDict([]) would build fine
        ("enum", "builtins:str"),
        ("dataclass", "os:sep"),
        ("dataclass", "no_such_module_xyz:Thing"),
    ],
)
def test_signed_class_blob_must_name_the_claimed_kind(tag: str, ref: str) -> None:
    blob = _signed({"__lil__": tag, "cls": ref, "v": {} if tag != "enum" else []})
    with pytest.raises(CodecError) as info:
        Codec(KEY).decode(CODEC_CLASS, blob, run_id="r", step="s")
    assert not isinstance(info.value, TamperedDataError)
    assert (info.value.run_id, info.value.step) == ("r", "s")


def test_signed_class_blob_naming_a_local_class_is_refused_before_import(
    no_unpickle_no_import: list[str],
) -> None:
    ref = f"{__name__}:_local_dataclass.<locals>.LocalData"
    with pytest.raises(CodecError, match="not an importable class"):
        Codec(KEY).decode(CODEC_CLASS, _signed({"__lil__": "dataclass", "cls": ref, "v": {}}))
    assert no_unpickle_no_import == []


def test_signed_class_blob_with_unknown_dataclass_field() -> None:
    blob = _signed({"__lil__": "dataclass", "cls": f"{__name__}:Point", "v": {"x": 1, "z": 2}})
    with pytest.raises(CodecError, match="no field"):
        Codec(KEY).decode(CODEC_CLASS, blob)


@pytest.mark.parametrize("codec", [CODEC_CLASS, CODEC_PICKLE])
def test_decoding_authenticated_data_without_key(codec: str) -> None:
    value = Point(1, 2) if codec == CODEC_CLASS else Plain(1)
    name, data = Codec(KEY).encode(value)
    assert name == codec
    with pytest.raises(CodecError) as info:
        Codec(None).decode(codec, data)
    assert not isinstance(info.value, TamperedDataError)
    assert "key" in info.value.message
    assert info.value.fix is not None and str(key_path("x").parent) in info.value.fix


@pytest.mark.parametrize(
    ("codec", "data"),
    [
        (CODEC_JSON, b"{not json"),
        (CODEC_TAGGED, b'{"__lil__": "martian", "v": 1}'),
        (CODEC_TAGGED, b'{"__lil__": "bytes", "v": "***"}'),
        (CODEC_TAGGED, b'{"__lil__": "tuple"}'),
        ("zip", b"{}"),
    ],
)
def test_malformed_data_is_a_codec_error(codec: str, data: bytes) -> None:
    with pytest.raises(CodecError) as info:
        Codec(KEY).decode(codec, data, run_id="r")
    assert info.value.run_id == "r"


# --- preview ---------------------------------------------------------------------------------


def test_preview_json_is_pretty() -> None:
    _, data = Codec(KEY).encode({"a": [1, 2]})
    assert preview(CODEC_JSON, data) == json.dumps({"a": [1, 2]}, indent=2)


def test_preview_lilj_reads_like_python_not_the_envelope() -> None:
    _, data = Codec(KEY).encode((1, b"x"))
    assert preview(CODEC_TAGGED, data) == "(1, b'x')"


def test_preview_liljc_strips_the_mac(no_unpickle_no_import: list[str]) -> None:
    _, data = Codec(KEY).encode(Point(1, 2))
    assert preview(CODEC_CLASS, data) == "Point(x=1, y=2)"
    assert no_unpickle_no_import == []


def test_preview_pickle_does_not_unpickle(no_unpickle_no_import: list[str]) -> None:
    _, data = Codec(KEY).encode(Plain(1))
    assert preview(CODEC_PICKLE, data) == f"<pickled object, {len(data)} bytes>"
    assert no_unpickle_no_import == []


def test_preview_truncates() -> None:
    _, data = Codec(KEY).encode(list(range(1000)))
    shown = preview(CODEC_JSON, data, limit=100)
    assert shown == data.decode()[:100] + f"… ({len(data)} bytes)"


def test_preview_uses_compact_text_when_pretty_does_not_fit() -> None:
    _, data = Codec(KEY).encode({"a": [1, 2, 3]})
    assert preview(CODEC_JSON, data, limit=len(data)) == data.decode()


# --- fingerprint -----------------------------------------------------------------------------

FINGERPRINT_SCRIPT = textwrap.dedent(
    """
    import dataclasses, datetime, enum
    from letitloop.kernel._codec import Codec
    from letitloop.kernel._fingerprint import fingerprint

    class Client:
        pass

    @dataclasses.dataclass
    class Query:
        q: str
        tags: frozenset

    class Mode(enum.Enum):
        FAST = "fast"

    words = {f"w{i}" for i in range(50)}
    args = (1, "a", words, Query("x", frozenset(words)), Client(), {3: words, "k": 1.5})
    kwargs = {"z": Mode.FAST, "when": datetime.date(2020, 1, 1), "client": Client()}
    print(fingerprint(args, kwargs), Codec(None).encode(words)[1].hex())
    """
)


def test_fingerprint_is_stable_across_processes() -> None:
    outputs = {
        subprocess.run(
            [sys.executable, "-c", FINGERPRINT_SCRIPT],
            env=sub_env(PYTHONHASHSEED=seed),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outputs) == 1


def test_fingerprint_ignores_kwargs_order() -> None:
    assert fingerprint((1,), {"a": 1, "b": [2]}) == fingerprint((1,), {"b": [2], "a": 1})
    assert fingerprint((), {"d": {1: "x", 2: "y"}}) == fingerprint((), {"d": {2: "y", 1: "x"}})


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (((1,), {}), ((2,), {})),
        (((1,), {}), ((True,), {})),
        (((1.0,), {}), ((1,), {})),
        (((), {"a": 1}), ((), {"b": 1})),
        (((), {"a": [1, 2]}), ((), {"a": [2, 1]})),
        (((Point(1, 2),), {}), ((Point(1, 3),), {})),
        (((Color.RED,), {}), ((Color.BLUE,), {})),
        (((Plain(1),), {}), ((Point(1, 2),), {})),
        (((dt.date(2020, 1, 1),), {}), ((dt.date(2020, 1, 2),), {})),
        (((1, 2), {}), (((1, 2),), {})),
    ],
    ids=repr,
)
def test_fingerprint_differs_when_arguments_differ(one: Any, other: Any) -> None:
    assert fingerprint(*one) != fingerprint(*other)


def test_fingerprint_ignores_state_of_opaque_objects() -> None:
    assert fingerprint((Plain(1),), {"c": Plain(5)}) == fingerprint((Plain(2),), {"c": Plain(9)})
    assert fingerprint((threading.Lock(),), {}) == fingerprint((threading.Lock(),), {})


def test_fingerprint_never_raises() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    for args in [(cyclic,), (deep,), (lambda: 1, _generator(), _local_instance()), (10**5000,)]:
        digest = fingerprint(args, {"k": threading.Lock()})
        assert len(digest) == 32 and int(digest, 16) >= 0


# --- keys ------------------------------------------------------------------------------------


def test_key_path_locations(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIL_KEY_DIR", str(tmp_path / "keys"))
    assert key_path("j1") == tmp_path / "keys" / "j1.key"
    monkeypatch.delenv("LIL_KEY_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert key_path("j1") == tmp_path / "xdg" / "letitloop" / "keys" / "j1.key"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert key_path("j1") == tmp_path / "home" / ".config" / "letitloop" / "keys" / "j1.key"
    for bad in ("", "..", "a/b", "a\\b"):
        with pytest.raises(ConfigError):
            key_path(bad)


def test_key_file_created_private(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIL_PICKLE_KEY", raising=False)
    monkeypatch.setenv("LIL_KEY_DIR", str(tmp_path / "a" / "b"))
    key = load_or_create_key("journal")
    path = tmp_path / "a" / "b" / "journal.key"
    assert len(key) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a" / "b").stat().st_mode) == 0o700
    assert bytes.fromhex(path.read_text()) == key
    assert load_or_create_key("journal") == key
    assert load_or_create_key("other") != key
    assert sorted(p.name for p in path.parent.iterdir()) == ["journal.key", "other.key"]


def test_key_from_environment(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIL_KEY_DIR", str(tmp_path))
    monkeypatch.setenv("LIL_PICKLE_KEY", OTHER_KEY.hex())
    assert load_or_create_key("j") == OTHER_KEY
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("LIL_PICKLE_KEY", "not hex")
    with pytest.raises(ConfigError):
        load_or_create_key("j")


def test_corrupt_key_file_is_not_replaced(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIL_PICKLE_KEY", raising=False)
    monkeypatch.setenv("LIL_KEY_DIR", str(tmp_path))
    (tmp_path / "j.key").write_text("zz" * 32)
    with pytest.raises(ConfigError):
        load_or_create_key("j")
    assert (tmp_path / "j.key").read_text() == "zz" * 32


KEY_RACE_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from letitloop._keys import load_or_create_key
    start = float(sys.argv[1])
    while time.time() < start:
        pass
    print(load_or_create_key("raced").hex())
    """
)


def test_concurrent_key_creation_yields_one_key(tmp_path: pathlib.Path) -> None:
    env = sub_env(LIL_KEY_DIR=str(tmp_path / "keys"))
    env.pop("LIL_PICKLE_KEY", None)
    start = str(time.time() + 1.0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", KEY_RACE_SCRIPT, start],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    keys = {proc.communicate(timeout=30)[0].strip() for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    assert len(keys) == 1
    assert keys == {(tmp_path / "keys" / "raced.key").read_text()}
    assert [p.name for p in (tmp_path / "keys").iterdir()] == ["raced.key"]


def test_import_is_cheap() -> None:
    code = "import sys, letitloop.kernel._codec; print('pydantic' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=sub_env(), capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"
