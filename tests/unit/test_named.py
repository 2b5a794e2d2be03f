"""``letitloop._named``: a class body declared as a ``typing.NamedTuple`` becomes, at run time,
the same tuple type made by ``collections.namedtuple`` (so the runtime never imports typing)."""

from __future__ import annotations

import pickle
from typing import NamedTuple

import pytest

from letitloop._named import named_tuple
from letitloop.journal import _contract
from letitloop.journal._values import RunState, StepRecord
from letitloop.kernel._context import StepInfo


class Typed(NamedTuple):
    """A point with a label."""

    x: int
    y: int = 2
    label: str | None = None

    @property
    def total(self) -> int:
        return self.x + self.y

    def moved(self, dx: int) -> Typed:
        return self._replace(x=self.x + dx)


class Body:  # the same body, as a plain class (what the runtime sees)
    """A point with a label."""

    x: int
    y: int = 2
    label: str | None = None

    @property
    def total(self) -> int:
        return self.x + self.y  # type: ignore[no-any-return]

    def moved(self, dx: int) -> Body:
        return self._replace(x=self.x + dx)  # type: ignore[attr-defined,no-any-return]


Point = named_tuple(Body)


def test_the_same_tuple_type_as_typing_makes() -> None:
    assert Point._fields == Typed._fields == ("x", "y", "label")
    assert Point._field_defaults == Typed._field_defaults == {"y": 2, "label": None}
    assert Point.__doc__ == Typed.__doc__
    assert Point.__annotations__ == {"x": "int", "y": "int", "label": "str | None"}
    p, t = Point(1), Typed(1)
    assert p == t == (1, 2, None) and repr(p) == "Body(x=1, y=2, label=None)"
    assert p.total == t.total == 3 and p.moved(4) == t.moved(4) == (5, 2, None)
    assert Point._make([7, 8, "a"]).label == "a" and Point(1, label="b")._asdict()["label"] == "b"
    with pytest.raises(TypeError):
        Point()  # x has no default
    with pytest.raises(AttributeError):
        p.x = 3  # type: ignore[misc]


def test_the_journal_records_are_named_tuples_that_pickle() -> None:
    assert StepRecord.__module__ == "letitloop.journal._values"
    assert _contract.StepRecord is StepRecord  # (a pickle naming the contract's still loads)
    assert StepRecord._fields[:6] == (
        "position",
        "attempt",
        "kind",
        "name",
        "fingerprint",
        "status",
    )
    assert StepRecord._field_defaults["big"] is False
    rec = StepRecord(3, 1, "step", "s", "fp", "completed", "json", b'"x"')
    assert (
        pickle.loads(pickle.dumps(rec)) == rec
        and type(pickle.loads(pickle.dumps(rec))) is StepRecord
    )
    old = pickle.dumps(rec, protocol=0).replace(b"journal._values", b"journal._contract")
    assert b"_contract" in old and pickle.loads(old) == rec
    assert RunState._field_defaults == {
        "cost_micros": 0,
        "tokens": 0,
        "budget": None,
        "args": None,
        "forked": False,
    }
    assert StepInfo("r", "s", 0, 1, "step", "lil-k").feedback is None


def test_records_a_workflow_does_not_use_are_made_when_first_asked_for() -> None:
    """A fresh interpreter that imports the runtime makes StepRecord and RunState only; the
    others appear, once, when first named (through the contract or the face too)."""
    import subprocess
    import sys

    code = (
        "from letitloop import durable, step\n"
        "from letitloop.journal import _values as v\n"
        "print(sorted(n for n in v.RECORDS if n in vars(v)))\n"
        "from letitloop.journal._contract import RunInfo\n"
        "from letitloop.journal import RunInfo as face\n"
        "print(RunInfo is face is v.RunInfo, 'RunInfo' in vars(v))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:2] == ["['RunState', 'StepRecord']", "True True"]
