"""The writes every journal backend makes the same way: build a record, append it.

``OwnerJournal`` and ``MemoryJournal`` differ in how records travel (a socket to the owner, or
a lock around shared memory), not in which records a call writes; the calls that only build
records live here once. A backend provides ``append``, ``get_run``, ``approvals`` and
``_append_to_run`` (an append that names its run, so the owner loads an evicted run first).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from letitloop.journal._records import (
    Record,
    board_record,
    decide_record,
    propose_record,
    uncache_record,
)

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    from letitloop.journal._values import (
        ApprovalInfo,
        CheckpointRow,
        CheckpointWrite,
        Encoded,
        Proposal,
        RunDetail,
    )


class RecordWrites:
    """Mixin: the Journal methods that are a record or two and an append."""

    def append(self, records: Sequence[Record], *, sync: bool = True) -> None:
        raise NotImplementedError

    def get_run(self, run_id: str) -> RunDetail:
        raise NotImplementedError

    def approvals(
        self, *, status: str | None = None, run_id: str | None = None, limit: int = 100
    ) -> list[ApprovalInfo]:
        raise NotImplementedError

    def _append_to_run(self, run_id: str, records: list[Record]) -> None:
        raise NotImplementedError

    # -- cache and splice proposals -----------------------------------------------------------

    def cache_clear(self, fn: str | None = None) -> None:
        self.append([uncache_record(fn)])

    def propose(self, proposal: Proposal) -> None:
        self.append([propose_record(proposal)])

    def decide(self, proposal_id: str, state: str, by: str, note: str | None = None) -> None:
        self.append([decide_record(proposal_id, state, by, note)])

    # -- decisions from outside the run -------------------------------------------------------

    def decide_approval(
        self,
        approval_id: str,
        *,
        approved: bool,
        by: str,
        comment: str | None = None,
        payload: Any = None,
        timed_out_at: float | None = None,
    ) -> ApprovalInfo:
        from letitloop.journal import _approvals  # (not on a workflow's path: imported here)

        row = _approvals.match_approval(approval_id, self.approvals(limit=1 << 30))
        rec = _approvals.answer_record(row, approved, by, comment, payload, timed_out_at)
        self._append_to_run(row.run_id, [rec])
        return _approvals.match_approval(row.id, self.approvals(run_id=row.run_id, limit=1 << 30))

    def cancel_run(self, run_id: str, by: str, reason: str | None = None) -> None:
        epoch = self.get_run(run_id).run.epoch
        rec = {"k": "cancel", "run": run_id, "epoch": epoch, "by": by, "reason": reason}
        self._append_to_run(run_id, [rec | {"ts": time.time()}])

    def note_restart(self, run_id: str, by: str, reason: str) -> None:
        epoch = self.get_run(run_id).run.epoch
        rec = {"k": "restart", "run": run_id, "epoch": epoch, "by": by, "reason": reason}
        self._append_to_run(run_id, [rec | {"ts": time.time()}])

    # -- the blackboard -----------------------------------------------------------------------

    def board_put(
        self,
        run_id: str,
        epoch: int,
        key: str,
        value: Encoded,
        *,
        version: int,
        tags: Sequence[str] = (),
        pinned: bool = False,
        by: str,
    ) -> None:
        rec = board_record(run_id, epoch, key, version, value, list(tags), pinned, by)
        self._append_to_run(run_id, [rec])  # (the owner loads the board's run if it must)

    # -- LangGraph checkpoints ----------------------------------------------------------------

    def put_checkpoint(
        self, row: CheckpointRow, *, workflow: str, status: str, meta: dict[str, Any]
    ) -> None:
        from letitloop.journal import _checkpoints  # (a graph's, not a workflow's: lazily)

        self.append([_checkpoints.checkpoint_record(row, workflow, status, meta)])

    def put_checkpoint_writes(
        self,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        task_id: str,
        task_path: str,
        writes: Sequence[CheckpointWrite],
        *,
        status: str | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        from letitloop.journal import _checkpoints

        rec = _checkpoints.checkpoint_writes_record(
            thread_id, ns, checkpoint_id, task_id, task_path, writes, status, error
        )
        self.append([rec])

    def delete_checkpoints(
        self,
        *,
        thread_ids: Sequence[str] | None = None,
        run_ids: Sequence[str] | None = None,
        keep_latest: bool = False,
    ) -> None:
        from letitloop.journal import _checkpoints

        self.append([_checkpoints.delete_record(thread_ids, run_ids, keep_latest)])

    def copy_checkpoints(self, source_thread_id: str, target_thread_id: str) -> None:
        from letitloop.journal import _checkpoints

        self.append([_checkpoints.copy_record(source_thread_id, target_thread_id)])
