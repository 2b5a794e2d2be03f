"""Point 12 of issue 14: a LangGraph checkpoint in the journal is data, never code.

Before the fix, a checkpoint rewritten in the DuckDB file (by anyone who can write it) went
straight to ``serde.loads_typed``, and LangGraph's permissive default rebuilt any named
callable: a msgpack extension naming ``os.system`` ran a shell command on the next
``get_state``. Now every stored value carries an HMAC under the journal's key, checked before
any of it reaches the serializer: only values this saver wrote are decoded, and those are
rebuilt as LangGraph's own savers rebuild them (issue 35, point 14: the strict default that
stood here also turned a user's ``AgentAction`` or pydantic state into plain dicts; see
``tests/adapters/test_langgraph_types.py``). Real owner, real DuckDB file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import ormsgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
from letitloop.errors import TamperedDataError
from letitloop.journal.duckdb._client import stop_owner
from tests.adapters.lg_pipeline import build

EXT_CONSTRUCTOR_SINGLE_ARG = 0  # langgraph.checkpoint.serde.jsonplus: module, name, argument


def _exploit(pwned: Path) -> bytes:
    return ormsgpack.packb(
        ormsgpack.Ext(
            EXT_CONSTRUCTOR_SINGLE_ARG, ormsgpack.packb(("os", "system", f"touch {pwned}"))
        )
    )


def _graph(journal_path: Path, tmp_path: Path) -> tuple[Any, dict[str, Any]]:
    saver = LetItLoopCheckpointSaver(journal_path, graph="pipeline")
    app = build(saver, tmp_path / "log")
    config = {"configurable": {"thread_id": "t1"}}
    app.invoke({"items": []}, config)  # runs to the review interrupt
    return app, config


@pytest.mark.parametrize("ctype", ["msgpack", "lil-hmac1:msgpack"], ids=["plain", "forged-mac"])
def test_a_tampered_checkpoint_is_refused_before_it_is_decoded(
    journal_path: Path, tmp_path: Path, ctype: str
) -> None:
    app, config = _graph(journal_path, tmp_path)
    assert app.get_state(config).values["items"]
    stop_owner(journal_path)
    pwned = tmp_path / "pwned"
    blob = _exploit(pwned) if ctype == "msgpack" else b"\0" * 32 + _exploit(pwned)
    db = duckdb.connect(str(journal_path))
    db.execute("UPDATE lg_checkpoints SET ctype = ?, checkpoint = ?", [ctype, blob])
    db.close()

    serde = _Spy()
    app2 = build(
        LetItLoopCheckpointSaver(journal_path, graph="pipeline", serde=serde), tmp_path / "log"
    )
    with pytest.raises(TamperedDataError, match="failed authentication"):
        app2.get_state(config)
    assert not pwned.exists(), "the tampered checkpoint ran a shell command"
    assert serde.decoded == [], "a value that failed authentication reached the serializer"


class _Spy(JsonPlusSerializer):
    """LangGraph's default serializer, noting the type of every value it is asked to decode."""

    def __init__(self) -> None:
        super().__init__()
        self.decoded: list[str] = []

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self.decoded.append(data[0])
        return super().loads_typed(data)


def test_the_exploit_runs_when_handed_to_the_serializer_directly(tmp_path: Path) -> None:
    """The blob above is a real exploit of LangGraph's default serializer (what the MAC
    stands in front of): handed to it directly, it runs the command."""
    pwned = tmp_path / "pwned"
    _Spy().loads_typed(("msgpack", _exploit(pwned)))
    assert pwned.exists()


def test_untampered_threads_still_resume(journal_path: Path, tmp_path: Path) -> None:
    from langgraph.types import Command

    app, config = _graph(journal_path, tmp_path)
    stop_owner(journal_path)
    app = build(LetItLoopCheckpointSaver(journal_path, graph="pipeline"), tmp_path / "log")
    out = app.invoke(Command(resume="yes"), config)
    assert out["published"] is True
