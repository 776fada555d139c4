"""The plugin framework: the same model as the descheduler v1alpha2 and koord-descheduler frameworks
(Plugin, DeschedulePlugin, BalancePlugin, Evictor, Registry, profiles), run once instead of on a timer.

Its names are loaded on first use, so that `version`, `--help` and a completion request, which import
framework.flags, start without the model and the plugin registry."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        LandingView,
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
    "LandingView",
    "PlanningEvictor",
    "Plugin",
    "PluginArgs",
    "PluginSpec",
    "Registry",
    "RegistryError",
    "decode_args",
]
_MODULE_OF = {"PluginArgs": "args", "decode_args": "args", "PluginSpec": "registry", "Registry": "registry",
              "RegistryError": "registry"}  # the rest are in types


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{_MODULE_OF.get(name, 'types')}")
    return getattr(module, name)
