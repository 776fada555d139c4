"""A decoded policy: profiles of configured plugins, the eviction limits, and where it came from. The types only:
policy.py decodes them, app/policy_files.py reads the files, framework/runner.py runs them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubectl_desched.framework.plan import Limits
from kubectl_desched.framework.registry import PluginSpec
from kubectl_desched.framework.surge import SURGE_KINDS
from kubectl_desched.framework.types import Plugin
from kubectl_desched.model.label_selectors import Matcher


@dataclass
class PluginUse:
    spec: PluginSpec
    args: Any
    path: str


@dataclass
class Profile:
    name: str
    deschedule: list[PluginUse] = field(default_factory=list)
    balance: list[PluginUse] = field(default_factory=list)
    filters: list[PluginUse] = field(default_factory=list)
    pre_eviction_filters: list[PluginUse] = field(default_factory=list)
    node_selector: Matcher | None = None


@dataclass(frozen=True)
class PrometheusProvider:
    """The policy's `metricsProviders` entry with source Prometheus: where upstream's descheduler queries it."""

    url: str
    secret_namespace: str = ""  # authToken.secretReference: the token is its prometheusAuthToken data
    secret_name: str = ""
    path: str = "metricsProviders[0].prometheus"  # for messages


@dataclass
class Policy:
    kind: str
    source: str
    profiles: list[Profile]
    limits: Limits
    node_selector: Matcher | None
    raw: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    evict_plugins: list[str] = field(default_factory=list)
    from_file: bool = True  # False when flags describe it: then kubectl's default namespace scope applies
    patched: bool = False  # by --policy-patch (a second one would replace it, not add to it)
    prometheus: PrometheusProvider | None = None  # metricsProviders' Prometheus entry

    def required_kinds(self) -> set[str]:
        """Objects beyond nodes, pods and PDBs that the configured plugins need."""
        kinds: set[str] = set(SURGE_KINDS) if self.limits.surge else set()
        for p in self.profiles:
            for u in (*p.deschedule, *p.balance, *p.filters, *p.pre_eviction_filters):
                factory = u.spec.factory  # a Plugin class: the base class declares the hook, empty by default
                if isinstance(factory, type) and issubclass(factory, Plugin):
                    kinds |= set(factory.required_kinds(u.args))
        return kinds

    def prometheus_queries(self) -> list[str]:
        """The Prometheus queries the configured plugins read, each once, in policy order."""
        queries: list[str] = []
        for p in self.profiles:
            for u in (*p.deschedule, *p.balance, *p.filters, *p.pre_eviction_filters):
                factory = u.spec.factory
                if isinstance(factory, type) and issubclass(factory, Plugin):
                    queries += factory.prometheus_queries(u.args)
        return list(dict.fromkeys(queries))

    def emptying_plugins(self) -> list[str]:
        """The configured plugins whose goal is nodes left empty (--cordon applies to them)."""
        return [u.spec.name for p in self.profiles for u in p.balance
                if isinstance(u.spec.factory, type) and issubclass(u.spec.factory, Plugin)
                and u.spec.factory.empties is not None]

    def plugin_names(self) -> list[str]:
        return [u.spec.name for p in self.profiles for u in (*p.deschedule, *p.balance)]
