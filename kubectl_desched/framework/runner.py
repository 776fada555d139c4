"""Run a policy once: every profile's Deschedule plugins, then every profile's Balance plugins, in file
order, sharing one plan (and its limits) so each plugin sees the evictions planned before it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubectl_desched.errors import ConfigError, DeschedError
from kubectl_desched.framework.failures import PluginFailed, describe
from kubectl_desched.framework.plan import FUTILE_STREAK, EvictionPlan, PluginHandle, ProfileEvictor
from kubectl_desched.framework.policy import PluginUse, Policy
from kubectl_desched.framework.types import BalancePlugin, DeschedulePlugin, Plugin
from kubectl_desched.framework.workloads import warn_whole_workloads
from kubectl_desched.model.label_selectors import Matcher
from kubectl_desched.model.objects import Node, Pod
from kubectl_desched.model.state import ClusterState


@dataclass
class Scope:
    """What the user pointed the run at: namespaces and pod labels for candidates, nodes for the plugins."""

    namespaces: set[str] | None = None  # None: all namespaces
    excluded_namespaces: set[str] = field(default_factory=set)
    pod_selector: Matcher | None = None
    pod_selector_text: str = ""
    pod_fields: Callable[[Pod], bool] | None = None  # --field-selector, answered by the server or the snapshot
    pod_fields_text: str = ""
    node_names: set[str] | None = None
    node_selector: Matcher | None = None

    def check_pod(self, pod: Pod) -> str | None:
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            return f"namespace {pod.namespace} not in scope (-n {','.join(sorted(self.namespaces))})"
        if pod.namespace in self.excluded_namespaces:
            return f"namespace {pod.namespace} excluded (--exclude-namespace)"
        if self.pod_selector is not None and not self.pod_selector(pod.labels):
            return f"labels do not match -l {self.pod_selector_text}"
        if self.pod_fields is not None and not self.pod_fields(pod):
            return f"fields do not match --field-selector {self.pod_fields_text}"
        return None

    def node_ok(self, node: Node) -> bool:
        if self.node_names is not None and node.name not in self.node_names:
            return False
        return self.node_selector is None or self.node_selector(node.labels)


def considered_nodes(state: ClusterState, policy: Policy, scope: Scope) -> list[Node]:
    """Ready nodes matching the policy's and the user's node selection, by name."""
    sel = policy.node_selector
    return sorted(
        (n for n in state.nodes.values() if n.ready and scope.node_ok(n) and (sel is None or sel(n.labels))),
        key=lambda n: n.name,
    )


FEW_NODES = "fewer than two Ready nodes match the policy's nodeSelector: nothing to do (upstream skips such a cycle)"


def _too_few_nodes(state: ClusterState, policy: Policy, plan: EvictionPlan) -> bool:
    """Upstream runs no plugin at all unless at least two Ready nodes match the policy's nodeSelector (our own
    --nodes/--node-selector scope does not count: it narrows a run the cluster-wide descheduler would make)."""
    sel = policy.node_selector
    eligible = [n for n in state.nodes.values() if n.ready and (sel is None or sel(n.labels))]
    if len(eligible) >= 2:
        return False
    plan.messages.append(("descheduler", FEW_NODES))
    for node in eligible:
        for pod in state.pods_on_node(node.name):
            plan.note(pod, "descheduler", FEW_NODES)
    return True


def _build(use: PluginUse, handle: PluginHandle, source: str) -> Plugin:
    try:
        return use.spec.factory(use.args, handle)
    except ConfigError as e:
        raise ConfigError(f"{use.path}{'.' + e.path if e.path else ''}", e.message, e.source or source) from None
    except DeschedError:
        raise
    except Exception as e:  # a third-party plugin's constructor
        line, trace = describe(e, _plugin_class(use))
        raise PluginFailed(f"plugin {use.spec.name} could not start: {line}", trace) from None


def _plugin_class(use: PluginUse) -> type:
    factory = use.spec.factory
    return factory if isinstance(factory, type) else type(factory)


def reads_one_node(use: PluginUse) -> bool:
    factory = use.spec.factory
    return isinstance(factory, type) and issubclass(factory, Plugin) and factory.reads_one_node(use.args)


def needs_whole_cluster(policy: Policy) -> str | None:
    """Why no verdict at all can come from one node alone: limits or filters that look across nodes."""
    if policy.limits.total is not None or policy.limits.per_namespace is not None:
        return "maxNoOfPodsToEvictTotal and maxNoOfPodsToEvictPerNamespace count evictions on every node"
    return filters_read_other_nodes(policy)


def filters_read_other_nodes(policy: Policy) -> str | None:
    """Which filter reads pods beyond the nodes in scope (nodeFit's room elsewhere, minReplicas' siblings)."""
    for prof in policy.profiles:
        for use in (*prof.filters, *prof.pre_eviction_filters):
            if not reads_one_node(use):
                return f"{use.spec.name} with these args looks at other nodes"
    return None


def run(policy: Policy, state: ClusterState, scope: Scope,
        on_plugin: Callable[[str, str], None] | None = None, *, one_node: bool = False) -> EvictionPlan:
    """With one_node, the state holds one node and its pods (explain's quick read): plugins that need the
    other nodes are not run, only estimated where they can be (Plugin.estimate_node) and listed in the plan."""
    plan = EvictionPlan(state, policy.limits)
    plan.one_node = one_node
    all_nodes = considered_nodes(state, policy, scope)
    runs: list[tuple[str, Plugin, list[Node]]] = []
    estimates: list[tuple[Plugin, list[Node]]] = []
    for prof in policy.profiles:
        evictor = ProfileEvictor(plan, prof.name, scope.check_pod)
        plan.evictors.append(evictor)
        instances: dict[str, Plugin] = {}

        def instance(use: PluginUse, evictor: ProfileEvictor = evictor, instances: dict[str, Any] = instances) -> Any:
            if use.spec.name not in instances:
                instances[use.spec.name] = _build(use, PluginHandle(plan, evictor, use.spec.name), policy.source)
            return instances[use.spec.name]

        evictor.filters = [instance(u) for u in prof.filters]
        evictor.plugins = instances
        evictor.pre_filters = [instance(u) for u in prof.pre_eviction_filters]
        nodes = [n for n in all_nodes if prof.node_selector is None or prof.node_selector(n.labels)]
        for point, uses in (("deschedule", prof.deschedule), ("balance", prof.balance)):
            for u in uses:
                if one_node and not reads_one_node(u):
                    estimates.append((instance(u), nodes))
                else:
                    runs.append((point, instance(u), nodes))
    # The quick read of one node cannot count the cluster's Ready nodes; the full read (--full) does.
    if not one_node and _too_few_nodes(state, policy, plan):
        return plan
    for point in ("deschedule", "balance"):
        for p, plugin, nodes in runs:
            if p != point:
                continue
            if on_plugin:
                on_plugin(point, plugin.name)
            try:
                if point == "deschedule" and isinstance(plugin, DeschedulePlugin):
                    plugin.deschedule(nodes)
                elif isinstance(plugin, BalancePlugin):
                    plugin.balance(nodes)
            except (ConfigError, DeschedError):
                raise
            except Exception as e:  # one failing plugin does not hide the others' results
                line, trace = describe(e, type(plugin))
                plan.errors.append(f"plugin {plugin.name} failed: {line}")
                plan.traces[plan.errors[-1]] = trace
    for plugin, nodes in estimates:  # after the others, so the node's usage leaves out what they plan to evict
        _estimate(plan, plugin, nodes)
    for name, left in plan.futile_stops.items():
        streak = plan.futile_stop_streak.get(name, FUTILE_STREAK)
        plan.messages.append((name, f"left {len(left)} node(s) (e.g. {left[0]}) after {streak} moves in a "
                                    "row from each would change nothing; explain node says why"))
    warn_whole_workloads(plan, plan.state)  # as the plan leaves the cluster
    return plan


def _estimate(plan: EvictionPlan, plugin: Plugin, nodes: list[Node]) -> None:
    results = [plugin.estimate_node(n) for n in nodes] if plugin.estimates_nodes() else [None]
    if any(r is None for r in results):
        plan.not_evaluated.append(plugin.name)
        return
    plan.estimated.append(plugin.name)
    for pods in results:
        for pod, why in pods or ():
            plan.maybe[id(pod)].append((plugin.name, why))
