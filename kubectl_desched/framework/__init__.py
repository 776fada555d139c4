"""The plugin framework: the same model as the descheduler v1alpha2 and koord-descheduler frameworks
(Plugin, DeschedulePlugin, BalancePlugin, Evictor, Registry, profiles), run once instead of on a timer.

This package is the one face a plugin imports from: the base classes and the handle, args helpers, flag kinds,
errors, the model types it reads, and time and label/taint helpers (kubectl_desched.testing is the face of its
tests). Its names are loaded on first use, so that `version`, `--help` and a completion request, which import
framework.flags, start without the model and the plugin registry."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubectl_desched.errors import ConfigError, DeschedError, UsageError
    from kubectl_desched.framework.args import (
        Duration,
        IncludeExclude,
        LabelSelectorArg,
        Namespaces,
        PluginArgs,
        decode_args,
        encode_args,
        percent_map,
    )
    from kubectl_desched.framework.flags import (
        INT32_MAX,
        CliSurface,
        DurationText,
        Flag,
        FlagValue,
        Integer,
        Names,
        Percentages,
        Seconds,
        Switch,
        Text,
    )
    from kubectl_desched.framework.helpers import (
        label_key_problem,
        label_value_problem,
        parse_time,
        pod_age,
        taint_problem,
    )
    from kubectl_desched.framework.predicates import pod_matches_node_selector, pod_tolerates_taint, untolerated_taint
    from kubectl_desched.framework.registry import ENTRY_POINT_GROUP, PluginSpec, Registry, RegistryError
    from kubectl_desched.framework.types import (
        BalancePlugin,
        DeschedulePlugin,
        EvictOptions,
        Evictor,
        EvictorPlugin,
        EvictOutcome,
        EvictStatus,
        Handle,
        LandingView,
        PlanningEvictor,
        Plugin,
    )
    from kubectl_desched.model.label_selectors import Matcher
    from kubectl_desched.model.objects import (
        ContainerStatus,
        Namespace,
        Node,
        NodeMetric,
        NodeMetrics,
        OwnerRef,
        PersistentVolumeClaim,
        Pod,
        PodCondition,
        PodDisruptionBudget,
        PodMetrics,
        PriorityClass,
        Taint,
        Toleration,
    )
    from kubectl_desched.model.state import ClusterState

# Where each name lives, by module; a name is imported from there when first asked for.
_NAMES = {
    "kubectl_desched.errors": ("ConfigError", "DeschedError", "UsageError"),
    f"{__name__}.args": ("Duration", "IncludeExclude", "LabelSelectorArg", "Namespaces", "PluginArgs", "decode_args",
                         "encode_args", "percent_map"),
    f"{__name__}.flags": ("INT32_MAX", "CliSurface", "DurationText", "Flag", "FlagValue", "Integer", "Names",
                          "Percentages", "Seconds", "Switch", "Text"),
    f"{__name__}.helpers": ("label_key_problem", "label_value_problem", "parse_time", "pod_age", "taint_problem"),
    f"{__name__}.registry": ("ENTRY_POINT_GROUP", "PluginSpec", "Registry", "RegistryError"),
    f"{__name__}.types": ("BalancePlugin", "DeschedulePlugin", "EvictOptions", "EvictOutcome", "EvictStatus",
                          "Evictor", "EvictorPlugin", "Handle", "LandingView", "PlanningEvictor", "Plugin"),
    "kubectl_desched.model.objects": ("ContainerStatus", "Namespace", "Node", "NodeMetric", "NodeMetrics", "OwnerRef",
                                      "PersistentVolumeClaim", "Pod", "PodCondition", "PodDisruptionBudget",
                                      "PodMetrics", "PriorityClass", "Taint", "Toleration"),
    f"{__name__}.predicates": ("pod_matches_node_selector", "pod_tolerates_taint", "untolerated_taint"),
    "kubectl_desched.model.label_selectors": ("Matcher",),
    "kubectl_desched.model.state": ("ClusterState",),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}

__all__ = [
    "ENTRY_POINT_GROUP",
    "INT32_MAX",
    "BalancePlugin",
    "CliSurface",
    "ClusterState",
    "ConfigError",
    "ContainerStatus",
    "DeschedError",
    "DeschedulePlugin",
    "Duration",
    "DurationText",
    "EvictOptions",
    "EvictOutcome",
    "EvictStatus",
    "Evictor",
    "EvictorPlugin",
    "Flag",
    "FlagValue",
    "Handle",
    "IncludeExclude",
    "Integer",
    "LabelSelectorArg",
    "LandingView",
    "Matcher",
    "Names",
    "Namespace",
    "Namespaces",
    "Node",
    "NodeMetric",
    "NodeMetrics",
    "OwnerRef",
    "Percentages",
    "PersistentVolumeClaim",
    "PlanningEvictor",
    "Plugin",
    "PluginArgs",
    "PluginSpec",
    "Pod",
    "PodCondition",
    "PodDisruptionBudget",
    "PodMetrics",
    "PriorityClass",
    "Registry",
    "RegistryError",
    "Seconds",
    "Switch",
    "Taint",
    "Text",
    "Toleration",
    "UsageError",
    "decode_args",
    "encode_args",
    "label_key_problem",
    "label_value_problem",
    "parse_time",
    "percent_map",
    "pod_age",
    "pod_matches_node_selector",
    "pod_tolerates_taint",
    "taint_problem",
    "untolerated_taint",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
