"""Memory for agent pipelines: a journaled blackboard, context under a token budget, and
threads and handoffs between agents (``docs/memory.md``).

    from letitloop.memory import blackboard, context, text, thread
    board = blackboard()                       # inside a @durable run: the run's board
    board.put("plan", outline, tags=["plan"])  # journaled; replayed, never written twice
    ctx = context([text("You edit.", pinned=True), thread("team")], budget_tokens=4000)

    blackboard      Blackboard, Entry, blackboard
    context         context, Context, Source, the sources text output board thread, and the
                    strategies DropLowestPriority TruncateOldest SlidingWindow Summarize
    tokens          TokenCounter, ESTIMATE, tiktoken_counter, hf_counter, counter_for
    agents          agents, Agents, Thread, Turn, handoff

Everything here is plain Python on the journal: a board write is a record the journal's state
machine versions (compare-and-swap across processes), and every call inside a run is a step.
"""

from __future__ import annotations

from letitloop._lazy import lazy_exports

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker

_CONTEXT = "letitloop.memory._context"
_COMPACT = "letitloop.memory._compact"
_TOKENS = "letitloop.memory._tokens"
_AGENTS = "letitloop.memory._agents"
_EXPORTS = {
    **dict.fromkeys(("Blackboard", "Entry", "blackboard"), "letitloop.memory._board"),
    **dict.fromkeys(
        ("context", "Context", "Source", "text", "output", "board", "thread"), _CONTEXT
    ),
    **dict.fromkeys(
        ("DropLowestPriority", "TruncateOldest", "SlidingWindow", "Summarize", "plan"), _COMPACT
    ),
    **dict.fromkeys(
        ("TokenCounter", "ESTIMATE", "tiktoken_counter", "hf_counter", "counter_for"), _TOKENS
    ),
    **dict.fromkeys(("agents", "Agents", "Thread", "Turn", "handoff"), _AGENTS),
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from letitloop.memory._agents import (
        Agents as Agents,
        Thread as Thread,
        Turn as Turn,
        agents as agents,
        handoff as handoff,
    )
    from letitloop.memory._board import (
        Blackboard as Blackboard,
        Entry as Entry,
        blackboard as blackboard,
    )
    from letitloop.memory._compact import (
        DropLowestPriority as DropLowestPriority,
        SlidingWindow as SlidingWindow,
        Summarize as Summarize,
        TruncateOldest as TruncateOldest,
        plan as plan,
    )
    from letitloop.memory._context import (
        Context as Context,
        Source as Source,
        board as board,
        context as context,
        output as output,
        text as text,
        thread as thread,
    )
    from letitloop.memory._tokens import (
        ESTIMATE as ESTIMATE,
        TokenCounter as TokenCounter,
        counter_for as counter_for,
        hf_counter as hf_counter,
        tiktoken_counter as tiktoken_counter,
    )


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
