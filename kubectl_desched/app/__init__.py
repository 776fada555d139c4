"""Wiring between the CLI and the framework, by concern: scope.py (what a command covers), loading.py (the state),
commands.py (the flow: plan, render, confirm, act; explain), acting.py (the runner and its evictor),
documents.py (-o json/yaml metadata, --report), text.py (what is printed as text)."""

from kubectl_desched.app.commands import (
    EXIT_INTERRUPTED,
    EXIT_NOT_CONFIRMED,
    explain_node,
    explain_pod,
    plan_and_act,
)

__all__ = ["EXIT_INTERRUPTED", "EXIT_NOT_CONFIRMED", "explain_node", "explain_pod", "plan_and_act"]
