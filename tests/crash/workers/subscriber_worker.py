"""A journal subscriber (what lil-tui and the editor do), for the slow-subscriber tests.

    python subscriber_worker.py JOURNAL

Prints READY once subscribed, ``EVENTS <n>`` for each pushed batch and ``REREAD`` when the
subscription was re-made (its callback gets an empty batch: re-read, something may be missed).
"""

import sys
import time

from letitloop import open_journal


def on_events(events: list) -> None:  # type: ignore[type-arg]
    print(f"EVENTS {len(events)}" if events else "REREAD", flush=True)


sub = open_journal(sys.argv[1]).subscribe(on_events)
print("READY", flush=True)
while True:
    time.sleep(1)
