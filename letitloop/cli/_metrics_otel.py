"""``lil metrics --otel``: the journal's metrics pushed through OpenTelemetry.

The families are ``operate.collect``'s, the same as the Prometheus exposition (``cli._metrics``):
each gauge an observable gauge, each counter an observable counter (its cumulative total), and
the step-duration histogram as its cumulative counters ``_bucket`` (attribute ``le``), ``_count``
and ``_sum``, exactly the series Prometheus exposes: OpenTelemetry's API has no observable
histogram, and a histogram the journal already aggregated can only be pushed so. One export
reads the journal once (its callbacks share one ``collect``). No attribute carries a run id.

The SDK is the one the process has: a global SDK ``MeterProvider`` (``opentelemetry-instrument
lil metrics --otel``), else one built from OpenTelemetry's standard environment:
``OTEL_METRICS_EXPORTER`` (``otlp``, the default, or ``console``), ``OTEL_METRIC_EXPORT_INTERVAL``
(milliseconds) and the ``OTEL_EXPORTER_OTLP_*`` settings of the OTLP exporter.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from letitloop.cli._shared import LilError
from letitloop.journal import Journal
from letitloop.operate import BUCKETS, Family, collect

FRESH = 1.0  # seconds one collect serves the callbacks of an export


class _Snapshot:
    """``collect(journal)``, read at most once per ``FRESH`` seconds (one export's callbacks)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.lock = threading.Lock()
        self.read_at = -FRESH
        self.families: dict[str, Family] = {}

    def get(self) -> dict[str, Family]:
        with self.lock:
            if time.monotonic() - self.read_at >= FRESH:
                self.families = {f.name: f for f in collect(self.journal)}
                self.read_at = time.monotonic()
            return self.families


def _attrs(names: Iterable[str], values: Iterable[str]) -> dict[str, str]:
    return dict(zip(names, values, strict=True))


def register(meter_provider: Any, journal: Journal) -> list[Any]:
    """Observable instruments for every family of ``journal`` on ``meter_provider`` (an SDK
    ``MeterProvider``); returns them (they live as long as the provider)."""
    from opentelemetry.metrics import CallbackOptions, Observation

    meter = meter_provider.get_meter("letitloop")
    snapshot = _Snapshot(journal)
    edges = [*(str(b) for b in BUCKETS), "+Inf"]

    def samples(name: str, part: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            family = snapshot.get().get(name)
            if family is None:
                return []
            out = []
            for labels, value in family.samples:
                attrs = _attrs(family.labels, labels)
                if part == "bucket":
                    out += [
                        Observation(count, attrs | {"le": le})
                        for le, count in zip(edges, value[0], strict=True)
                    ]
                elif part == "count":
                    out.append(Observation(value[0][-1], attrs))
                elif part == "sum":
                    out.append(Observation(value[1], attrs))
                else:
                    out.append(Observation(value, attrs))
            return out

        return observe

    made = []
    for family in snapshot.get().values():
        if family.kind == "histogram":
            for part in ("bucket", "count", "sum"):
                made.append(
                    meter.create_observable_counter(
                        f"{family.name}_{part}",
                        callbacks=[samples(family.name, part)],
                        description=f"{family.help} ({part})",
                    )
                )
            continue
        create = (
            meter.create_observable_counter
            if family.kind == "counter"
            else meter.create_observable_gauge
        )
        made.append(
            create(family.name, callbacks=[samples(family.name, "")], description=family.help)
        )
    return made


def meter_provider() -> tuple[Any, bool]:
    """The process's SDK ``MeterProvider`` if one is set, else one from the environment;
    and whether this command made it (then it shuts it down)."""
    try:
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    except ImportError:
        raise LilError(
            "lil metrics --otel needs the OpenTelemetry SDK",
            fix="pip install opentelemetry-sdk (and opentelemetry-exporter-otlp to push over OTLP)",
        ) from None
    current = metrics.get_meter_provider()
    if isinstance(current, MeterProvider):
        return current, False
    reader = PeriodicExportingMetricReader(_exporter())
    return MeterProvider(metric_readers=[reader]), True


def _exporter() -> Any:
    wanted = os.environ.get("OTEL_METRICS_EXPORTER", "otlp").split(",")[0].strip().lower()
    if wanted == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter(
            out=sys.stdout, formatter=lambda data: data.to_json(indent=None) + "\n"
        )
    if wanted == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[import-not-found]
                OTLPMetricExporter,
            )
        except ImportError:
            try:
                from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (  # type: ignore[import-not-found]
                    OTLPMetricExporter,
                )
            except ImportError:
                raise LilError(
                    "OTEL_METRICS_EXPORTER is otlp (the default), and no OTLP exporter is "
                    "installed",
                    fix="pip install opentelemetry-exporter-otlp, or set "
                    "OTEL_METRICS_EXPORTER=console to print the metrics",
                ) from None
        return OTLPMetricExporter()
    raise LilError(
        f"OTEL_METRICS_EXPORTER={wanted!r} is not an exporter lil metrics knows",
        fix="set OTEL_METRICS_EXPORTER to otlp or console",
    )


def push(journal: Journal, once: bool) -> None:
    """Register the journal's instruments and push until interrupted (``once``: one export)."""
    provider, ours = meter_provider()
    register(provider, journal)
    if once:
        provider.force_flush()
        if ours:
            provider.shutdown()
        return
    print("lil metrics: pushing OpenTelemetry metrics (Ctrl+C stops)", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        if ours:
            provider.shutdown()
