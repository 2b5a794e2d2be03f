"""Assembling a model's context from sources under a token budget, journaled.

``context(sources=[...], budget_tokens=N, strategy=...)`` reads its sources (text, earlier
steps' outputs, blackboard keys or tags, an agents' thread) and plans what fits as one step of
the run, so a resumed run gets exactly the messages it got before. A summarizing strategy asks
its model as a step of its own (replayed, costed, held to the budget, rate-limited) and writes
the summary to the blackboard. A request that cannot fit, its pinned entries alone being over
the budget, fails before any model is called, with the numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from letitloop.errors import ConfigError, JournalError, NotInDurableContextError
from letitloop.kernel import current_run, step
from letitloop.memory import _compact
from letitloop.memory._board import Blackboard, blackboard
from letitloop.memory._tokens import counter_for


@dataclass(frozen=True)
class Source:
    """One source of context. Make them with ``text``, ``output``, ``board`` and ``thread``."""

    kind: str  # text | output | key | tag | thread
    arg: str
    role: str = "user"
    priority: int = 0
    pinned: bool = False
    last: int | None = None  # a thread's newest turns only

    def spec(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "arg": self.arg,
            "role": self.role,
            "priority": self.priority,
            "pinned": self.pinned,
            "last": self.last,
        }


def text(content: str, *, role: str = "user", priority: int = 0, pinned: bool = False) -> Source:
    """Literal text (an instruction, the task): ``pinned=True`` keeps it whatever the budget."""
    return Source("text", content, role, priority, pinned)


def output(step_name: str, *, role: str = "user", priority: int = 0) -> Source:
    """The output of the run's latest completed step named ``step_name``."""
    return Source("output", step_name, role, priority)


def board(
    key: str | None = None, *, tag: str | None = None, role: str = "user", priority: int = 0
) -> Source:
    """A blackboard key's newest version, or every key tagged ``tag`` (pinned entries stay
    pinned in the context)."""
    if (key is None) == (tag is None):
        raise ConfigError("board() takes a key or a tag", fix='board("plan") or board(tag="facts")')
    return Source("key", key, role, priority) if key else Source("tag", str(tag), role, priority)


def thread(name: str, *, last: int | None = None, priority: int = 0) -> Source:
    """An agents' thread (``agents.thread(name)``): its turns as messages, oldest first, each
    with its agent's role and name (``last``: only the newest turns)."""
    return Source("thread", name, "assistant", priority, False, last)


@dataclass(frozen=True)
class Context:
    """Assembled context: ``messages`` to send and the ``report`` of what was kept, cut,
    dropped or summarized, with the token counts and the counter that made them."""

    messages: list[dict[str, Any]]
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return int(self.report.get("after", 0))


def context(
    sources: Sequence[Source | str],
    *,
    budget_tokens: int,
    strategy: Any = "drop_lowest_priority",
    counter: Any = None,
    label: str = "context",
) -> Context:
    """Assemble ``sources`` into messages that fit ``budget_tokens`` (see the module docstring).

    ``strategy``: ``"drop_lowest_priority"`` (default), ``"truncate_oldest"``,
    ``"sliding_window"`` (or ``SlidingWindow(turns=N)``) or ``Summarize(model=...)``.
    ``counter``: None (the documented estimate), ``"tiktoken:cl100k_base"``,
    ``"hf:tokenizer.json"``, a ``TokenCounter`` or a function. ``label`` names the steps and
    the summary's blackboard key (``summary/<label>``)."""
    ctx = current_run.get()
    if ctx is None:
        raise NotInDurableContextError(
            "context() was called outside a durable function",
            fix="call it inside a @durable function: its reads and any summary are journaled",
        )
    if type(budget_tokens) is not int or budget_tokens <= 0:
        raise ConfigError(
            f"budget_tokens={budget_tokens!r} is not a number of tokens",
            fix="pass a positive integer, e.g. budget_tokens=8000",
        )
    chosen = _compact.strategy_for(strategy)
    count = counter_for(counter)
    specs = [(s if isinstance(s, Source) else text(s)).spec() for s in sources]

    def gather_and_plan(specs: list[dict[str, Any]], *described: Any) -> dict[str, Any]:
        """The context step: read every source, then plan what fits (with the items, when a
        summary will replace some of them). ``described``: the strategy and counter by name,
        so a different one at this position is a different step on replay."""
        items = gather(specs)
        planned = _compact.plan(items, budget_tokens, chosen, count)
        return planned | {"items": items if planned["summarize"] else []}

    turns = getattr(chosen, "turns", None)
    planned = step(
        f"context {label}", gather_and_plan, specs, budget_tokens, chosen.name, turns, count.name
    )
    if not planned["summarize"]:
        return Context(planned["messages"], planned["report"])
    assert isinstance(chosen, _compact.Summarize)
    prompt = _compact.summary_prompt(planned["items"], planned["summarize"], chosen)
    options: dict[str, Any] = {"estimate": chosen.estimate}
    if chosen.limit is not None:
        limit = chosen.limit
        options |= {"limit": limit, "estimate_tokens": chosen.estimate_tokens}
    answer = step(f"summarize {label}", chosen.model, prompt, **options)
    summary = str(getattr(answer, "text", answer))
    filled = _compact.fill_summary(planned, planned["items"], summary, chosen, count)
    blackboard().put(f"summary/{label}", summary, tags=("summary",))
    return Context(filled["messages"], filled["report"])


def gather(specs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items from source specs, in order (a step's reads of the journal)."""
    items: list[dict[str, Any]] = []
    board_: Blackboard | None = None
    for spec in specs:
        kind, arg = spec["kind"], spec["arg"]
        base = {"role": spec["role"], "priority": spec["priority"], "pinned": spec["pinned"]}
        if kind == "text":
            items.append(base | {"source": "text", "content": arg, "name": None})
        elif kind == "output":
            items.append(base | {"source": f"output:{arg}", "content": _as_text(_output(arg))})
        else:
            board_ = board_ or blackboard()
            items += _board_items(board_, kind, arg, spec, base)
    for seq, item in enumerate(items):
        item.setdefault("name", None)
        item.update(seq=seq, id=f"{seq}:{item['source']}")
    return items


def _board_items(
    board_: Blackboard, kind: str, arg: str, spec: dict[str, Any], base: dict[str, Any]
) -> list[dict[str, Any]]:
    """Blackboard entries as items (read directly: the context step journals what it read)."""
    if kind == "thread":
        turns = board_._read(None, f"thread/{arg}", True, None)
        if spec["last"] is not None:
            turns = turns[-spec["last"] :]
        out = []
        for e in turns:
            turn = e.value if isinstance(e.value, dict) else {"content": e.value}
            out.append(
                base
                | {
                    "source": f"thread:{arg}@{e.version}",
                    "role": turn.get("role") or "assistant",
                    "name": turn.get("agent"),
                    "content": _as_text(turn.get("content")),
                    "pinned": e.pinned,
                }
            )
        return out
    entries = board_._read(
        None, arg if kind == "key" else None, False, None if kind == "key" else arg
    )
    return [
        base
        | {
            "source": f"board:{e.key}@{e.version}",
            "content": _as_text(e.value),
            "pinned": base["pinned"] or e.pinned,
        }
        for e in entries
    ]


def _output(name: str) -> Any:
    ctx = current_run.get()
    assert ctx is not None
    detail = ctx.journal.get_run(ctx.run_id)
    done = [a for a in detail.attempts if a.name == name and a.status == "completed"]
    if not done:
        raise JournalError(
            f"run {ctx.run_id} has no completed step named {name!r} to take context from",
            fix="name a step that ran before this context() call",
            run_id=ctx.run_id,
        )
    last = max(done, key=lambda a: (a.position, a.attempt))
    codec, data = ctx.journal.get_output(ctx.run_id, ctx.epoch, last.position, last.attempt)
    return ctx.codec.decode(codec, data, what=f"output of step {name!r}")


def _as_text(value: Any) -> str:
    """A value as message text: strings as they are, a response's ``.text``, else JSON."""
    if isinstance(value, str):
        return value
    if hasattr(value, "text") and isinstance(value.text, str):
        return str(value.text)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)
