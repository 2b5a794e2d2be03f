"""The journal as metrics for dashboards, once for every exporter (``lil metrics``: Prometheus).

Every family is gathered at scrape time from the journal's contract and its analytics views
(``step_facts``, ``run_facts``, ``events``), so a metric always agrees with ``lil runs list``
and ``lil report``. Labels are bounded by what people name (workflows, steps, models, queues,
hosts, states): never a run id, a worker id or anything that grows with the number of runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from letitloop.errors import LetItLoopError
from letitloop.journal import Journal, select

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class Family(NamedTuple):
    """One metric family: ``kind`` gauge | counter | histogram. A histogram sample's value is
    ``(cumulative bucket counts in BUCKETS order then +Inf, sum)``."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...]
    samples: Sequence[tuple[tuple[str, ...], Any]]


def _sql(journal: Journal, sql: str) -> list[tuple[Any, ...]] | None:
    try:
        return list(select(journal, sql).rows)
    except LetItLoopError:
        return None  # a memory journal has no SQL views: those families are left out


def collect(journal: Journal, now: float | None = None) -> list[Family]:
    """Every family, read now."""
    now = time.time() if now is None else now
    out: list[Family] = []
    rows = _sql(journal, "SELECT workflow, status, count(*) FROM run_facts GROUP BY 1, 2")
    if rows is not None:
        out.append(
            Family(
                "lil_runs",
                "gauge",
                "Runs by workflow and status.",
                ("workflow", "state"),
                [((str(w), str(s)), int(n)) for w, s, n in rows],
            )
        )
    out += _steps(journal)
    out += _approvals(journal, now)
    out += _queues(journal, now)
    out += _owner(journal)
    return out


def _steps(journal: Journal) -> list[Family]:
    le = ", ".join(
        f"count(*) FILTER (WHERE duration_s <= {b})" for b in BUCKETS
    )  # cumulative by construction
    rows = _sql(
        journal,
        f"SELECT workflow, name, {le}, count(*), coalesce(sum(duration_s), 0), "
        "count(*) FILTER (WHERE attempt > 1) FROM step_facts WHERE kind = 'step' AND "
        "duration_s IS NOT NULL GROUP BY 1, 2",
    )
    if rows is None:
        return []
    n = len(BUCKETS)
    hist = [
        ((str(r[0]), str(r[1])), ([int(c) for c in r[2 : 3 + n]], float(r[3 + n]))) for r in rows
    ]
    retries = [((str(r[0]), str(r[1])), int(r[4 + n])) for r in rows]
    families = [
        Family(
            "lil_step_duration_seconds", "histogram",
            "Step attempt durations, by workflow and step name.", ("workflow", "step"), hist,
        ),
        Family(
            "lil_step_retries", "counter", "Step attempts after the first (retries).",
            ("workflow", "step"), retries,
        ),
    ]  # fmt: skip
    dead = _sql(
        journal,
        "SELECT r.workflow, s.name, count(*) FROM steps s JOIN runs r ON r.run_id = s.run_id "
        "WHERE CAST(s.error AS VARCHAR) LIKE '%\"dead\": true%' GROUP BY 1, 2",
    )
    models = _sql(
        journal,
        "SELECT coalesce(model, ''), coalesce(sum(cost_micros), 0), coalesce(sum(tokens_in), 0),"
        " coalesce(sum(tokens_out), 0) FROM step_facts GROUP BY 1",
    )
    waits = _sql(
        journal, "SELECT coalesce(name, ''), count(*) FROM events WHERE kind = 'wait' GROUP BY 1"
    )
    if dead is not None:
        families.append(
            Family(
                "lil_dead_letters",
                "counter",
                "Steps that used up their attempts.",
                ("workflow", "step"),
                [((str(w), str(s)), int(c)) for w, s, c in dead],
            )
        )
    if models is not None:
        families.append(
            Family(
                "lil_cost_usd",
                "counter",
                "Spend recorded by steps, by model (USD).",
                ("model",),
                [((str(m),), int(c) / 1e6) for m, c, _i, _o in models],
            )
        )
        families.append(
            Family(
                "lil_tokens",
                "counter",
                "Tokens recorded by steps, by model and direction.",
                ("model", "direction"),
                [((str(m), "in"), int(i)) for m, _c, i, _o in models]
                + [((str(m), "out"), int(o)) for m, _c, _i, o in models],
            )
        )
    if waits is not None:
        families.append(
            Family(
                "lil_rate_limit_waits",
                "counter",
                "Times a step waited for a shared rate limit, by step name.",
                ("step",),
                [((str(s),), int(c)) for s, c in waits],
            )
        )
    return families


def _approvals(journal: Journal, now: float) -> list[Family]:
    pending = journal.approvals(status="pending", limit=10_000)
    oldest = max((now - a.created for a in pending), default=0.0)
    return [
        Family("lil_approvals_waiting", "gauge", "Approvals waiting for a person.", (),
               [((), len(pending))]),
        Family("lil_approval_oldest_age_seconds", "gauge",
               "How long the oldest waiting approval has waited.", (), [((), oldest)]),
    ]  # fmt: skip


def _queues(journal: Journal, now: float) -> list[Family]:
    queues, workers = journal.queues(), journal.workers()
    by_host: dict[tuple[str, str], int] = {}
    in_hand: dict[tuple[str], int] = {}
    for w in workers:
        by_host[(w.host, w.state)] = by_host.get((w.host, w.state), 0) + 1
        in_hand[(w.host,)] = in_hand.get((w.host,), 0) + len(w.runs)
    live = [now - w.heartbeat for w in workers if w.state != "lapsed"]
    return [
        Family("lil_queue_depth", "gauge", "Runs waiting in each queue.", ("queue",),
               [((q.spec.name,), q.queued) for q in queues]),
        Family("lil_queue_running", "gauge", "Runs of each queue held by a worker.", ("queue",),
               [((q.spec.name,), q.claimed) for q in queues]),
        Family("lil_queue_oldest_age_seconds", "gauge",
               "How long the oldest queued run of each queue has waited.", ("queue",),
               [((q.spec.name,), max(0.0, now - q.oldest) if q.oldest else 0.0)
                for q in queues]),
        Family("lil_queue_paused", "gauge", "1 when the queue is paused.", ("queue",),
               [((q.spec.name,), int(q.paused)) for q in queues]),
        Family("lil_workers", "gauge", "Worker processes by host and state.", ("host", "state"),
               sorted(by_host.items())),
        Family("lil_worker_runs_in_hand", "gauge", "Runs workers hold, by host.", ("host",),
               sorted(in_hand.items())),
        Family("lil_worker_heartbeat_age_max_seconds", "gauge",
               "The longest time since a live worker's last heartbeat.", (),
               [((), max(live, default=0.0))]),
    ]  # fmt: skip


def _owner(journal: Journal) -> list[Family]:
    stats = getattr(journal, "stats", None)
    if stats is None:
        return []  # PostgreSQL and memory journals have no owner
    try:
        s = stats()
    except LetItLoopError:
        return []
    lag = max(0, int(s.get("log_end", 0)) - int(s.get("folded_lsn", 0)))
    return [
        Family("lil_owner_fold_lag", "gauge",
               "Log positions the DuckDB owner has acknowledged and not folded yet.", (),
               [((), lag)]),
    ]  # fmt: skip
