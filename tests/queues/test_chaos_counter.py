"""The chaos tests' counting server itself: what it counts as running at once must be what runs
(a fast unit test beside the real-process chaos in test_queue_chaos.py)."""

from __future__ import annotations

import json
import urllib.request

from tests.queues.chaos import counting_server


def _post(url: str, path: str, body: dict[str, object]) -> None:
    req = urllib.request.Request(url + path, data=json.dumps(body).encode())
    with urllib.request.urlopen(req, timeout=30) as r:
        r.read()


def test_an_enter_read_after_its_workers_kill_is_not_counted_as_running() -> None:
    # A worker SIGKILLed just after sending /enter: the server may read the request only after
    # the test saw the worker die and forgot it. Counting it left a step "running" for ever,
    # and the 1,000-run benchmark reported 7-8 at once against a limit of 6 that held.
    with counting_server() as (url, counts):
        for pid in (101, 101, 102, 102, 103, 103):
            _post(url, "/enter", {"pid": pid})
        assert counts.max_total == 6 and counts.max_per_pid == 2
        counts.forget(103)  # killed mid-step
        _post(url, "/enter", {"pid": 103})  # its last request, read after its death
        _post(url, "/enter", {"pid": 104})  # the worker that took its runs over
        _post(url, "/enter", {"pid": 104})
        assert counts.max_total == 6 and counts.now == {101: 2, 102: 2, 104: 2}
        assert counts.late_enters == 1
