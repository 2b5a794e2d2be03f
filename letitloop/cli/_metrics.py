"""``lil metrics``: the journal as Prometheus metrics (text exposition, prometheus-client).

Families come from ``operate.collect`` at each scrape; this module only translates them into
prometheus-client's families and serves them (``pip install 'letitloop[metrics]'``).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from letitloop.cli._shared import LilError, journal_option, open_cli_journal
from letitloop.journal import Journal
from letitloop.operate import BUCKETS, collect


def _registry(journal: Journal) -> Any:
    try:
        from prometheus_client import CollectorRegistry
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )
    except ImportError:
        raise LilError(
            "lil metrics needs prometheus-client", fix="pip install 'letitloop[metrics]'"
        ) from None

    class JournalCollector:
        def collect(self) -> Any:
            for f in collect(journal):
                if f.kind == "histogram":
                    h = HistogramMetricFamily(f.name, f.help, labels=list(f.labels))
                    for labels, (counts, total) in f.samples:
                        edges = [*(str(b) for b in BUCKETS), "+Inf"]
                        h.add_metric(list(labels), list(zip(edges, counts, strict=True)), total)
                    yield h
                    continue
                cls = CounterMetricFamily if f.kind == "counter" else GaugeMetricFamily
                m = cls(f.name, f.help, labels=list(f.labels))
                for labels, value in f.samples:
                    m.add_metric(list(labels), value)
                yield m

    registry = CollectorRegistry(auto_describe=False)
    registry.register(JournalCollector())
    return registry


@click.command("metrics")
@click.option("--port", type=click.IntRange(0, 65535), default=9464, show_default=True)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: all)."
)
@click.option("--once", is_flag=True, help="Print (or push) the metrics once and exit.")
@click.option(
    "--otel",
    is_flag=True,
    help="Push them with OpenTelemetry (OTEL_METRICS_EXPORTER, OTEL_METRIC_EXPORT_INTERVAL).",
)
@journal_option
def metrics_cmd(port: int, host: str, once: bool, otel: bool) -> None:
    """Serve the journal's metrics for Prometheus at http://HOST:PORT/metrics, or push them.

    Runs by state, step latency histograms, retries, dead letters, approvals waiting, cost and
    tokens by model, rate-limit waits, queue depth and age, workers and heartbeats, the owner's
    fold lag. Labels never carry a run id. With --otel, the same families go out through the
    OpenTelemetry SDK (the process's, else one from OpenTelemetry's environment variables).

    \b
    Example:
        lil metrics --port 9464
        lil metrics --once
        OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 lil metrics --otel
    """
    if otel:
        from letitloop.cli._metrics_otel import push

        push(open_cli_journal(), once)
        return
    registry = _registry(open_cli_journal())
    from prometheus_client import generate_latest, start_http_server

    if once:
        sys.stdout.write(generate_latest(registry).decode())
        return
    server, _thread = start_http_server(port, addr=host, registry=registry)
    print(f"lil metrics: http://{host}:{server.server_port}/metrics", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
