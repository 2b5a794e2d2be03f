"""The newest checkpoint of each graph thread, kept in the owner's memory (event loop only).

LangGraph reads a thread's latest checkpoint at the start of every ``invoke`` and on every
``get_state``. Through DuckDB that read waits for the fold of everything acknowledged before it
and then scans the thread's checkpoints: 10-100 ms on a busy machine. The owner answers it from
here instead, in its event loop, without touching the database thread.

An entry says what the tables will hold for ``(thread, ns)`` once the log is folded: the newest
checkpoint's wire row and its writes (or that the thread has none). Entries are only ever
learned from an answer of the database thread (``seed``), accepted only if no checkpoint record
of that thread was committed after the fold that answer saw; from then on every committed
checkpoint record keeps the entry exact (``apply``). A thread deleted or copied onto, an entry
too large, or too many entries: forgotten, and the next read goes to DuckDB again and re-seeds.

A new thread has no head to seed, so the owner also learns once which (thread, ns) pairs have
checkpoints or writes at all (``learn_pairs``, under the same rule) and adds every pair written
since: a pair outside that set has none, answered as such without asking DuckDB.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

MAX_ENTRIES = 1000  # (thread, ns) pairs kept
MAX_ENTRY_BYTES = 1 << 20  # a head whose checkpoint and writes exceed this is not kept
MAX_EARLY = 16  # checkpoints newer than the head with writes before their put (async mode)
_LSNS = 20000  # threads whose last checkpoint record's position is remembered
MAX_PAIRS = 200_000  # (thread, ns) pairs with checkpoints kept in memory, at most

if TYPE_CHECKING:  # (task, idx) -> [task, idx, channel, vtype, value, path]
    Writes = dict[tuple[str, int], list[Any]]


class _Head:
    __slots__ = ("early", "row", "size", "writes")

    def __init__(self, row: list[Any] | None, writes: Writes) -> None:
        self.row = row  # [thread, ns, cid, parent, ctype, cp, mtype, meta, created] or None
        self.writes = writes
        self.early: dict[str, Writes] = {}  # writes of newer checkpoints not put yet
        self.size = _size(row, writes)


class Heads:
    """Answers ``checkpoints`` requests for a thread's latest checkpoint from memory."""

    def __init__(self) -> None:
        self.entries: OrderedDict[tuple[str, str], _Head] = OrderedDict()
        # log position of each thread's last committed checkpoint record; threads forgotten
        # here are covered by ``floor`` (no forgotten thread has a record after it)
        self.lsns: OrderedDict[str, int] = OrderedDict()
        self.floor = 0
        # every (thread, ns) that may have checkpoints or writes (None until learned): a superset
        self.pairs: set[tuple[str, str]] | None = None
        self.want_pairs = True  # the database thread reads them with its next answer
        self.uncertain: set[str] = set()  # threads whose pairs the set may lack
        self.stats = {"hits": 0, "seeded": 0}

    @staticmethod
    def latest(req: dict[str, Any]) -> tuple[str, str] | None:
        """The (thread, ns) a request asks the newest checkpoint of (or one by id), if so."""
        thread, ns = req.get("thread"), req.get("ns")
        if not isinstance(thread, str) or not isinstance(ns, str) or req.get("limit") != 1:
            return None
        if req.get("before") is not None or req.get("filter"):
            return None
        return thread, ns

    def answer(self, req: dict[str, Any]) -> list[list[Any]] | None:
        """The reply's rows, or None when only DuckDB can answer."""
        key = self.latest(req)
        if key is None:
            return None
        head = self.entries.get(key)
        if (
            head is None
            and self.pairs is not None
            and key not in self.pairs
            and key[0] not in self.uncertain
        ):
            head = _Head(None, {})  # no checkpoint was ever put there
            self._keep(key, head)
        if head is None:
            return None
        cid = req.get("cid")
        if head.row is None:
            if cid is not None:
                return None  # absent from the head: maybe an older checkpoint, or none
            rows: list[list[Any]] = []
        elif cid is not None and cid != head.row[2]:
            return None
        else:
            order = sorted(head.writes.values(), key=lambda w: (w[5], w[0], w[1]))
            rows = [[*head.row, [list(w) for w in order]]]
        self.entries.move_to_end(key)
        self.stats["hits"] += 1
        return rows

    def seed(
        self, req: dict[str, Any], rows: list[list[Any]], early: list[list[Any]], folded_lsn: int
    ) -> None:
        """Learn a head from the database thread's answer to ``req`` and the writes saved for
        newer checkpoints (``early``, as ``CheckpointStore.early_writes``), read when the log
        was folded up to ``folded_lsn``: kept only if nothing of the thread came after."""
        key = self.latest(req)
        if key is None or req.get("cid") is not None or key in self.entries:
            return
        if self.lsns.get(key[0], self.floor) > folded_lsn:
            return  # a newer record of the thread is committed: the answer is already stale
        if rows:
            r = rows[0]
            head = _Head(list(r[:9]), {(w[0], w[1]): list(w) for w in r[9]})
        else:
            head = _Head(None, {})
        for w in early:
            if len(head.early) >= MAX_EARLY and w[0] not in head.early:
                return
            head.early.setdefault(w[0], {})[(w[1], w[2])] = list(w[1:])
        head.size += sum(_size(None, w) for w in head.early.values())
        self._keep(key, head)
        self.stats["seeded"] += 1

    def learn_pairs(self, pairs: set[tuple[str, str]], folded_lsn: int) -> None:
        """The pairs DuckDB has checkpoints for when the log was folded up to ``folded_lsn``.
        Threads with a record after that may have more: they are never answered "none"."""
        self.want_pairs = self.floor > folded_lsn  # a forgotten thread may have one: ask again
        if self.want_pairs or len(pairs) > MAX_PAIRS:
            return
        self.uncertain = {t for t, lsn in self.lsns.items() if lsn > folded_lsn}
        self.pairs = set(pairs)

    def reset(self) -> None:
        """Forget everything (DuckDB changed behind the log: a quarantined record retried)."""
        self.entries.clear()
        self.pairs, self.want_pairs, self.uncertain = None, True, set()

    def apply(self, items: Iterable[tuple[int, dict[str, Any]]]) -> None:
        """Follow committed records (in log order) that change checkpoints."""
        for lsn, rec in items:
            k = rec["k"]
            if k == "lgput":
                self._touch(rec["thread"], lsn)
                if self.pairs is not None:
                    self.pairs.add((rec["thread"], rec["ns"]))
                    if len(self.pairs) > MAX_PAIRS:
                        self.pairs = None
                self._put(rec)
            elif k == "lgwrite":
                self._touch(rec["thread"], lsn)
                if self.pairs is not None:
                    self.pairs.add((rec["thread"], rec["ns"]))
                self._write(rec)
            elif k == "lgcopy":
                self._touch(rec["dst"], lsn)
                self._forget(rec["dst"])
                self.uncertain.add(rec["dst"])  # it has the source's namespaces now
            elif k == "lgdel":
                if rec["runs"] is not None:  # any thread may lose checkpoints
                    self.entries.clear()
                    self.lsns.clear()
                    self.floor = lsn
                for thread in rec["threads"] or []:
                    self._touch(thread, lsn)
                    self._forget(thread)

    def _put(self, rec: dict[str, Any]) -> None:
        key = (rec["thread"], rec["ns"])
        head = self.entries.get(key)
        if head is None:
            return
        cid = rec["id"]
        row = [rec["thread"], rec["ns"], cid, rec["parent"], rec["ctype"], rec["cp"]]
        row += [rec["mtype"], rec["meta"], rec["ts"]]
        if head.row is None or cid > head.row[2]:
            early = head.early.pop(cid, {})
            head.early = {c: w for c, w in head.early.items() if c > cid}
            head.row, head.writes = row, early
        elif cid == head.row[2]:
            head.row = row  # put again: the row is replaced, its writes stay
        else:
            return
        self._resize(key, head)

    def _write(self, rec: dict[str, Any]) -> None:
        key = (rec["thread"], rec["ns"])
        head = self.entries.get(key)
        if head is None:
            return
        cid = rec["id"]
        if head.row is not None and cid == head.row[2]:
            target = head.writes
        elif head.row is None or cid > head.row[2]:
            if cid not in head.early and len(head.early) >= MAX_EARLY:
                del self.entries[key]
                return
            target = head.early.setdefault(cid, {})
        else:
            return  # an older checkpoint's writes: not the head's
        for idx, channel, vtype, value in rec["writes"]:
            if idx >= 0 and (rec["task"], idx) in target:
                continue  # a write saved at the same (task, idx) stays
            target[(rec["task"], idx)] = [rec["task"], idx, channel, vtype, value, rec["path"]]
        self._resize(key, head)

    def _touch(self, thread: str, lsn: int) -> None:
        self.lsns[thread] = lsn
        self.lsns.move_to_end(thread)
        if len(self.lsns) > _LSNS:
            gone, gone_lsn = self.lsns.popitem(last=False)
            self.floor = max(self.floor, gone_lsn)
            self._forget(gone)  # its entries could no longer be checked against a seed

    def _forget(self, thread: str) -> None:
        for key in [k for k in self.entries if k[0] == thread]:
            del self.entries[key]

    def _keep(self, key: tuple[str, str], head: _Head) -> None:
        if head.size > MAX_ENTRY_BYTES:
            return
        self.entries[key] = head
        self.entries.move_to_end(key)
        while len(self.entries) > MAX_ENTRIES:
            self.entries.popitem(last=False)

    def _resize(self, key: tuple[str, str], head: _Head) -> None:
        head.size = _size(head.row, head.writes) + sum(_size(None, w) for w in head.early.values())
        if head.size > MAX_ENTRY_BYTES:
            del self.entries[key]


def _size(row: list[Any] | None, writes: Writes) -> int:
    n = len(row[5]) + len(row[7]) if row is not None else 0
    return n + sum(len(w[4]) for w in writes.values())
