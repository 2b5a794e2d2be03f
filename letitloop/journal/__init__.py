"""The journal's one face: open a journal, its contract, its records, and the helpers every layer
above it shares.

The runtime (``letitloop.kernel``), the operate layer and the front ends import these names from
here, never from the private modules behind them; the backends (``duckdb/``: the owner process
and its client; ``postgres/``) live in their own packages, which only ``open_journal`` reaches.
Names are resolved lazily (PEP 562): a process that only resumes a run pays for what it uses.

    open        open_journal, find_location, locate, find_journal, JournalPaths, who, tool_table
    contract    Journal and its roles, Subscription, Encoded, and the records it returns:
                RunState StepRecord RunInfo RunDetail AttemptInfo EventInfo ApprovalInfo
                Proposal CacheEntry Notice CheckpointRow CheckpointWrite BoardEntry BoardView
    records     Record, check_text, error_dict, in_doubt_error, cancelled_error, RecordWrites,
                ACTIVE_KINDS (the records a run's own process writes: its time running),
                the limits MAX_MICROS MAX_TOKENS MAX_BUDGET_TOKENS
    values      preview, short_repr, call_preview (never run user code)
    features    forks (ForkOrigin, plan_fork, fork_records, forked_from, origin_of), step.map
                items (item_key, MapItems, map_items), shared limits (check_name, check_rate,
                check_tokens), approvals (approval_id, approval_request, parse_timeout,
                check_on_timeout, check_payload, payload_json, match_approval), the outbox
                (classify), queued runs and workers (QueueSpec, QueueItem, QueueInfo,
                WorkerInfo, QueueBoard, check_spec, worker_id, OUTCOMES), LangGraph checkpoints
                (checkpoint_record, checkpoint_writes_record), MemoryJournal,
                copy_journal and CopyOptions, the analytics report
                (Summary, summary, Recipe, recipe, RECIPES, select, read_query, Table,
                parse_since, export_parquet)
"""

from __future__ import annotations

import os

from letitloop._lazy import lazy_exports

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker

_C = "letitloop.journal._contract"
_EXPORTS = {
    "find_location": "letitloop.journal._config",
    "locate": "letitloop.journal._config",
    "find_journal": "letitloop.journal._config",
    "JournalPaths": "letitloop.journal._config",
    "who": "letitloop.journal._config",
    "tool_table": "letitloop.journal._config",
    **dict.fromkeys(
        (
            "Journal",
            "RunJournal",
            "ReadJournal",
            "DecisionJournal",
            "ProposalJournal",
            "BoardJournal",
            "CacheJournal",
            "CheckpointJournal",
            "LimitJournal",
            "OutboxJournal",
            "QueueJournal",
            "AdminJournal",
            "Subscription",
        ),
        _C,
    ),
    **dict.fromkeys(
        (
            "Encoded",
            "RunState",
            "StepRecord",
            "RunInfo",
            "RunDetail",
            "AttemptInfo",
            "EventInfo",
            "BoardEntry",
            "BoardView",
            "ApprovalInfo",
            "Proposal",
            "CacheEntry",
            "Notice",
            "CheckpointRow",
            "CheckpointWrite",
        ),
        "letitloop.journal._values",
    ),
    "Record": "letitloop.journal._records",
    "check_text": "letitloop.journal._records",
    "MAX_MICROS": "letitloop.journal._records",
    "MAX_TOKENS": "letitloop.journal._records",
    "MAX_BUDGET_TOKENS": "letitloop.journal._records",
    "ACTIVE_KINDS": "letitloop.journal._state",
    "error_dict": "letitloop.journal._state",
    "in_doubt_error": "letitloop.journal._state",
    "cancelled_error": "letitloop.journal._state",
    "RecordWrites": "letitloop.journal._writes",
    "preview": "letitloop.journal._preview",
    "short_repr": "letitloop.journal._preview",
    "call_preview": "letitloop.journal._preview",
    "ForkOrigin": "letitloop.journal._fork",
    "plan_fork": "letitloop.journal._fork",
    "fork_records": "letitloop.journal._fork",
    "forked_from": "letitloop.journal._fork",
    "origin_of": "letitloop.journal._fork",
    "checkpoint_record": "letitloop.journal._checkpoints",
    "checkpoint_writes_record": "letitloop.journal._checkpoints",
    "item_key": "letitloop.journal._maps",
    "MapItems": "letitloop.journal._maps",
    "map_items": "letitloop.journal._maps",
    "check_name": "letitloop.journal._limits",
    "check_rate": "letitloop.journal._limits",
    "check_tokens": "letitloop.journal._limits",
    **dict.fromkeys(
        (
            "approval_id",
            "approval_request",
            "check_on_timeout",
            "check_payload",
            "match_approval",
            "parse_timeout",
            "payload_json",
        ),
        "letitloop.journal._approvals",
    ),
    "classify": "letitloop.journal._outbox",
    **dict.fromkeys(
        (
            "QueueSpec",
            "QueueItem",
            "QueueInfo",
            "WorkerInfo",
            "check_spec",
            "worker_id",
            "OUTCOMES",
        ),
        "letitloop.journal._queues",
    ),
    "QueueBoard": "letitloop.journal._queue_board",
    "MemoryJournal": "letitloop.journal._memory",
    "copy_journal": "letitloop.journal._copy",
    "CopyOptions": "letitloop.journal._copy",
    "history_groups": "letitloop.journal._copy",
    **dict.fromkeys(
        (
            "Summary",
            "summary",
            "Recipe",
            "recipe",
            "RECIPES",
            "select",
            "read_query",
            "Table",
            "parse_since",
            "export_parquet",
        ),
        "letitloop.journal._analytics",
    ),
}
__all__ = sorted([*_EXPORTS, "open_journal", "private_journals"])

if TYPE_CHECKING:
    from collections.abc import Callable

    from letitloop.journal._analytics import (
        RECIPES as RECIPES,
        Recipe as Recipe,
        Summary as Summary,
        Table as Table,
        export_parquet as export_parquet,
        parse_since as parse_since,
        read_query as read_query,
        recipe as recipe,
        select as select,
        summary as summary,
    )
    from letitloop.journal._approvals import (
        approval_id as approval_id,
        approval_request as approval_request,
        check_on_timeout as check_on_timeout,
        check_payload as check_payload,
        match_approval as match_approval,
        parse_timeout as parse_timeout,
        payload_json as payload_json,
    )
    from letitloop.journal._checkpoints import (
        checkpoint_record as checkpoint_record,
        checkpoint_writes_record as checkpoint_writes_record,
    )
    from letitloop.journal._config import (
        JournalPaths as JournalPaths,
        find_journal as find_journal,
        find_location as find_location,
        locate as locate,
        tool_table as tool_table,
        who as who,
    )
    from letitloop.journal._contract import (
        AdminJournal as AdminJournal,
        ApprovalInfo as ApprovalInfo,
        AttemptInfo as AttemptInfo,
        BoardEntry as BoardEntry,
        BoardJournal as BoardJournal,
        BoardView as BoardView,
        CacheEntry as CacheEntry,
        CacheJournal as CacheJournal,
        CheckpointJournal as CheckpointJournal,
        CheckpointRow as CheckpointRow,
        CheckpointWrite as CheckpointWrite,
        DecisionJournal as DecisionJournal,
        Encoded as Encoded,
        EventInfo as EventInfo,
        Journal as Journal,
        LimitJournal as LimitJournal,
        Notice as Notice,
        OutboxJournal as OutboxJournal,
        Proposal as Proposal,
        ProposalJournal as ProposalJournal,
        QueueJournal as QueueJournal,
        ReadJournal as ReadJournal,
        RunDetail as RunDetail,
        RunInfo as RunInfo,
        RunJournal as RunJournal,
        RunState as RunState,
        StepRecord as StepRecord,
        Subscription as Subscription,
    )
    from letitloop.journal._copy import (
        CopyOptions as CopyOptions,
        copy_journal as copy_journal,
        history_groups as history_groups,
    )
    from letitloop.journal._fork import (
        ForkOrigin as ForkOrigin,
        fork_records as fork_records,
        forked_from as forked_from,
        origin_of as origin_of,
        plan_fork as plan_fork,
    )
    from letitloop.journal._limits import (
        check_name as check_name,
        check_rate as check_rate,
        check_tokens as check_tokens,
    )
    from letitloop.journal._maps import (
        MapItems as MapItems,
        item_key as item_key,
        map_items as map_items,
    )
    from letitloop.journal._memory import (
        MemoryJournal as MemoryJournal,
    )
    from letitloop.journal._outbox import (
        classify as classify,
    )
    from letitloop.journal._preview import (
        call_preview as call_preview,
        preview as preview,
        short_repr as short_repr,
    )
    from letitloop.journal._queue_board import (
        QueueBoard as QueueBoard,
    )
    from letitloop.journal._queues import (
        OUTCOMES as OUTCOMES,
        QueueInfo as QueueInfo,
        QueueItem as QueueItem,
        QueueSpec as QueueSpec,
        WorkerInfo as WorkerInfo,
        check_spec as check_spec,
        worker_id as worker_id,
    )
    from letitloop.journal._records import (
        MAX_BUDGET_TOKENS as MAX_BUDGET_TOKENS,
        MAX_MICROS as MAX_MICROS,
        MAX_TOKENS as MAX_TOKENS,
        Record as Record,
        check_text as check_text,
    )
    from letitloop.journal._state import (
        ACTIVE_KINDS as ACTIVE_KINDS,
        cancelled_error as cancelled_error,
        error_dict as error_dict,
        in_doubt_error as in_doubt_error,
    )
    from letitloop.journal._writes import (
        RecordWrites as RecordWrites,
    )


def open_journal(spec: str | os.PathLike[str] | None = None) -> Journal:
    """The process-wide journal for ``spec`` (found as ``journal._config`` says when None): a
    DuckDB file served by its owner process, or a ``postgresql://`` URL reached directly (the
    driver, psycopg, is imported only then)."""
    from letitloop.journal._config import find_location

    found = find_location(spec)
    if isinstance(found, str):
        try:
            from letitloop.journal.postgres._journal import open_journal as open_postgres
        except ImportError as exc:
            from letitloop.errors import ConfigError

            raise ConfigError(
                f"the journal {found!r} is on PostgreSQL, and its driver is missing: {exc}",
                fix="pip install 'letitloop[postgres]'",
            ) from None
        return open_postgres(found)
    from letitloop.journal.duckdb._client import open_journal as open_duckdb

    return open_duckdb(found)


def private_journals(journal: Journal) -> Callable[[], Journal] | None:
    """Opens journal objects of their own on ``journal``'s PostgreSQL database (a connection
    and leases each, not the process-wide one), for threads whose commits should not take turns
    on one connection (``lil worker``'s runs in hand); None for a DuckDB journal, whose owner
    serves every thread's requests at once."""
    if not type(journal).__module__.startswith("letitloop.journal.postgres"):
        return None
    from letitloop.journal.postgres._journal import PgJournal

    url = journal.location
    return lambda: PgJournal(url)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
