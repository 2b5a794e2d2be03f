"""Group commit: a round's records (and those held) in one synced write to the log, queued for the
database thread, pushed to subscribers; the live state's size is bounded by evicting idle runs."""

from __future__ import annotations

import time

import msgpack

from letitloop.journal._records import Record, without_payload
from letitloop.journal.duckdb.owner._base import (
    _FOLD_NOW,
    _NOTIFYING,
    _TICK,
    HOLD_DELAY,
    MAX_LOADED_RUNS,
    OwnerBase,
)
from letitloop.journal.duckdb.owner._log import frame_parts


class Commit(OwnerBase):
    """Writing a round's records to the log and handing them on."""

    def _commit(self, batch: list[tuple[Record, bool]]) -> None:
        """Group commit: every record of a round (and those held) in one synced write."""
        now = time.monotonic()
        if not any(ack for _, ack in batch) and not self.stopping:
            if not self.held:
                self.held_since = now
            self.held.extend(rec for rec, _ in batch)
            if now - self.held_since < HOLD_DELAY and len(self.held) < 1000:
                return
        records = self.held + [rec for rec, _ in batch]
        self.held = []
        frames = [frame_parts(msgpack.packb(rec, use_bin_type=True)) for rec in records]
        lsn = self.log.append_frames(frames) - sum(len(h) + len(p) for h, p in frames)
        self.stats["acked"] += len(records)
        self.stats["fsyncs"] += 1
        items = []
        for rec, (head, payload) in zip(records, frames, strict=True):
            lsn += len(head) + len(payload)
            items.append((lsn, rec))
            entry = self.state.runs.get(rec["run"])
            if entry is not None:
                entry.last_lsn = lsn
        waiting = len(self.to_fold)
        if not waiting:
            self.unfolded_since = time.monotonic()
        self.to_fold.extend(items)  # queued before the acks go out: reads fold them first
        if waiting < _FOLD_NOW <= waiting + len(items):
            self.jobs.put(_TICK)  # the database thread folds now (bounded lag)
        self.lg_heads.apply(items)
        if any(rec["k"] in _NOTIFYING for rec in records):
            if not self.db_ready:
                self.kick_pending = True
            elif self.notifier.outbox is not None:
                self.notifier.kick()  # (nothing to scan without a configured outbox)
        if len(self.state.runs) > MAX_LOADED_RUNS and self.db_ready:
            self._evict()
        self._push(items)

    def _evict(self) -> None:
        """Forget the least recently updated runs that no process holds and that DuckDB has in
        full; touching one again loads it from there. Keeps the owner's memory bounded."""
        folded = self.store.folded_lsn
        idle = sorted(
            (e for e in self.state.runs.values() if e.holder is None and e.last_lsn <= folded),
            key=lambda e: e.updated,
        )
        for entry in idle[: len(self.state.runs) - MAX_LOADED_RUNS * 4 // 5]:
            del self.state.runs[entry.run_id]

    def _push(self, items: list[tuple[int, Record]]) -> None:
        subs = [c for c in self.conns.values() if c.subscribed]
        if not subs:
            return
        events = [{"seq": lsn, **without_payload(rec)} for lsn, rec in items]
        for conn in subs:
            mine = [e for e in events if conn.sub_run in (None, e["run"])]
            if mine:
                self._send(conn, {"push": mine})
