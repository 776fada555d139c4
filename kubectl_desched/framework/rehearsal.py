"""Rounds tried in memory: a plan's moves applied to the state as the placement estimate lands them, then the
policy run again on the result, as `--rounds` would on the cluster once the replacements are Ready. What it is for:
saying how many rounds (and which args) reach a plugin's goal before the operator confirms anything."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from kubectl_desched.framework.placement import Destination
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy import Policy
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.model.objects import Pod
from kubectl_desched.model.state import ClusterState

# Past this many pods a rehearsal (several whole plans) costs more than the advice is worth.
REHEARSE_LIMIT_PODS = 5_000


def after_moves(plan: EvictionPlan) -> ClusterState:
    """The state once every planned pod is gone and its replacement runs where the estimate lands it: Ready, so
    each PodDisruptionBudget allows what it allowed before (the budgets are kept as they were read)."""
    base: ClusterState = getattr(plan.state, "base", plan.state)
    placement = plan.placement
    moved: dict[int, Destination | None] = {id(c.pod): placement.of(c) if placement else None
                                            for c in plan.candidates}
    stamp = base.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    pods: list[Pod] = []
    for p in base.pods:
        if id(p) not in moved:
            pods.append(p)
            continue
        dest = moved[id(p)]
        if dest is None or not dest.recreated:
            continue  # nothing recreates it
        # Pending (no node fits) stays unbound, as the scheduler would leave it.
        pods.append(msgspec.structs.replace(p, node_name=dest.node or "", uid=f"{p.uid}+", created=stamp,
                                            started=stamp if dest.node else None,
                                            phase="Running" if dest.node else "Pending"))
    return ClusterState(base.nodes.values(), pods, base.pdbs, source=base.source, extra=base.extra, now=base.now,
                        server_version=base.server_version)


@dataclass
class Rehearsal:
    """Rounds that planned something, the moves they made, and the nodes still over the goal after the last."""

    rounds: int = 0
    moves: int = 0
    left: list[str] = field(default_factory=list)
    plans: int = 0  # plans made (what a try costs)


def rehearse(policy: Policy, state: ClusterState, scope: Scope, left_after: Callable[[EvictionPlan], list[str]],
             max_rounds: int, first: EvictionPlan | None = None) -> Rehearsal:
    """Plan, land, plan again, up to max_rounds rounds, until nothing is left over the goal (left_after reads the
    nodes a plan leaves over it) or a round plans nothing. `first`: the first round's plan, already made."""
    out = Rehearsal()
    for i in range(max_rounds):
        if i == 0 and first is not None:
            plan = first
        else:
            plan = run(policy, state, scope)
            out.plans += 1
        out.left = left_after(plan)
        if not plan.candidates:
            break
        out.rounds += 1
        out.moves += len(plan.candidates)
        if not out.left:
            break
        state = after_moves(plan)
    return out
