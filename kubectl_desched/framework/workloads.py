"""After planning: warn where a plan would take most of a workload at once. Upstream evicts such pods back to back;
an operator at a terminal should hear it before saying yes, and be offered the pacing flags."""

from __future__ import annotations

from collections import Counter, defaultdict

from kubectl_desched.framework.placement import workload_of
from kubectl_desched.framework.plan import Candidate, EvictionPlan
from kubectl_desched.model.objects import Pod
from kubectl_desched.model.state import ClusterState


def is_ready(pod: Pod) -> bool:
    return not pod.terminating and pod.ready


def warn_whole_workloads(plan: EvictionPlan, state: ClusterState) -> None:
    """A workload that would lose more than half of its ready pods, and that no PodDisruptionBudget guards,
    gets a warning on each of its candidates (the table, the selector and the line prompt show it)."""
    planned: dict[tuple[str, str, str], list[Candidate]] = defaultdict(list)
    for c in plan.candidates:
        w = workload_of(c.pod)
        if w is not None:
            planned[w].append(c)
    if not planned:
        return
    ready: Counter[tuple[str, str, str]] = Counter()
    guarded: set[tuple[str, str, str]] = set()
    for p in state.pods:  # one pass, whatever the plan removed from the state: the workload as it is now
        w = workload_of(p)
        if w is None or w not in planned:
            continue
        ready[w] += is_ready(p)
        if w not in guarded and state.pdbs_for(p):
            guarded.add(w)
    for w, cands in planned.items():
        # a surge's pod goes only once its replacement is Ready: it takes nothing away
        lost = sum(is_ready(c.pod) for c in cands if c.method != "surge")
        if w in guarded or not ready[w] or lost * 2 <= ready[w]:
            continue
        text = (f"{w[1]} {w[0]}/{w[2]} would lose {lost} of its {ready[w]} ready pods and no PodDisruptionBudget "
                f"guards it: consider --wait-ready or --max-per-workload")
        for c in cands:
            c.warnings.append(text)
