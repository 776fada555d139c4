"""PodDisruptionBudget objects built from their plans."""

from __future__ import annotations

from typing import Any

from clustergen.managed import managed
from clustergen.plans import Ctx, PdbPlan
from clustergen.units import DAY, ts


def build_pdb(b: PdbPlan, ctx: Ctx) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(b.match_labels)}}
    if b.min_available is not None:
        spec["minAvailable"] = b.min_available
    if b.max_unavailable is not None:
        spec["maxUnavailable"] = b.max_unavailable
    desired, allowed = b.desired_healthy(), b.disruptions_allowed()
    changed = max(b.created + 30, ctx.now - ctx.rng.randint(60, 20 * DAY))
    status = {
        "conditions": [
            {
                "lastTransitionTime": ts(changed),
                "message": "",
                "observedGeneration": 1,
                "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                "status": "True" if allowed > 0 else "False",
                "type": "DisruptionAllowed",
            }
        ],
        "currentHealthy": b.healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": allowed,
        "expectedPods": b.expected,
        "observedGeneration": 1,
    }
    meta: dict[str, Any] = {
        "creationTimestamp": ts(b.created),
        "generation": 1,
        "name": b.name,
        "namespace": b.namespace,
        "resourceVersion": ctx.rv(),
        "uid": ctx.uid(),
    }
    if b.helm_release:
        meta["annotations"] = {
            "meta.helm.sh/release-name": b.helm_release,
            "meta.helm.sh/release-namespace": b.namespace,
        }
        meta["labels"] = {"app.kubernetes.io/managed-by": "Helm", **b.match_labels}
    obj = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": spec, "status": status}
    if ctx.managed_fields:
        meta_fields = {k: meta[k] for k in ("annotations", "labels") if k in meta}
        meta["managedFields"] = [
            managed(
                "helm" if b.helm_release else "kubectl-client-side-apply",
                b.created,
                {"metadata": meta_fields, "spec": spec},
                api="policy/v1",
            ),
            managed("kube-controller-manager", changed, {"status": status}, subresource="status", api="policy/v1"),
        ]
    return obj


