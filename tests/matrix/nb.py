"""The notebook widgets' model as a surface (in process, on any backend): ``runs()`` and its
text table, ``RunInspector`` (its header's summary, its step rows, which rows say "in doubt"),
``EffectsInDoubt`` and ``ApprovalWidget``; and the actions their buttons take (approve, reject,
retry a dead letter, fork from an opened step, resolve a side effect), journaled as the kernel's
user. A notebook resumes a run by running its cell again (a cancelled run's call is refused with
operate's cause), and has no control to cancel, reset, budget a run or decide a splice: those are
not offered here."""

from __future__ import annotations

import html
import re
from typing import Any

from tests.matrix.build import Scenario
from tests.matrix.reading import Reading

ROW = re.compile(
    r"^(?P<run>\S+)\s+(?P<status>[a-z]+)\s+(?P<steps>\d+/\d+) steps\s+"
    r"(?P<duration>-|\d+ms|\d+\.\d[smh])\s+(?P<cost>\$[\d,.]+)\s+"
)


def read(journal: Any, truth_ids: list[str]) -> Reading:
    """What the widgets show of every run, side effect in doubt and approval waiting."""
    from letitloop import operate
    from letitloop.notebook_ext import ApprovalWidget, EffectsInDoubt, RunInspector, runs

    listed = runs(journal=journal, limit=1 << 30)
    table = {}
    for line in listed.text().splitlines():
        m = ROW.match(line)
        assert m is not None, f"a line of runs() that does not parse: {line!r}"
        table[m["run"]] = {k: m[k] for k in ("status", "steps", "duration", "cost")}
    views, in_doubt = {}, {}
    for run_id in truth_ids:
        inspector = RunInspector(run_id, journal=journal)
        try:
            views[run_id] = {
                "run": operate.run_json(inspector.summary),
                "steps": [operate.step_json(s) for s in inspector.steps],
            }
            rows = [html.unescape(str(row.children[1].value)) for row in inspector.rows.children]
            in_doubt[run_id] = [i for i, row in enumerate(rows) if "(in doubt)" in row]
        finally:
            inspector.close()
    panel = EffectsInDoubt(journal=journal)
    widgets = [ApprovalWidget(a.id, journal=journal) for a in _pending(journal)]
    try:
        approvals = [operate.approval_json(w.row) for w in widgets]
        waiting = sorted(w.status.value for w in widgets)
    finally:
        for w in widgets:
            w._sub.close()
    return Reading(
        runs=[operate.run_json(r) for r in listed],
        views=views,
        view_parts=("run", "steps"),
        doubts=[operate.doubt_json(d) for d in panel.doubtful()],
        approvals=approvals,
        table=table,
        texts={
            "the inspector's rows in doubt": in_doubt,
            "approval widgets' status": waiting,
        },
    )


def expected_texts(truth: Any, truth_ids: list[str]) -> dict[str, Any]:
    doubted: dict[str, list[int]] = {r: [] for r in truth_ids}
    for d in truth.doubts:
        positions = [s["position"] for s in truth.views[d["run_id"]]["steps"]]
        doubted[d["run_id"]].append(positions.index(d["position"]))
    return {
        "the inspector's rows in doubt": doubted,
        "approval widgets' status": ["<i>waiting for a decision</i>"] * len(truth.approvals),
    }


def call_again_refused(s: Scenario) -> str:
    """A notebook resumes a run by running its cell again: the cancelled run's workflow, called
    again in this process on the journal (the scenario's ``flows.halted``, bound to it), is
    refused with operate's cause and journals no new attempt; what the kernel raised."""
    import importlib.util

    from letitloop import durable
    from letitloop.errors import LetItLoopError
    from tests.matrix.acts import CANCELLED, refusal

    spec = importlib.util.spec_from_file_location(
        f"matrix_flows_{s.backend}", s.project / "flows.py"
    )
    assert spec is not None and spec.loader is not None
    flows = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flows)
    cell = durable(name="flows.halted", run_id="g", journal=s.journal)(flows.halted.__wrapped__)
    before = s.journal.get_run(CANCELLED)
    try:
        cell()
    except LetItLoopError as exc:
        assert (exc.message, exc.fix) == refusal(s.journal), exc
        said = f"error: {exc.message}\n  fix: {exc.fix}"
    else:
        raise AssertionError(f"the notebook ran {CANCELLED} again, a cancelled run")
    after = s.journal.get_run(CANCELLED)
    assert (after.run.status, len(after.attempts)) == ("cancelled", len(before.attempts)), after
    return said


def _pending(journal: Any) -> list[Any]:
    return list(journal.approvals(status="pending", limit=1 << 30))


def acts(s: Scenario) -> dict[str, str]:
    """The widgets' buttons, as a person clicks them (journaled as ``who()``); what each says."""
    from letitloop.journal import who
    from letitloop.notebook_ext import ApprovalWidget, EffectsInDoubt, RetryWidget, RunInspector
    from tests.matrix.acts import COMPLETED, Targets, expect, normal

    j, t, by = s.journal, Targets("nb"), who()
    said: dict[str, str] = {}
    for action, run_id, approved in (("approve", t.approve, True), ("reject", t.reject, False)):
        widget = ApprovalWidget(t.approval(j, run_id), journal=j)
        widget.decide(approved)
        assert widget.finished and widget.approve.disabled, widget.status.value
        said[action] = html.unescape(re.sub("<[^>]+>", "", widget.status.value))
    retry = RetryWidget(t.dead, journal=j, position=0)
    retry.click()
    said["retry"] = html.unescape(re.sub("<[^>]+>", "", retry.status.value))
    inspector = RunInspector(COMPLETED, journal=j)
    try:
        inspector.show_step(1)
        fork = inspector.fork()
        said["fork"] = html.unescape(inspector.fork_note.value).strip().split("; run it with")[0]
    finally:
        inspector.close()
    panel = EffectsInDoubt(journal=j)
    [doubt] = [d for d in panel.doubtful() if d.run_id == t.effect]
    panel.resolve(doubt.run_id, doubt.position, "done")
    said["resolve"] = html.unescape(panel.status.value)
    assert t.effect not in {d.run_id for d in panel.doubtful()}
    said["refused resume"] = call_again_refused(s)
    expect(s, "nb", by, {"approve", "reject", "retry", "resolve", "fork"}, fork=fork.run_id)
    label = fork.run_id.rsplit("~", 1)[1]  # the inspector names its forks itself
    said["fork"] = said["fork"].replace(f"~{label}", "~nb")
    return {a: normal(s, text, "nb", by) for a, text in said.items()}
