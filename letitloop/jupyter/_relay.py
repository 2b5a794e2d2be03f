"""Journal events, live, on the Jupyter server's event bus (``/api/events/subscribe``).

One ``Journal.subscribe()`` per server (started by the first API request, so a server whose
user never opens letitloop starts no journal owner) is relayed as schema-validated events; the
lab extension listens with ``serviceManager.events``. The journal pushes; nothing polls. The
subscription's callback runs on the client's reader thread, so each emit is handed to the
server's IOLoop, where the event bus's listeners must run.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from letitloop.jupyter._api import Context
from letitloop.operate import event_json

if TYPE_CHECKING:
    from jupyter_events import EventLogger
    from tornado.ioloop import IOLoop

    from letitloop.journal import EventInfo, Subscription

SCHEMA_ID = "https://letitloop.dev/events/journal"
SCHEMA_FILE = Path(__file__).with_name("events.yaml")
MAX_BATCH = 500  # events relayed one by one per push; beyond that, one "resync" says re-read


class Relay:
    """Relays one journal's events to the event bus, from the first ``start`` until ``close``."""

    def __init__(self, ctx: Context, logger: EventLogger, loop: IOLoop) -> None:
        self.ctx = ctx
        self.logger = logger
        self.loop = loop
        self._sub: Subscription | None = None
        self._lock = threading.Lock()
        self.relayed = 0

    @staticmethod
    def register(logger: EventLogger) -> None:
        logger.register_event_schema(SCHEMA_FILE)

    def start(self) -> None:
        """Subscribe once (idempotent; called from a worker thread by the first request)."""
        with self._lock:
            if self._sub is None:
                self._sub = self.ctx.journal.subscribe(self._deliver)

    def _deliver(self, events: list[EventInfo]) -> None:
        if not events or len(events) > MAX_BATCH:  # missed events: every page re-reads state
            batch: list[dict[str, Any]] = [
                {
                    "seq": 0,
                    "run_id": "",
                    "kind": "resync",
                    "position": None,
                    "name": None,
                    "ts": 0.0,
                }
            ]
        else:
            batch = [event_json(e) for e in events]
        self.loop.add_callback(self._emit, batch)

    def _emit(self, batch: list[dict[str, Any]]) -> None:
        for data in batch:
            self.logger.emit(schema_id=SCHEMA_ID, data=_clean(data))
            self.relayed += 1

    def close(self) -> None:
        with self._lock:
            if self._sub is not None:
                self._sub.close()
                self._sub = None


def _clean(data: dict[str, Any]) -> dict[str, Any]:
    """Nulls dropped (the schema types each field once) and names bounded in size."""
    out = {k: v for k, v in data.items() if v is not None}
    if isinstance(out.get("name"), str):
        out["name"] = out["name"][:200]
    return out
