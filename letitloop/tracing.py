"""OpenTelemetry tracing of runs and steps: the public home of ``use_tracer_provider``.

    from letitloop.tracing import use_tracer_provider
    use_tracer_provider(provider)   # trace runs with this SDK provider, without making it global

Tracing also turns on with ``LIL_OTEL=1`` or when the application installs a global tracer
provider (see docs/tracing.md). This module imports nothing from OpenTelemetry, and
``import letitloop`` does not import it.
"""

from __future__ import annotations

from letitloop.kernel import use_tracer_provider

__all__ = ["use_tracer_provider"]
