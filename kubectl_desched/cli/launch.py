"""The console scripts' entry points: the cycle collector is paused (collector.py) before the CLI is imported."""

from __future__ import annotations

from kubectl_desched import collector


def main() -> None:
    """kubectl-desched"""
    collector.pause_for_start()
    from kubectl_desched.cli.main import main as cli_main

    cli_main()


def complete() -> None:
    """kubectl_complete-desched: what kubectl (1.26 and later) runs for `kubectl desched <TAB>`."""
    collector.pause_for_start()
    from kubectl_desched.cli.completion import kubectl_main
    from kubectl_desched.cli.main import cli

    kubectl_main(cli)
