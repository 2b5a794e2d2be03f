"""The blackboard, context and threads inside durable runs, on memory, DuckDB and PostgreSQL:
journaled calls that replay without touching the board, children sharing their top run's
board, the refusal of an over-budget context before any model call, the summarizer's call as a
costed, budgeted, rate-limited step, and the token counters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from letitloop import Budget, BudgetExceeded, Limit, durable, step
from letitloop.errors import BoardConflictError, ConfigError, ContextBudgetError
from letitloop.memory import (
    Summarize,
    agents,
    blackboard,
    board,
    context,
    handoff,
    hf_counter,
    text,
    thread,
    tiktoken_counter,
)
from letitloop.testing import FakeLLM


def board_writes(journal: Any, run_id: str) -> int:
    return sum(e.kind == "board" for e in journal.events(run_id=run_id))


def test_board_calls_are_steps_that_replay_and_children_share_the_board(
    backend_journal: Any,
) -> None:
    journal, seen, crash = backend_journal, [], [True]

    @durable(journal=journal, name="child")
    def child(n: int) -> int:
        return blackboard().put(f"part/{n}", n * n, tags=["parts"]).version

    @durable(journal=journal, run_id="r", name="parent")
    def parent() -> list[Any]:
        b = blackboard()
        plan = b.put("plan", {"steps": 2}, tags=["plan"], pinned=True)
        b.put("plan", {"steps": 3}, expect=plan.version)
        try:
            b.put("plan", {"steps": 9}, expect=plan.version)  # stale: someone (we) wrote since
        except BoardConflictError as lost:
            seen.append((lost.expected, lost.current))
        [child(n) for n in (1, 2)]
        if crash.pop():
            raise RuntimeError("the process died here")
        found = b.find(tag="parts")
        return [b.get("plan").value, [e.value for e in found], len(b.history("plan"))]

    with pytest.raises(RuntimeError):
        parent()
    writes = board_writes(journal, "parent:r")
    assert writes == 4 and seen == [(1, 2)]  # 2 plans and each child's part, on the parent
    crash.append(False)
    assert parent() == [{"steps": 3}, [1, 4], 2]
    assert board_writes(journal, "parent:r") == writes  # the replay wrote nothing again
    assert seen == [(1, 2), (1, 2)]  # the conflict replayed as journaled
    steps = [a.name for a in journal.get_run("parent:r").attempts if a.attempt == 1]
    assert steps[:3] == ["board.put plan", "board.put plan", "board.put plan"]
    entries = journal.board("parent:r").entries
    assert [(e.key, e.version, e.pinned) for e in entries] == [
        ("plan", 2, True),  # the pinned flag (and tags) stay with the key
        ("part/1", 1, False),
        ("part/2", 1, False),
    ]


def test_over_budget_context_is_refused_before_any_model_call(backend_journal: Any) -> None:
    llm, cheap = FakeLLM(), FakeLLM()

    @durable(journal=backend_journal, run_id="big", name="ask")
    def ask() -> str:
        blackboard().put("brief", "otters " * 100, pinned=True)
        ctx = context(
            [text("You write.", pinned=True), board("brief")],
            budget_tokens=50,
            strategy=Summarize(model=cheap.complete),
        )
        return step("answer", llm.complete, str(ctx.messages)).text

    with pytest.raises(ContextBudgetError) as refused:
        ask()
    assert llm.calls == [] and cheap.calls == []  # neither the model nor the summarizer
    err = refused.value
    assert err.budget == 50 and err.needed > 50 and "characters/4" in err.counter
    assert "for its pinned entries alone" in str(err) and "for the summary" in str(err)
    assert "budget of 50 tokens" in str(err) and "raise budget_tokens" in str(err)
    failed = [a for a in backend_journal.get_run("ask:big").attempts if a.status == "failed"]
    assert [a.name for a in failed] == ["context context"]  # journaled with its numbers
    assert failed[0].error is not None and "ContextBudgetError" in failed[0].error["type"]


def test_the_summarizer_is_a_costed_budgeted_rate_limited_step(backend_journal: Any) -> None:
    cheap = FakeLLM(model="gpt-4o-mini")
    Limit("fake:cheap", rpm=600)

    @durable(journal=backend_journal, run_id="s", name="talk", budget=Budget(usd=1.0))
    def talk(estimate: float) -> list[dict[str, Any]]:
        review = agents.thread("review")
        for i in range(6):
            review.say("writer" if i % 2 else "critic", f"turn {i}: " + "words " * 20)
        handoff(to="editor", note="over to you", by="critic", thread=review)
        strategy = Summarize(
            model=cheap.complete, limit="fake:cheap", estimate=estimate, estimate_tokens=200
        )
        return context([thread("review")], budget_tokens=80, strategy=strategy).messages

    messages = talk(0.001)
    assert len(cheap.calls) == 1 and messages[0]["content"].startswith("Summary of earlier")
    run = backend_journal.get_run("talk:s")
    summary = [a for a in run.attempts if a.name == "summarize context"]
    assert len(summary) == 1 and summary[0].tokens_in > 0 and summary[0].model == "gpt-4o-mini"
    assert run.run.tokens == summary[0].tokens_in + summary[0].tokens_out  # counted in the run
    written = backend_journal.board("talk:s", key="summary/context").entries
    assert written and written[0].tags == ("summary",)
    handed = backend_journal.board("talk:s", key="handoff/editor").entries
    assert handed[0].pinned
    assert talk(0.001) == messages and len(cheap.calls) == 1  # completed: nothing runs again

    @durable(journal=backend_journal, run_id="poor", name="talk", budget=Budget(usd=0.0005))
    def poor() -> None:
        for _ in range(8):
            agents.thread("t").say("a", "words " * 20)
        context(
            [thread("t")], budget_tokens=60, strategy=Summarize(model=cheap.complete, estimate=0.01)
        )

    with pytest.raises(BudgetExceeded) as stopped:
        poor()
    assert stopped.value.step == "summarize context" and len(cheap.calls) == 1  # not called


def test_token_counters_are_exact_or_say_they_estimate(tmp_path: Path, monkeypatch: Any) -> None:
    import tiktoken
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    ranks = {bytes([b]): b for b in range(256)} | {b"ot": 256, b"ter": 257, b"otter": 258}
    enc = tiktoken.Encoding("tiny", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    exact = tiktoken_counter(enc)
    assert exact.exact and exact.name == "tiktoken:tiny"
    assert exact.count("otter otter") == len(enc.encode("otter otter")) == 3
    assert exact.truncate("otter otter", 1) == "otter"

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="not in its cache") as refused:
        tiktoken_counter("cl100k_base")  # never downloaded at run time
    assert "TIKTOKEN_CACHE_DIR" in str(refused.value.fix)

    vocab = {"[UNK]": 0, "sea": 1, "otters": 2, "hold": 3, "hands": 4}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    hf = hf_counter(str(tmp_path / "tokenizer.json"))
    assert hf.exact and hf.count("sea otters hold hands") == 4
    assert hf.truncate("sea otters hold hands", 2) == "sea otters"
    with pytest.raises(ConfigError, match="cannot read the tokenizer file"):
        hf_counter(str(tmp_path / "missing.json"))


def test_a_context_reports_the_counter_it_used(memory_journal: Any, tmp_path: Path) -> None:
    @durable(journal=memory_journal)
    def ask(counter: Any) -> dict[str, Any]:
        return context([text("sea otters hold hands")], budget_tokens=100, counter=counter).report

    assert ask(None)["counter"] == "characters/4" and ask(None)["exact"] is False
    spaced = ask(lambda s: len(s.split()))
    assert spaced["exact"] is True and spaced["before"] == 4 + 4
