"""Point 5: previews show values as a person reads them, on both journals."""

from __future__ import annotations

import datetime as dt
from typing import Any

from letitloop import durable, step
from letitloop.journal import preview, short_repr
from letitloop.kernel._codec import Codec
from letitloop.operate import human_times, local_time
from tests.firsthour.models import Opaque, Response, Usage
from tests.helpers import invoke_lil, ok

CODEC = Codec(b"k" * 32)


def shown(value: object) -> str:
    codec, data = CODEC.encode(value)
    return preview(codec, data, shown=short_repr(value) if codec == "pickle" else None)


def test_tagged_values_read_like_python_not_the_codec_envelope() -> None:
    assert (
        shown(Response("hi", Usage(3, 5))) == 'Response(text="hi", usage=Usage(input=3, output=5))'
    )
    assert shown((1,)) == "(1,)" and shown((1, "a")) == '(1, "a")'
    assert shown({2, 1}) == "{1, 2}" and shown(set()) == "set()"
    assert shown({1: "a"}) == '{1: "a"}'
    assert shown(dt.datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02 03:04:05"
    assert shown(b"\x00ab") == "b'\\x00ab'"
    assert shown(Opaque("s3cret")) == "Opaque(token='s3cret')"
    for value in (Response("hi", Usage(1, 2)), (1,), {1}, dt.date(2026, 1, 1)):
        assert "__lil__" not in shown(value)


def test_long_values_are_cut_with_their_size() -> None:
    text = shown([Response("x" * 5000, Usage(1, 1))])
    assert len(text) < 2100 and text.startswith('[Response(text="xxx') and "bytes)" in text


def test_pickled_repr_is_taken_when_written_even_if_the_object_changes(any_journal: Any) -> None:
    thing = Opaque("before")

    @durable(journal=any_journal, name="pv")
    def flow() -> str:
        step("make", lambda: thing)
        step("reply", lambda: Response("hello", Usage(3, 5)))
        return "ok"

    flow()
    thing.token = "after"  # the live object changed: the journal shows what was written
    run = any_journal.list_runs(workflow="pv")[0]
    attempts = any_journal.get_run(run.run_id).attempts
    previews = {a.name: a.preview for a in attempts}
    assert previews["make"] == "Opaque(token='before')"
    assert previews["reply"] == 'Response(text="hello", usage=Usage(input=3, output=5))'


def test_times_are_local_and_human() -> None:
    ts = dt.datetime(2026, 3, 4, 5, 6, 7).timestamp()
    assert local_time(ts) == "2026-03-04 05:06:07"
    assert local_time(None) == "-"
    assert human_times({"by": "ana", "at": ts, "n": 3}) == {
        "by": "ana",
        "at": "2026-03-04 05:06:07",
        "n": 3,
    }


def test_a_pickled_run_result_shows_its_repr_from_when_it_was_written(any_journal: Any) -> None:
    thing = Opaque("first")

    @durable(journal=any_journal, name="res", run_id="r1")
    def flow() -> Opaque:
        return thing

    flow()
    thing.token = "changed later"
    detail = any_journal.get_run("res:r1")
    assert detail.result is not None and detail.result[0] == "pickle"
    assert detail.result_shown == "Opaque(token='first')"


def test_cli_shows_results_and_times_as_people_read_them(journal_path: Any) -> None:
    import re
    import time

    from letitloop import ApprovalPending, approval
    from letitloop.journal.duckdb._client import open_journal

    journal = open_journal(journal_path)

    @durable(journal=journal, name="res", run_id="r1")
    def flow() -> Any:
        step("reply", lambda: Response("hello", Usage(3, 5)))
        approval("publish", {"n": 1}, wait=False)
        return Opaque("first")

    try:
        flow()
    except ApprovalPending as waiting:
        journal.decide_approval(waiting.approval_id, approved=True, by="ana")
    flow()
    shown = ok(invoke_lil("runs", "show", "r1", journal=journal_path))
    assert "Opaque(token='first')" in shown and "pickled object" not in shown
    assert 'Response(text="hello", usage=Usage(input=3, output=5))' in shown
    assert "__lil__" not in shown
    stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
    approvals = ok(invoke_lil("approvals", "list", "--all", journal=journal_path))
    assert len(stamp.findall(approvals)) >= 2 and "ana" in approvals  # asked, decided
    time.sleep(0.1)  # the fold
    sql = ok(
        invoke_lil("journal", "sql", "SELECT created, updated FROM runs", journal=journal_path)
    )
    assert len(stamp.findall(sql)) == 2 and not re.search(r"\d{10}\.\d", sql)
    view = ok(invoke_lil("journal", "sql", "SELECT created FROM v_runs", journal=journal_path))
    assert len(stamp.findall(view)) == 1
    rows = journal.sql("SELECT typeof(created) FROM v_runs")["rows"]  # type: ignore[attr-defined]
    assert rows == [["TIMESTAMP WITH TIME ZONE"]]
    schema = ok(invoke_lil("journal", "schema", journal=journal_path))
    assert "v_runs (view)" in schema and "v_steps (view)" in schema
