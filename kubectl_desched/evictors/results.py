"""The Eviction API's results table after a run: one row per confirmed candidate, its outcome coloured."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.sanitize import LINE_LIMIT, one_line
from kubectl_desched.term.tables import plain_table

if TYPE_CHECKING:
    from kubectl_desched.term.color import Painter

OUTCOME_COLOR = {"evicted": "green", "would evict": "green", "created": "green", "succeeded": "green",
                 "gone": "yellow", "terminating": "yellow", "conflict": "yellow", "blocked": "yellow",
                 "interrupted": "yellow"}


def results_table(results: Sequence[EvictionResult], paint: Painter) -> str:
    rows = [[r.candidate.pod.namespace, r.candidate.pod.name, r.candidate.pod.node_name,
             paint(r.outcome, OUTCOME_COLOR.get(r.outcome, "red")), one_line(r.message, LINE_LIMIT)]
            for r in results]  # a message may quote the server: one printable line per row
    return plain_table(rows, ["NAMESPACE", "POD", "NODE", "RESULT", "MESSAGE"])
