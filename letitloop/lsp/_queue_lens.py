"""The queue lens of a durable function: on which queue its runs wait, how many, and which
workers run them (``operate.queued_by_workflow``), read at most once per ``FRESH`` seconds for
every lens request of an editor (queue changes are not journal events, so the read is timed).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from letitloop import operate as ops
from letitloop.lsp._escape import lens

FRESH = 2.0  # seconds one read of the queues serves every function's lens


class QueueLenses:
    """The queued runs of each workflow of one journal (``view`` is the ``JournalView``)."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self.lock = threading.Lock()
        self.read_at = -FRESH
        self.by_workflow: dict[str, list[ops.WorkflowQueue]] = {}

    def of(self, candidates: tuple[str, ...]) -> list[ops.WorkflowQueue]:
        """The queues holding runs of a workflow journaled under one of ``candidates`` (or a
        name ending with one: ``flows.embed`` finds ``pkg.flows.embed``); blocking."""
        if not self.view.ready():
            return []
        with self.lock:
            if time.monotonic() - self.read_at >= FRESH:
                try:
                    self.by_workflow = ops.queued_by_workflow(self.view.journal)
                except Exception:  # the journal is away: no lens, the hovers say why
                    self.by_workflow = {}
                self.read_at = time.monotonic()
            found = self.by_workflow
        return [
            q
            for workflow, queues in found.items()
            if any(workflow == c or workflow.endswith(f".{c}") for c in candidates)
            for q in queues
        ]


def title(q: ops.WorkflowQueue) -> str:
    """``queue embeddings: 3 waiting · 2 running on 4242@box · 1 held by its caller``."""
    parts = [f"queue {q.queue}: {q.queued} waiting"]
    if q.running:
        on = ", ".join(q.holders[:3]) + (" …" if len(q.holders) > 3 else "")
        parts.append(f"{q.running} running on {on}" if on else f"{q.running} running")
    if q.held:
        parts.append(f"{q.held} held by {'its caller' if q.held == 1 else 'their callers'}")
    return lens(" · ".join(parts))
