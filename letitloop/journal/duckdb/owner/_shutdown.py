"""A clean stop: fold everything, close DuckDB, seal the log, and leave a warm-start snapshot for
the next owner."""

from __future__ import annotations

import sys
import time

from letitloop.errors import LetItLoopError
from letitloop.journal.duckdb.owner import _warm
from letitloop.journal.duckdb.owner._base import (
    SNAPSHOT_SECONDS,
    OwnerBase,
)

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any


class Shutdown(OwnerBase):
    """Stopping cleanly and writing the warm-start snapshot."""

    def _shutdown(self) -> None:
        if self.held:
            self._commit([])
        self.listener.close()
        try:
            self.paths.socket.unlink()
        except FileNotFoundError:
            pass
        self.load_now.set()  # a warm start that served without DuckDB folds it all now
        self.jobs.put(("exit",))
        self.db_thread.join()
        if self.queries is not None:
            self.queries.close()
        saver = getattr(self, "saver", None)  # the queue board's saves commit before the close
        if saver is not None:
            saver.close()
        self._snapshot()
        self.notifier.close()
        self.store.close()
        self.log.seal(self.store.folded_lsn)  # all folded: the log need not keep a byte
        if self._warm_runs is not None:  # after close: it names the DuckDB file as closed
            try:
                _warm.write(
                    self.paths,
                    self.store.journal_id,
                    self.store.schema_version,
                    self.store.folded_lsn,
                    self._warm_runs,
                )
            except (OSError, LetItLoopError) as exc:  # the next owner starts cold: said here
                print(f"warm-start snapshot not written: {exc}", file=sys.stderr, flush=True)
        self.log.close()
        try:
            self.paths.pid_file.unlink()
        except FileNotFoundError:
            pass

    def _snapshot(self) -> None:
        """At a clean stop, everything folded, DuckDB still open: the unfinished runs in memory,
        most recently updated first, as DuckDB has them (written once DuckDB is closed)."""
        if self.store.folded_lsn != self.log.end:
            self._warm_runs: list[dict[str, Any]] | None = None
            return
        unfinished = sorted(
            (e for e in self.state.runs.values() if e.status != "completed"),
            key=lambda e: e.updated,
            reverse=True,
        )
        runs = []
        until = time.monotonic() + SNAPSHOT_SECONDS
        for entry in unfinished[: _warm.MAX_RUNS]:
            data = self.store.load_run(entry.run_id)
            if data is not None:
                runs.append(data)
            if time.monotonic() > until:  # a stop must not wait long for it
                break
        self._warm_runs = runs
