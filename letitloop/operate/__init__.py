"""What people see and do with a journal, written once for every surface.

The CLI, lil-tui, the language server, the notebook widgets, the lab's server extension, the
task runner and the splicer are thin views over this layer: they read runs, side effects in
doubt, approvals, proposals and notifications through it, take every action through it, and
write times, money and errors with its formatting, so one journal reads the same everywhere.
It speaks only the journal's face (``letitloop.journal``, any backend) and imports no surface.

    runs        RunSummary, StepSummary, summarize, summary_of, list_summaries, steps_of,
                actions_for, why_not, attempt_seconds, latest_attempts, ACTIONS, STATUSES
    live        advance (a summary moved forward by its pushed events, without a read)
    one run     RunView, run_view, view_of, result_preview; its blackboard: BoardKey, board_keys,
                Conversation, Turn, conversations, turn_line
    effects     Doubt, in_doubt, doubts, doubts_of
    cells       which run a %%durable cell continues: notebook_identity, path_key, claim,
                remembered_claim, owner_of, Claim, and its badge
    actions     Outcome, decide_approval, resolve_effect, retry_dead_letter, raise_budget,
                cancel_run, reset_run, fork, check_resumable, start_resume, Resume,
                resume_command, note_started, apply_splice, reject_splice
    project     start_task, TaskStart, task_command, propose_splice, check_receipt,
                journal_once (a server's journal, opened on first use)
    history     Decision, decisions, decision_json, StepOutput, step_output, MAX_OUTPUT
    JSON        run_json, attempt_json, step_json, error_json, view_json, doubt_json,
                approval_json, proposal_json, proposal_diff, notice_json, event_json, map_json
    queues      QueueSummary, WorkerSummary, queue_summaries, worker_summaries, find_queue,
                queue_json, worker_json, item_json, holders, pause_queue, enqueue_by_name,
                parse_arguments, limits_text; OrphanSummary, orphan_summaries, orphan_json,
                fleet_json, WorkflowQueue, queued_by_workflow
    metrics     Family, collect, BUCKETS (what `lil metrics` exports)
    formatting  ago, local_time, short_time, duration, money, dollars, pct, tokens, size,
                one_line, error_line, truncate, human_times, sparkline, since_words
    cells       Claim, notebook_identity, path_key, claim, remembered_claim, owner_of, badge
                (which run a notebook's ``%%durable`` cell continues, and its badge)
"""

from __future__ import annotations

from letitloop._lazy import lazy_exports

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker

_RUNS = "letitloop.operate._runs"
_ACTIONS = "letitloop.operate._actions"
_FORMAT = "letitloop.operate._format"
_SHAPES = "letitloop.operate._shapes"
_EXPORTS = {
    **dict.fromkeys(
        (
            "RunSummary",
            "StepSummary",
            "summarize",
            "summary_of",
            "list_summaries",
            "steps_of",
            "actions_for",
            "why_not",
            "attempt_seconds",
            "latest_attempts",
            "ACTIONS",
            "STATUSES",
            "run_json",
            "attempt_json",
            "step_json",
            "error_json",
            "shown",
        ),
        _RUNS,
    ),
    "advance": "letitloop.operate._live",
    **dict.fromkeys(
        ("RunView", "run_view", "view_of", "result_preview", "view_json"),
        "letitloop.operate._view",
    ),
    **dict.fromkeys(
        (
            "BoardKey",
            "Conversation",
            "Turn",
            "board_keys",
            "conversations",
            "board_key_json",
            "conversation_json",
            "turn_line",
        ),
        "letitloop.operate._board",
    ),
    **dict.fromkeys(
        ("Doubt", "in_doubt", "doubts", "doubts_of", "doubt_json"), "letitloop.operate._effects"
    ),
    **dict.fromkeys(
        (
            "Outcome",
            "decide_approval",
            "resolve_effect",
            "retry_dead_letter",
            "raise_budget",
            "cancel_run",
            "reset_run",
            "fork",
            "check_resumable",
            "start_resume",
            "Resume",
            "resume_command",
            "note_started",
            "apply_splice",
            "reject_splice",
        ),
        _ACTIONS,
    ),
    **dict.fromkeys(("Family", "collect", "BUCKETS"), "letitloop.operate._metrics"),
    **dict.fromkeys(
        (
            "start_task",
            "TaskStart",
            "task_command",
            "propose_splice",
            "check_receipt",
            "journal_once",
        ),
        "letitloop.operate._project",
    ),
    **dict.fromkeys(
        ("Decision", "decisions", "decision_json", "StepOutput", "step_output", "MAX_OUTPUT"),
        "letitloop.operate._history",
    ),
    **dict.fromkeys(
        (
            "QueueSummary",
            "WorkerSummary",
            "queue_summaries",
            "worker_summaries",
            "find_queue",
            "queue_json",
            "worker_json",
            "item_json",
            "holders",
            "pause_queue",
            "enqueue_by_name",
            "parse_arguments",
            "limits_text",
            "OrphanSummary",
            "orphan_summaries",
            "orphan_json",
            "fleet_json",
            "WorkflowQueue",
            "queued_by_workflow",
        ),
        "letitloop.operate._queues",
    ),
    **dict.fromkeys(
        (
            "Claim",
            "claim",
            "remembered_claim",
            "notebook_identity",
            "path_key",
            "owner_of",
            "badge",
        ),
        "letitloop.operate._cells",
    ),
    **dict.fromkeys(
        (
            "approval_json",
            "proposal_json",
            "proposal_diff",
            "notice_json",
            "event_json",
            "map_json",
            "NOTICE_STATES",
            "PROPOSAL_STATES",
            "APPROVAL_STATES",
        ),
        _SHAPES,
    ),
    **dict.fromkeys(
        (
            "Claim",
            "notebook_identity",
            "path_key",
            "claim",
            "remembered_claim",
            "owner_of",
            "badge",
        ),
        "letitloop.operate._cells",
    ),
    **dict.fromkeys(
        (
            "ago",
            "local_time",
            "short_time",
            "duration",
            "money",
            "tokens",
            "size",
            "one_line",
            "error_line",
            "truncate",
            "human_times",
            "dollars",
            "pct",
            "sparkline",
            "since_words",
        ),
        _FORMAT,
    ),
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from letitloop.operate._actions import (
        Outcome as Outcome,
        Resume as Resume,
        apply_splice as apply_splice,
        cancel_run as cancel_run,
        check_resumable as check_resumable,
        decide_approval as decide_approval,
        fork as fork,
        note_started as note_started,
        raise_budget as raise_budget,
        reject_splice as reject_splice,
        reset_run as reset_run,
        resolve_effect as resolve_effect,
        resume_command as resume_command,
        retry_dead_letter as retry_dead_letter,
        start_resume as start_resume,
    )
    from letitloop.operate._board import (
        BoardKey as BoardKey,
        Conversation as Conversation,
        Turn as Turn,
        board_key_json as board_key_json,
        board_keys as board_keys,
        conversation_json as conversation_json,
        conversations as conversations,
        turn_line as turn_line,
    )
    from letitloop.operate._cells import (
        Claim as Claim,
        badge as badge,
        claim as claim,
        notebook_identity as notebook_identity,
        owner_of as owner_of,
        path_key as path_key,
        remembered_claim as remembered_claim,
    )
    from letitloop.operate._effects import (
        Doubt as Doubt,
        doubt_json as doubt_json,
        doubts as doubts,
        doubts_of as doubts_of,
        in_doubt as in_doubt,
    )
    from letitloop.operate._format import (
        ago as ago,
        dollars as dollars,
        duration as duration,
        error_line as error_line,
        human_times as human_times,
        local_time as local_time,
        money as money,
        one_line as one_line,
        pct as pct,
        short_time as short_time,
        since_words as since_words,
        size as size,
        sparkline as sparkline,
        tokens as tokens,
        truncate as truncate,
    )
    from letitloop.operate._history import (
        MAX_OUTPUT as MAX_OUTPUT,
        Decision as Decision,
        StepOutput as StepOutput,
        decision_json as decision_json,
        decisions as decisions,
        step_output as step_output,
    )
    from letitloop.operate._live import (
        advance as advance,
    )
    from letitloop.operate._metrics import (
        BUCKETS as BUCKETS,
        Family as Family,
        collect as collect,
    )
    from letitloop.operate._project import (
        TaskStart as TaskStart,
        check_receipt as check_receipt,
        journal_once as journal_once,
        propose_splice as propose_splice,
        start_task as start_task,
        task_command as task_command,
    )
    from letitloop.operate._queues import (
        OrphanSummary as OrphanSummary,
        QueueSummary as QueueSummary,
        WorkerSummary as WorkerSummary,
        WorkflowQueue as WorkflowQueue,
        enqueue_by_name as enqueue_by_name,
        find_queue as find_queue,
        fleet_json as fleet_json,
        holders as holders,
        item_json as item_json,
        limits_text as limits_text,
        orphan_json as orphan_json,
        orphan_summaries as orphan_summaries,
        parse_arguments as parse_arguments,
        pause_queue as pause_queue,
        queue_json as queue_json,
        queue_summaries as queue_summaries,
        queued_by_workflow as queued_by_workflow,
        worker_json as worker_json,
        worker_summaries as worker_summaries,
    )
    from letitloop.operate._runs import (
        ACTIONS as ACTIONS,
        STATUSES as STATUSES,
        RunSummary as RunSummary,
        StepSummary as StepSummary,
        actions_for as actions_for,
        attempt_json as attempt_json,
        attempt_seconds as attempt_seconds,
        error_json as error_json,
        latest_attempts as latest_attempts,
        list_summaries as list_summaries,
        run_json as run_json,
        shown as shown,
        step_json as step_json,
        steps_of as steps_of,
        summarize as summarize,
        summary_of as summary_of,
        why_not as why_not,
    )
    from letitloop.operate._shapes import (
        APPROVAL_STATES as APPROVAL_STATES,
        NOTICE_STATES as NOTICE_STATES,
        PROPOSAL_STATES as PROPOSAL_STATES,
        approval_json as approval_json,
        event_json as event_json,
        map_json as map_json,
        notice_json as notice_json,
        proposal_diff as proposal_diff,
        proposal_json as proposal_json,
    )
    from letitloop.operate._view import (
        RunView as RunView,
        result_preview as result_preview,
        run_view as run_view,
        view_json as view_json,
        view_of as view_of,
    )


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
