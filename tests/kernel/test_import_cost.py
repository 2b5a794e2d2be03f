"""What ``from letitloop import durable, step`` and a fresh-process resume import: only what the
path to the first replayed step needs (issue #21: import <= 15 ms, fresh resume <= 25 ms over a
bare interpreter). Checked by the modules loaded, not by timing, so a regression fails here on
any machine; and the code-object binder that keeps ``inspect`` out is checked against it."""

from __future__ import annotations

import functools
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from letitloop.kernel._calls import bind_call, coroutine_code, is_async_function

ROOT = Path(__file__).resolve().parents[2]

# Never on the path to the first replayed step (each costs ms at import, or loads a front end).
HEAVY = [
    "typing",  # its records are collections.namedtuple, its annotations strings (_named)
    "duckdb",
    "asyncio",
    "dataclasses",
    "inspect",
    "dis",
    "logging",
    "concurrent.futures",
    "queue",
    "random",
    "base64",
    "signal",
    "uuid",
    "hashlib",  # and OpenSSL under it: the kernel's digests are the interpreter's own
    "hmac",
    "threading",
    "letitloop.kernel._fanout",
    "letitloop.kernel._limits",
    "letitloop.journal._limits",
    "letitloop.journal._preview",
    "letitloop.journal._checkpoints",  # a graph's, not a workflow's
    "letitloop.journal._approvals",
    "textual",
    "rich",
    "click",
    "libcst",
    "psycopg",
    "dask",
    "distributed",
    "IPython",
    "opentelemetry",
    "pygls",
]
# Not at import, though a resume needs them: the client and its wire (msgpack brings datetime),
# and what journaling a failed step takes (its traceback, the pickled exception).
NOT_AT_IMPORT = ["msgpack", "socket", "letitloop.journal.duckdb._client", "datetime"]
NOT_AT_IMPORT += ["traceback", "ast", "pickle"]  # ast: the traceback's carets (3.11+)

RESUME = """\
import sys
from letitloop import durable, step

ran = []

def produce(i):
    ran.append(i)
    if i >= 20:
        raise RuntimeError("the last step fails on every attempt")
    return "0123456789abcdefghij"

@durable(journal=sys.argv[1], run_id="resume", name="imports.resume")
def wf():
    for i in range(21):
        step(f"s{i}", produce, i)

try:
    wf()
except RuntimeError:
    pass
"""


def _loaded(code: str, *args: str, cwd: Path = ROOT) -> tuple[set[str], str]:
    """The modules a fresh interpreter holds after running ``code`` (listed before anything
    else is imported to print them), and what ``code`` printed before."""
    probe = (
        f"{code}\nimport sys as _s\n_m = sorted(_s.modules)\nimport json as _j\nprint(_j.dumps(_m))"
    )
    env = {
        "PYTHONPATH": str(ROOT),
        "PATH": "/usr/bin:/bin",
        "LIL_KEY_DIR": os.environ["LIL_KEY_DIR"],
        "LIL_OWNER_IDLE": "60",
    }
    out = subprocess.run(
        [sys.executable, "-c", probe, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env=env,
        timeout=120,
    ).stdout.splitlines()
    return set(json.loads(out[-1])), "\n".join(out[:-1])


def test_importing_durable_and_step_loads_only_the_kernel() -> None:
    loaded, _ = _loaded("from letitloop import durable, step")
    assert not [m for m in HEAVY + NOT_AT_IMPORT if m in loaded]
    assert "letitloop.kernel._runtime" in loaded  # the probe did import what it claims


def test_a_fresh_process_resume_imports_no_duckdb(journal_path: Path, tmp_path: Path) -> None:
    """The first run starts the owner; the second process replays its steps through the
    owner's socket and never imports DuckDB (nor the rest of the heavy list)."""
    script = tmp_path / "resume.py"
    script.write_text(RESUME + "print(len(ran))\n")
    _loaded(f"exec(open({str(script)!r}).read())", str(journal_path), cwd=tmp_path)
    loaded, printed = _loaded(
        f"exec(open({str(script)!r}).read())", str(journal_path), cwd=tmp_path
    )
    assert printed == "1"  # 20 steps replayed, only the failing one ran again
    assert "letitloop.journal.duckdb._client" in loaded  # it did go through the owner
    assert not [m for m in HEAVY if m in loaded]


def test_step_map_still_reaches_the_fan_out() -> None:
    from letitloop import async_step, step

    assert "step.map" in (step.map.__doc__ or "")  # type: ignore[attr-defined]
    assert async_step.map.__doc__  # type: ignore[attr-defined]


# -- the binder against inspect -------------------------------------------------------------


def plain(a, b=2, c="x"):  # type: ignore[no-untyped-def]
    return a


def no_params():  # type: ignore[no-untyped-def]
    return 1


def star(a, *rest, **kw):  # type: ignore[no-untyped-def]
    return a


def kwonly(a, *, b=1):  # type: ignore[no-untyped-def]
    return a


def posonly(a, /, b=1):  # type: ignore[no-untyped-def]
    return a


@functools.wraps(plain)
def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
    return plain(*args, **kwargs)


def signed(a, b):  # type: ignore[no-untyped-def]
    return a


signed.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter("z", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
)


class Callable_:
    def __call__(self, a, b=3):  # type: ignore[no-untyped-def]
        return a

    def method(self, a, b=4):  # type: ignore[no-untyped-def]
        return a


CASES: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = [
    (plain, (1,), {}),
    (plain, (1, 5), {}),
    (plain, (1,), {"c": "y"}),
    (plain, (), {"a": 1, "b": 9}),
    (plain, (1, 2, 3), {}),
    (plain, (1, 2, 3, 4), {}),  # too many
    (plain, (), {}),  # missing
    (plain, (1,), {"a": 2}),  # twice
    (plain, (1,), {"nope": 2}),  # unknown
    (no_params, (), {}),
    (no_params, (1,), {}),
    (star, (1, 2, 3), {"k": 4}),
    (kwonly, (1,), {"b": 2}),
    (kwonly, (1, 2), {}),
    (posonly, (1,), {"b": 3}),
    (posonly, (), {"a": 1}),
    (wrapped, (1,), {"b": 7}),
    (signed, (), {"z": 1}),
    (signed, (1, 2), {}),
    (Callable_(), (1,), {}),
    (Callable_().method, (1,), {"b": 5}),
    (functools.partial(plain, 1), (), {"c": "p"}),
    (lambda x, y=[1]: x, (0,), {}),
]


def _inspect_bind(fn: Any, args: Any, kwargs: Any) -> Any:
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments), bound.args, bound.kwargs


@pytest.mark.parametrize(("fn", "args", "kwargs"), CASES)
def test_binding_matches_inspect(fn: Any, args: Any, kwargs: Any) -> None:
    try:
        expected = _inspect_bind(fn, args, kwargs)
    except TypeError as exc:
        with pytest.raises(TypeError) as got:
            bind_call(fn, args, kwargs)
        assert str(got.value) == str(exc)
        return
    got_ = bind_call(fn, args, kwargs)
    assert got_ == expected
    assert list(got_[0]) == list(expected[0])  # the parameter order, which run_id= fills from


def test_async_detection_matches_inspect() -> None:
    async def coro() -> None: ...

    def sync() -> None: ...

    class Obj:
        async def m(self) -> None: ...

        def __call__(self) -> None: ...

    for fn in (coro, sync, Obj().m, Obj(), functools.partial(coro), print, len, lambda: 1):
        assert is_async_function(fn) == inspect.iscoroutinefunction(fn), fn
        verdict = coroutine_code(fn)  # what decides while inspect is not imported
        assert verdict in (None, inspect.iscoroutinefunction(fn)), fn
    assert coroutine_code(coro) is True and coroutine_code(Obj().m) is True
    assert coroutine_code(sync) is False and coroutine_code(Obj()) is None


# -- @frozen against @dataclass(frozen=True) -------------------------------------------------


def test_frozen_options_behave_as_frozen_dataclasses() -> None:
    import copy
    import dataclasses
    import pickle

    from letitloop import Budget, DurableOptions, Retry, StepOptions
    from letitloop.kernel._frozen import FrozenInstanceError, fields, replace

    @dataclasses.dataclass(frozen=True)
    class Twin:  # Retry's fields, declared the standard way
        attempts: int = 3
        backoff: float = 1.0
        multiplier: float = 2.0
        max_backoff: float = 60.0
        jitter: bool = True
        retry_on: tuple[type[BaseException], ...] = ()
        classify: Callable[[BaseException], str | None] | None = None

    ours, twin = Retry(5, backoff=0.5), Twin(5, backoff=0.5)
    assert repr(ours).removeprefix("Retry") == repr(twin).removeprefix(
        "test_frozen_options_behave_as_frozen_dataclasses.<locals>.Twin"
    )
    assert str(inspect.signature(Retry)) == str(inspect.signature(Twin))
    assert fields(Retry) == tuple(f.name for f in dataclasses.fields(Twin))
    assert ours == Retry(5, backoff=0.5) and ours != Retry(5) and ours != twin
    assert hash(ours) == hash(Retry(5, backoff=0.5))
    assert pickle.loads(pickle.dumps(ours)) == ours and copy.deepcopy(ours) == ours
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'attempts'"):
        ours.attempts = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del ours.backoff  # type: ignore[misc]
    assert replace(ours, attempts=2) == Retry(2, backoff=0.5)
    with pytest.raises(TypeError, match="no field"):
        replace(ours, tries=2)
    with pytest.raises(TypeError, match="unexpected keyword"):
        Retry(tries=2)  # type: ignore[call-arg]
    from letitloop.errors import ConfigError

    with pytest.raises(ConfigError):  # __post_init__ validates, on replace too
        replace(ours, attempts=0)
    assert Budget(usd=1.5).usd_micros == 1_500_000
    assert StepOptions().merged(StepOptions(timeout=3)).timeout == 3
    assert DurableOptions.build(goal_id="g").run_id == "g"
    assert not [m for m in ("dataclasses",) if m in _loaded("import letitloop.kernel._options")[0]]


def test_built_in_digests_match_hashlib_and_hmac() -> None:
    import hashlib
    import hmac

    from letitloop import _digest

    for n in (0, 1, 31, 32, 63, 64, 65, 127, 200):
        key, msg = os.urandom(n), os.urandom(n * 7 + 3)
        assert _digest.hmac_sha256(key, msg) == hmac.new(key, msg, hashlib.sha256).digest()
        assert _digest.sha256(msg).digest() == hashlib.sha256(msg).digest()
        want = hashlib.blake2b(msg, digest_size=16).hexdigest()
        assert _digest.blake2b(msg, digest_size=16).hexdigest() == want
    mac = _digest.hmac_sha256(b"k", b"m")
    assert _digest.compare_digest(mac, bytes(mac)) and not _digest.compare_digest(mac, b"x" * 32)
