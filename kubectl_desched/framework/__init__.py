"""The plugin framework: the same model as the descheduler v1alpha2 and koord-descheduler frameworks
(Plugin, DeschedulePlugin, BalancePlugin, Evictor, Registry, profiles), run once instead of on a timer."""

from kubectl_desched.framework.args import PluginArgs, decode_args
from kubectl_desched.framework.registry import PluginSpec, Registry, RegistryError
from kubectl_desched.framework.types import (
    BalancePlugin,
    DeschedulePlugin,
    EvictOptions,
    Evictor,
    EvictorPlugin,
    EvictOutcome,
    EvictStatus,
    Handle,
    PlanningEvictor,
    Plugin,
)

__all__ = [
    "BalancePlugin",
    "DeschedulePlugin",
    "EvictOptions",
    "EvictOutcome",
    "EvictStatus",
    "Evictor",
    "EvictorPlugin",
    "Handle",
    "PlanningEvictor",
    "Plugin",
    "PluginArgs",
    "PluginSpec",
    "Registry",
    "RegistryError",
    "decode_args",
]
