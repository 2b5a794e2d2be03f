"""``lil metrics --otel``: the journal's metrics pushed through the OpenTelemetry SDK are the same
families, with the same values, as the Prometheus exposition; a real ``lil metrics --otel``
process pushes them periodically through the SDK the environment configures."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.queues.chaos import metrics_journal

LIL = str(Path(sys.executable).with_name("lil"))


@pytest.fixture
def journal_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A DuckDB journal with 3 completed runs and 4 runs waiting in the queue ``chaos``."""
    return metrics_journal(tmp_path)


def _points(data: Any) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every data point of an export: (metric, its attributes) -> value."""
    out = {}
    for rm in data["resource_metrics"]:
        for sm in rm["scope_metrics"]:
            for m in sm["metrics"]:
                for p in m["data"]["data_points"]:
                    attrs = frozenset((k, str(v)) for k, v in p["attributes"].items())
                    out[(m["name"], attrs)] = float(p["value"])
    return out


def test_otel_pushes_the_prometheus_families_with_their_values(
    journal_env: tuple[Path, dict[str, str]],
) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from letitloop.cli._metrics import _registry
    from letitloop.cli._metrics_otel import register
    from letitloop.journal import open_journal

    journal = open_journal(journal_env[0])
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    register(provider, journal)
    otel = _points(json.loads(reader.get_metrics_data().to_json()))
    text = generate_latest(_registry(journal)).decode()
    prom = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            name = s.name.removesuffix("_total") if family.type == "counter" else s.name
            labels = dict(s.labels)
            if "le" in labels:  # the same edge, however each side writes the number
                labels["le"] = "+Inf" if labels["le"] == "+Inf" else str(float(labels["le"]))
            prom[(name, frozenset(labels.items()))] = float(s.value)
    otel = {
        (n, frozenset((k, str(float(v)) if k == "le" and v != "+Inf" else v) for k, v in a)): x
        for (n, a), x in otel.items()
    }
    assert len(prom) >= 30
    assert otel.keys() == prom.keys(), otel.keys() ^ prom.keys()
    for key, value in prom.items():  # ages grow between the two reads: the rest is exact
        assert otel[key] == pytest.approx(value, abs=30 if "_age_" in key[0] else 1e-9), key
    assert otel[("lil_queue_depth", frozenset({("queue", "chaos")}))] == 4
    step = frozenset({("workflow", "__main__.quick"), ("step", "one")})
    assert otel[("lil_step_duration_seconds_count", step)] == 3
    provider.shutdown()


@pytest.mark.timeout(120)
def test_lil_metrics_otel_pushes_periodically_through_the_configured_sdk(
    journal_env: tuple[Path, dict[str, str]],
) -> None:
    journal_path, env = journal_env
    env = env | {"OTEL_METRICS_EXPORTER": "console", "OTEL_METRIC_EXPORT_INTERVAL": "300"}
    proc = subprocess.Popen(
        [LIL, "metrics", "--otel"], cwd=journal_path.parents[1], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        exports = []
        t0 = time.monotonic()
        assert proc.stdout is not None
        while len(exports) < 2 and time.monotonic() - t0 < 60:
            line = proc.stdout.readline()
            if line.startswith("{"):
                exports.append((time.monotonic(), _points(json.loads(line))))
        assert len(exports) == 2, proc.stderr.read() if proc.poll() is not None else "slow"
    finally:
        proc.kill()
        proc.wait(30)
    for _, points in exports:
        assert points[("lil_queue_depth", frozenset({("queue", "chaos")}))] == 4
        completed = [
            v for (n, a), v in points.items() if n == "lil_runs" and ("state", "completed") in a
        ]
        assert sum(completed) == 3
    assert exports[1][0] - exports[0][0] < 5  # pushed again by itself, every 0.3 s


def test_an_exporter_lil_metrics_cannot_use_is_refused_plainly(
    journal_env: tuple[Path, dict[str, str]],
) -> None:
    import importlib.util

    def installed(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # its parent package is missing
            return False

    journal_path, env = journal_env
    env = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    cases = [("zipkin", "OTEL_METRICS_EXPORTER='zipkin' is not an exporter")]
    if not installed("opentelemetry.exporter.otlp"):  # the default: OTLP, not installed here
        cases.append(("otlp", "pip install opentelemetry-exporter-otlp"))
    for exporter, said in cases:
        done = subprocess.run(
            [LIL, "metrics", "--otel", "--once"], cwd=journal_path.parents[1],
            env=env | {"OTEL_METRICS_EXPORTER": exporter}, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert done.returncode != 0 and said in done.stderr, done.stderr
