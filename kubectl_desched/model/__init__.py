"""What the tool knows of a cluster, apart from how it was read: the object types plugins read (objects.py; their
wire shapes, wire.py, and the API's field types, shapes.py), the cluster state with its indexes (state.py), actual
usage (metrics.py), label and field selectors, quantities, durations and the API's name rules. No I/O.

Importing a leaf (durations, names, quantity) loads nothing else, so the command line's checks start without the
object model; the object types are loaded on first use of a name here."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubectl_desched.model.objects import (
        Node,
        Pod,
        PodDisruptionBudget,
        Taint,
        node_from_json,
        pdb_from_json,
        pod_from_json,
    )

__all__ = ["Node", "Pod", "PodDisruptionBudget", "Taint", "node_from_json", "pdb_from_json", "pod_from_json"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.objects"), name)
