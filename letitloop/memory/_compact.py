"""Fitting messages into a token budget: deterministic compaction strategies (pure functions).

An *item* is one message with where it came from, its priority, whether it is pinned and its
place in order (``seq``: oldest first). ``plan`` counts every item, keeps them all if they fit,
refuses (``ContextBudgetError``, with the numbers) if the pinned ones alone do not, and
otherwise applies the strategy to the unpinned ones:

    drop_lowest_priority   drop whole items, lowest priority first (the older of equals first)
    truncate_oldest        cut the oldest items' text down (to nothing: dropped), oldest first
    sliding_window         keep the newest items that fit (at most ``turns`` of them), drop the
                           rest; the window is contiguous
    summarize              keep the newest items that fit beside a summary of the older ones,
                           which a (cheap) model writes: ``plan`` says which; the caller asks the
                           model as a journaled step and ``fill_summary`` puts it in

The same items, budget and counter always give the same plan (the golden files under
``tests/data/memory/`` hold it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from letitloop.errors import ConfigError, ContextBudgetError
from letitloop.kernel import Limit
from letitloop.memory._tokens import MESSAGE_TOKENS, TokenCounter

Item = dict[str, Any]  # id source role content name priority pinned seq (journaled data)
SUMMARY_PREFIX = "Summary of earlier context: "


@dataclass(frozen=True)
class DropLowestPriority:
    """Drop whole unpinned items, lowest ``priority`` first (among equals, the oldest)."""

    name = "drop_lowest_priority"


@dataclass(frozen=True)
class TruncateOldest:
    """Cut the text of the oldest unpinned items (keeping their beginning) until all fits."""

    name = "truncate_oldest"


@dataclass(frozen=True)
class SlidingWindow:
    """Keep the newest unpinned items that fit (at most ``turns``), drop every older one."""

    turns: int | None = None
    name = "sliding_window"


@dataclass(frozen=True)
class Summarize:
    """Replace the older unpinned items by a summary a model writes, keeping the newest that
    fit. ``model(prompt) -> text`` (or a response with ``.text``) runs as a journaled step:
    replayed after a crash, costed from its ``usage``, held to the run's budget (``estimate``
    USD), rate-limited by ``limit`` (a ``Limit`` or its name; ``estimate_tokens`` taken from
    it). The summary gets at most ``max_tokens`` (default: a quarter of the budget) and is
    written back to the blackboard as ``summary/<label>``."""

    model: Callable[[str], Any]
    max_tokens: int | None = None
    limit: Limit | str | None = None
    estimate: float = 0.0
    estimate_tokens: int = 0
    instructions: str = "Summarize this conversation for the agent who continues it; keep "
    "facts, decisions and open questions."
    name = "summarize"

    def room(self, budget: int) -> int:
        return self.max_tokens if self.max_tokens is not None else max(budget // 4, 1)


Strategy = DropLowestPriority | TruncateOldest | SlidingWindow | Summarize
NAMED: dict[str, Strategy] = {
    "drop_lowest_priority": DropLowestPriority(),
    "truncate_oldest": TruncateOldest(),
    "sliding_window": SlidingWindow(),
}


def strategy_for(spec: Any) -> Strategy:
    if isinstance(spec, (DropLowestPriority, TruncateOldest, SlidingWindow, Summarize)):
        return spec
    if isinstance(spec, str) and spec in NAMED:
        return NAMED[spec]
    fix = f"pass one of {sorted(NAMED)}, or Summarize(model=...) to summarize with a model"
    if spec == "summarize":
        fix = "summarizing needs a model: strategy=Summarize(model=cheap_llm)"
    raise ConfigError(f"strategy={spec!r} is not a compaction strategy", fix=fix)


def tokens_of(item: Item, counter: TokenCounter) -> int:
    return counter.count(item["content"]) + MESSAGE_TOKENS


def plan(
    items: list[Item], budget: int, strategy: Strategy, counter: TokenCounter
) -> dict[str, Any]:
    """What to send: ``messages``, the ``report`` (each item's tokens before and after and
    what happened to it) and, for ``summarize``, the ids of the items to summarize."""
    sizes = {i["id"]: tokens_of(i, counter) for i in items}
    before = sum(sizes.values())
    pinned = sum(sizes[i["id"]] for i in items if i["pinned"])
    actions = {i["id"]: "kept" for i in items}
    after = dict(sizes)
    texts = {i["id"]: i["content"] for i in items}
    room = budget
    if isinstance(strategy, Summarize) and before > budget:
        room = budget - strategy.room(budget) - MESSAGE_TOKENS - counter.count(SUMMARY_PREFIX)
    if pinned > room or (pinned > budget):
        raise ContextBudgetError(
            f"context needs {pinned} tokens for its pinned entries alone"
            + (f" (and {budget - room} for the summary)" if room != budget else "")
            + f", over its budget of {budget} tokens (counted with {counter.describe()}); "
            "nothing was sent to any model",
            fix="raise budget_tokens=, unpin entries, or shorten the pinned ones",
            budget=budget,
            needed=pinned + (budget - room),
            counter=counter.describe(),
        )
    free = [i for i in items if not i["pinned"]]
    summarize: list[str] = []
    if before > budget:
        over = before - budget
        if isinstance(strategy, DropLowestPriority):
            for item in sorted(free, key=lambda i: (i["priority"], i["seq"])):
                if over <= 0:
                    break
                actions[item["id"]], after[item["id"]] = "dropped", 0
                over -= sizes[item["id"]]
        elif isinstance(strategy, TruncateOldest):
            _truncate(free, over, counter, actions, after, texts)
        else:
            turns = strategy.turns if isinstance(strategy, SlidingWindow) else None
            left, kept = room - pinned, 0
            for item in sorted(free, key=lambda i: i["seq"], reverse=True):
                fits = sizes[item["id"]] <= left and (turns is None or kept < turns)
                if fits and left >= 0:
                    left -= sizes[item["id"]]
                    kept += 1
                    continue
                left = -1  # the window ends here: everything older goes
                gone = "summarized" if isinstance(strategy, Summarize) else "dropped"
                actions[item["id"]], after[item["id"]] = gone, 0
            summarize = [i["id"] for i in items if actions[i["id"]] == "summarized"]
    messages = [_message(i, texts[i["id"]]) for i in items if after[i["id"]] > 0]
    report = {
        "budget": budget,
        "before": before,
        "after": sum(after.values()),
        "counter": counter.name,
        "exact": counter.exact,
        "message_tokens": MESSAGE_TOKENS,
        "strategy": strategy.name,
        "items": [
            {
                "source": i["source"],
                "role": i["role"],
                "pinned": i["pinned"],
                "priority": i["priority"],
                "tokens": sizes[i["id"]],
                "kept": after[i["id"]],
                "action": actions[i["id"]],
            }
            for i in items
        ],
    }
    return {"messages": messages, "report": report, "summarize": summarize}


def _truncate(
    free: list[Item],
    over: int,
    counter: TokenCounter,
    actions: dict[str, str],
    after: dict[str, int],
    texts: dict[str, str],
) -> None:
    """Cut the oldest items first: an item's text down to what must go, or all of it."""
    for item in sorted(free, key=lambda i: i["seq"]):
        if over <= 0:
            return
        key = item["id"]
        content = after[key] - MESSAGE_TOKENS
        if content > over:
            texts[key] = counter.truncate(texts[key], content - over)
            actions[key] = "cut"
            now = counter.count(texts[key]) + MESSAGE_TOKENS
            over -= after[key] - now
            after[key] = now
        else:
            actions[key], after[key] = "dropped", 0
            over -= content + MESSAGE_TOKENS


def _message(item: Item, content: str) -> dict[str, Any]:
    message = {"role": item["role"], "content": content}
    if item.get("name"):
        message["name"] = item["name"]
    return message


def summary_prompt(items: list[Item], ids: list[str], strategy: Summarize) -> str:
    """What the summarizing model is asked: its instructions and the messages it replaces."""
    chosen = [i for i in items if i["id"] in ids]
    lines = [f"{i.get('name') or i['role']}: {i['content']}" for i in chosen]
    return strategy.instructions + "\n\n" + "\n".join(lines)


def fill_summary(
    planned: dict[str, Any],
    items: list[Item],
    summary: str,
    strategy: Summarize,
    counter: TokenCounter,
) -> dict[str, Any]:
    """The plan with the model's summary in place of the items it replaces (at the first of
    them), cut to the summary's room if the model wrote more."""
    room = strategy.room(planned["report"]["budget"])
    if counter.count(summary) > room:
        summary = counter.truncate(summary, room)
    text = SUMMARY_PREFIX + summary
    message = {"role": "system", "content": text}
    first = next(i["seq"] for i in items if i["id"] in planned["summarize"])
    messages, placed = [], False
    kept = [i for i in items if i["id"] not in planned["summarize"]]
    by_seq = {i["seq"]: m for i, m in zip(kept, planned["messages"], strict=False)}
    for item in items:
        if item["seq"] >= first and not placed:
            messages.append(message)
            placed = True
        if item["seq"] in by_seq and item["id"] not in planned["summarize"]:
            messages.append(by_seq[item["seq"]])
    tokens = counter.count(text) + MESSAGE_TOKENS
    report = dict(planned["report"])
    report["after"] += tokens
    report["items"] = [
        *report["items"],
        {
            "source": "summary",
            "role": "system",
            "pinned": False,
            "priority": 0,
            "tokens": tokens,
            "kept": tokens,
            "action": "summary",
        },
    ]
    return {"messages": messages, "report": report, "summarize": planned["summarize"]}
