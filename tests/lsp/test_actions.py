"""Code actions as text (no LSP): the line edits between two texts, the quick fixes of the
analysis findings, and splice proposals against the editor's text."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from letitloop.lsp._actions import apply_edits, fix_for, line_edits, proposal_edit, refactors
from letitloop.lsp._analysis import analyze

ACTIONS = Path(__file__).resolve().parents[1] / "data" / "lsp" / "actions"
PAIRS = [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb\nc", "a\nb\nc\nd"),  # no final newline
    ("a\r\nb\r\n", "z\r\na\r\nb\r\n"),  # CRLF
    ("", "x = 1\n"),
    ("x = 1\n", ""),
    *[
        ((ACTIONS / "flow.py").read_text(), p.read_text())
        for p in sorted(ACTIONS.glob("*.py"))
        if p.name != "flow.py"
    ],
]


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_line_edits_apply_back_to_the_new_text(old: str, new: str) -> None:
    edits = line_edits(old, new)
    assert apply_edits(old, edits) == new
    assert all(e.col == 0 for e in edits)  # whole lines: no column is ever ambiguous


def test_quick_fixes_give_the_expected_files() -> None:
    source = (ACTIONS / "flow.py").read_text()
    expected = {
        "LIL001": "wrap_step_time.py",
        "LIL003": "wrap_step_get.py",
        "LIL006": "wrap_marker_remove.py",
        "LIL005": "add_durable_notify.py",
    }
    for finding in analyze(source).findings:
        action = fix_for(source, finding)
        assert action is not None and action.code == finding.code
        assert action.diff.startswith("--- a/")
        assert (
            apply_edits(source, list(action.edits))
            == (ACTIONS / expected[finding.code]).read_text()
        )


def test_no_action_where_the_splicer_refuses() -> None:
    source = "from letitloop import durable, step\n\n\n@durable\ndef f():\n"
    source += "    return step('x', len, [])\n"
    analysis = analyze(source)
    titles = [a.title for a in refactors(source, analysis, 5, 11, 5)]
    assert "Wrap this call in step()" not in titles  # it is a step already
    assert not any("@durable" in t for t in titles)  # it is durable already


def test_proposal_edit_checks_the_target_is_unchanged() -> None:
    from letitloop.splice import ProposalConflictError

    source = "def greet():\n    return 'hi'\n"
    proposal = SimpleNamespace(
        id="p1", target="greet", old=source, code="def greet():\n    return 'hello'\n"
    )
    edits, diff = proposal_edit(source, "/x/greet.py", proposal)
    assert apply_edits(source, edits) == "def greet():\n    return 'hello'\n"
    assert "+    return 'hello'" in diff and "greet.py" in diff
    with pytest.raises(ProposalConflictError):
        proposal_edit(source.replace("hi", "hey"), "/x/greet.py", proposal)
