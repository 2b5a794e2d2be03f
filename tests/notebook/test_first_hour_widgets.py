"""Issue 15's widget points driven in-process (``Button.click()``) on a real journal and owner:
Retry under a dead-lettered cell (7), ``RunInspector()`` of the last cell with steps that open
(8), the payload editor and ``EffectsInDoubt`` asking first, with a comment (10, 12)."""

from __future__ import annotations

from typing import Any

import pytest

from letitloop import DeadLetteredError, atomic_marker, durable, open_journal
from letitloop.notebook_ext import EffectsInDoubt, RetryWidget, RunInspector

FLAKY = """
class RateLimitError(Exception):
    pass
def call_model():
    calls.append("ask")
    if limited[0]:
        raise RateLimitError("429: slow down")
    return "the answer"
answer = step("ask", call_model, retry=Retry(attempts=2, backoff=0, jitter=False))
"""


@pytest.fixture
def displayed(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the magic displays (a terminal shell would only print the reprs)."""
    import IPython.display

    shown: list[Any] = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **_kw: shown.extend(objs))
    return shown


def test_retry_under_a_dead_lettered_cell_rearms_the_step_and_runs_the_cell(
    cells: Any, shell: Any, displayed: list[Any]
) -> None:
    shell.user_ns["limited"] = [True]
    failed = cells.run("flaky", FLAKY)
    exc = failed.error_in_exec
    assert isinstance(exc, DeadLetteredError)
    rendered = "\n".join(exc._render_traceback_())  # what IPython shows for the cell
    assert "RateLimitError: 429: slow down" in rendered and "letitloop/" not in rendered
    (retry,) = [w for w in displayed if isinstance(w, RetryWidget)]
    assert retry.retry.description == "Retry" and "re-arms the step" in retry.status.value
    assert cells.calls == ["ask", "ask"]  # two attempts, then dead-lettered
    shell.user_ns["limited"][0] = False  # the rate limit is over
    retry.retry.click()
    assert cells.calls == ["ask", "ask", "ask"]  # a fresh attempt budget, one call
    assert shell.user_ns["answer"] == "the answer"
    assert "run completed" in retry.status.value and retry.retry.disabled
    journal = open_journal(cells.journal_path)
    assert journal.get_run(retry.run_id).run.status == "completed"
    kept = "".join(o.get("text", "") for o in retry.output.outputs)
    assert "flaky: 1/1 steps" in kept  # the retried cell's output, kept in the widget


def test_retry_after_a_plain_failure_runs_the_cell_again(
    cells: Any, shell: Any, displayed: list[Any]
) -> None:
    shell.user_ns["broken"] = [True]
    code = (
        "def parse():\n    calls.append('parse')\n"
        "    if broken[0]:\n        raise ValueError('bad row')\n    return 7\n"
        "n = step('parse', parse)\n"
    )
    failed = cells.run("parse_rows", code)
    assert isinstance(failed.error_in_exec, ValueError)
    (retry,) = [w for w in displayed if isinstance(w, RetryWidget)]
    retry.retry.click()  # still broken: the error is shown in the widget, the button stays
    assert not retry.retry.disabled and "failed again" in retry.status.value
    errors = [o for o in retry.output.outputs if o["output_type"] == "error"]
    assert errors and errors[0]["ename"] == "ValueError"
    shell.user_ns["broken"][0] = False
    retry.retry.click()
    assert shell.user_ns["n"] == 7 and "run completed" in retry.status.value


INSPECTED = """
big = step("big", lambda: "x" * 5000 + "END")
def flaky():
    calls.append("flaky")
    if len(calls) == 1:
        raise TimeoutError("upstream timed out")
    return 1
one = step("flaky", flaky, retry=Retry(attempts=3, backoff=0, jitter=False))
decision = approval("ship", dict(n=one))
tail = step("{tail}", lambda: 2)
"""


def test_run_inspector_of_the_last_cell_opens_steps(cells: Any, shell: Any) -> None:
    widget = cells.run("report", INSPECTED.format(tail="tail")).result
    journal = open_journal(cells.journal_path)
    journal.decide_approval(widget.row.id, approved=True, by="ana@lab", comment="looks right")
    widget._refresh()  # the pushed event's work: the run continues
    edited = cells.run("report", INSPECTED.format(tail="tail2"))  # edit the last step
    assert edited.success

    inspector = RunInspector()  # no argument: the notebook's last durable cell
    assert inspector.run_id == widget.row.run_id
    names = [row.children[0].description for row in inspector.rows.children]
    assert names == ["0 big", "1 flaky", "2 ship", "3 tail2"]
    ship = inspector.rows.children[2].children[1].value
    assert "approved by ana@lab at " in ship and "looks right" in ship  # who and when
    assert "superseded" in inspector.superseded.value and "tail" in inspector.superseded.value
    assert "tail2" not in inspector.superseded.value  # set apart from the current attempts

    inspector.rows.children[0].children[0].click()  # open "big" from its row
    assert "END" in inspector.detail.value and inspector.detail.value.count("x") >= 5000
    inspector.rows.children[1].children[0].click()  # "flaky": two attempts, one traceback
    detail = inspector.detail.value
    assert "TimeoutError: upstream timed out" in detail and "traceback of attempt 1" in detail
    assert 'raise TimeoutError("upstream timed out")' in detail.replace("&quot;", '"')
    assert "letitloop/kernel" not in detail  # the user's frames, not the runtime's
    inspector.close()
    key = widget.row.run_id.split(":", 1)[1]
    by_prefix = RunInspector(key[:12], journal=journal)  # a prefix of the run's key
    assert by_prefix.run_id == widget.row.run_id
    by_prefix.close()


def test_run_inspector_without_a_cell_says_what_to_do(journal_path: Any) -> None:
    from letitloop.errors import ConfigError
    from letitloop.notebook_ext import _cell

    _cell._LAST.clear()
    with pytest.raises(ConfigError, match=r"RunInspector\('cell.ingest:'\)"):
        RunInspector(journal=open_journal(journal_path))


def test_effects_in_doubt_explain_and_ask_before_done(journal_path: Any) -> None:
    journal = open_journal(journal_path)
    sent: list[int] = []

    @durable(journal=journal, run_id="m2", name="mailer2")
    def mailer(fail: bool) -> str:
        with atomic_marker("send") as go:
            if go:
                sent.append(1)
                if fail:
                    raise RuntimeError("smtp timeout after sending?")
        return "ok"

    with pytest.raises(RuntimeError):
        mailer(True)
    panel = EffectsInDoubt(journal=journal)
    help_text = panel.children[0].value
    assert "<b>Done</b>: it happened" in help_text and "<b>Redo</b>: it did not" in help_text
    (row,) = [c for c in panel.children if "lil-effect" in c._dom_classes]
    done = row.children[0].children[1]
    assert done.tooltip.startswith("it happened")
    done.click()  # asks first: nothing journaled yet
    confirm = row.children[1]
    assert (
        "cannot be undone" in confirm.question.value and "skip the block" in confirm.question.value
    )
    assert len(panel.doubtful()) == 1
    confirm.cancel.click()
    assert len(row.children) == 1 and len(panel.doubtful()) == 1
    done.click()
    row.children[1].comment.value = "saw it in the outbox"
    row.children[1].confirm.click()
    assert panel.doubtful() == [] and "as done by" in panel.status.value  # operate's outcome
    assert "saw it in the outbox" in panel.status.value
    notes = [e.data.get("note") for e in panel.journal.events(limit=1000) if e.kind == "resolve"]
    assert notes == ["saw it in the outbox"]  # the comment is journaled with the decision
    assert mailer(True) == "ok" and sent == [1]  # the block is skipped: no second email


def test_the_payload_editor_has_no_side_label_and_fits_its_text(cells: Any) -> None:
    code = (
        "d = step('d', lambda: {'title': 'Hi', 'tags': ['a', 'b'], 'body': 'text'})\n"
        "approval('post', d, schema={'type': 'object'})\n"
    )
    widget = cells.run("editor", code).result
    assert widget.edit.description == "" and widget.edit.layout.width == "100%"
    assert widget.edit.rows == widget.edit.value.count("\n") + 1
