"""What a plan measured the nodes by, beside their requests: the Prometheus queries the loader evaluated (the
state's "Prometheus" readings), for the plan's `Measured:` line, -o json, reports and explain."""

from __future__ import annotations

from typing import Any

from kubectl_desched.evictors.base import timestamp
from kubectl_desched.model.metrics import PROMETHEUS, PrometheusReading
from kubectl_desched.model.state import ClusterState


def measurements(state: ClusterState) -> list[dict[str, Any]]:
    """The Prometheus queries the plan read: what, where, when, and each instance's value (-o json, reports)."""
    readings: list[PrometheusReading] = list(state.extra.get(PROMETHEUS) or ())
    return [{"source": "Prometheus", "query": r.query, "endpoint": r.endpoint,
             "evaluatedAt": timestamp(r.evaluated_at), "warnings": list(r.warnings),
             "values": dict(sorted(r.values.items()))} for r in readings]


def measured_lines(state: ClusterState) -> list[str]:
    """The plan's `Measured:` lines, one per query."""
    return [f"Measured: Prometheus {m['query']} at {m['evaluatedAt']}, {m['endpoint']}"
            for m in measurements(state)]
