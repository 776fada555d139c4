"""This plugin's cases on kubectl-desched's testing face: API objects built by kubectl_desched.testing and run
through kubectl-desched's own registry, policy decoding and runner, as `kubectl desched --plugin` runs them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_desched.testing import ClusterState, EvictionPlan, Obj, node, run_plugin

PLUGIN = "RemovePodsFromCordonedNodes"


def with_spare(objs: list[Obj] | ClusterState) -> list[Obj] | ClusterState:
    """A descheduling run needs two Ready nodes, so a one-node case gets an empty spare."""
    if isinstance(objs, ClusterState):
        return objs
    ready = [o for o in objs if o["kind"] == "Node" and o["status"]["conditions"][0]["status"] == "True"]
    return objs if len(ready) >= 2 else [*objs, node("spare")]


def plan_for(objs: list[Obj] | ClusterState, args: Mapping[str, Any] | None = None, *,
             evictor_args: Mapping[str, Any] | None = None, limits: Mapping[str, int] | None = None,
             respect_pdbs: bool = True) -> EvictionPlan:
    """The plugin found through its entry point, in a one-profile policy like `--plugin` builds."""
    return run_plugin(PLUGIN, with_spare(objs), args, evictor_args=evictor_args, limits=limits,
                      respect_pdbs=respect_pdbs)
