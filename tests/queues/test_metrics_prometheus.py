"""``lil metrics`` scraped by a real Prometheus server (Debian's ``prometheus``), started by the
test on free loopback ports with a temporary config and data directory; the series it stores
must agree with the journal, and no label may carry a run id."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import free_port
from tests.queues.chaos import metrics_journal

LIL = str(Path(sys.executable).with_name("lil"))


def _query(port: int, promql: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as r:
        return list(json.loads(r.read())["data"]["result"])


@pytest.mark.timeout(180)
def test_prometheus_scrapes_lil_metrics_and_agrees_with_the_journal(tmp_path: Path) -> None:
    prometheus = shutil.which("prometheus")
    assert prometheus, "install Debian's prometheus (make test installs SYSTEM_PACKAGES)"
    journal_path, env = metrics_journal(tmp_path)
    from letitloop.journal import open_journal

    journal = open_journal(journal_path)
    metrics_port, prom_port = free_port(), free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: lil\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{metrics_port}']\n"
    )
    procs = [
        subprocess.Popen(
            [LIL, "metrics", "--port", str(metrics_port), "--host", "127.0.0.1"],
            cwd=tmp_path, env=env, start_new_session=True,
        ),
        subprocess.Popen(
            [prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        ),
    ]  # fmt: skip
    try:
        depth: list[dict[str, Any]] = []
        deadline = time.monotonic() + 90
        while not depth and time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                depth = _query(prom_port, 'lil_queue_depth{queue="chaos"}')
            except OSError:
                pass
        assert depth, "Prometheus never stored lil_queue_depth"
        [q] = [q for q in journal.queues() if q.spec.name == "chaos"]
        assert float(depth[0]["value"][1]) == q.queued == 4
        completed = _query(prom_port, 'sum(lil_runs{state="completed"})')
        runs = journal.list_runs(status="completed", limit=1000)
        assert float(completed[0]["value"][1]) == len(runs) == 3
        steps = _query(prom_port, 'lil_step_duration_seconds_count{step="one"}')
        assert float(steps[0]["value"][1]) == 3
        oldest = _query(prom_port, 'lil_queue_oldest_age_seconds{queue="chaos"}')
        assert 0 < float(oldest[0]["value"][1]) < 600
        url = f"http://127.0.0.1:{prom_port}/api/v1/series?" + urllib.parse.urlencode(
            {"match[]": '{__name__=~"lil_.*"}'}
        )
        with urllib.request.urlopen(url, timeout=10) as r:
            series = json.loads(r.read())["data"]
        run_ids = {r.run_id for r in runs} | {i.run_id for i in journal.queue_items()}
        labels = {v for s in series for v in s.values()}
        assert len(series) > 20 and not labels & run_ids, labels & run_ids
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(30)
