"""Wiring between the CLI and the framework, by concern: scope.py (what a command covers), loading.py (the state),
commands.py (the flow: plan, render, confirm, act; explain), acting.py (the runner and its evictor),
documents.py (-o json/yaml metadata, --report), text.py (what is printed as text).

commands.py is imported on first use, so `version`, `--help` and completion start without the framework."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubectl_desched.app.commands import (
        EXIT_INTERRUPTED,
        EXIT_NOT_CONFIRMED,
        explain_node,
        explain_pod,
        plan_and_act,
    )

__all__ = ["EXIT_INTERRUPTED", "EXIT_NOT_CONFIRMED", "explain_node", "explain_pod", "plan_and_act"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from kubectl_desched.app import commands

    return getattr(commands, name)
