"""Shell completion through the real kubectl: `kubectl __complete desched ...` runs kubectl_complete-desched (found
on PATH, as kubectl >= 1.26 looks for it) and gets subcommands, flags and live names from the test apiserver."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from desched import desched_env

pytestmark = pytest.mark.integration


def complete(cluster: Any, *words: str) -> tuple[list[str], str]:
    scripts = Path(sys.executable).parent
    assert (scripts / "kubectl_complete-desched").exists(), "install the package first (scripts/test does)"
    env = desched_env(cluster.kubeconfig_for())
    env["PATH"] = f"{scripts}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([str(cluster.bin_dir / "kubectl"), "__complete", "desched", *words], capture_output=True,
                          text=True, env=env, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    return [line.split("\t")[0] for line in lines[:-1]], lines[-1]


def test_subcommands_and_flags(cluster: Any) -> None:
    words, directive = complete(cluster, "")
    assert {"balance", "deschedule", "run", "explain", "plugins", "version", "completion"} <= set(words)
    assert directive == ":4"  # no file names after a command
    flags, _ = complete(cluster, "balance", "--no-")
    assert "--no-respect-pdbs" in flags and "--no-pager" in flags
    formats, _ = complete(cluster, "balance", "-o", "")
    assert formats == ["table", "wide", "json", "yaml", "name", "jsonpath=", "jsonpath-as-json=", "custom-columns="]
    plugins, _ = complete(cluster, "balance", "--plugin", "LowNode")
    assert plugins == ["LowNodeLoad", "LowNodeUtilization"]
    _, files = complete(cluster, "run", "--policy", "")
    assert files == ":0"  # the shell completes file names


def test_live_nodes_pods_namespaces_and_contexts(cluster: Any, namespace: str) -> None:
    cluster.create_node(f"{namespace}-node")
    cluster.create_pod(namespace, "web-1", f"{namespace}-node", owner_name="web-rs")
    nodes, _ = complete(cluster, "explain", "node", namespace[:6])
    assert f"{namespace}-node" in nodes
    assert f"{namespace}-node" in complete(cluster, "balance", "--nodes", f"{namespace}-n")[0]
    pods, _ = complete(cluster, "explain", "pod", "-n", namespace, "w")
    assert pods == ["web-1"]
    assert namespace in complete(cluster, "balance", "-n", namespace[:6])[0]
    assert namespace in complete(cluster, "balance", "--exclude-namespace", namespace)[0]
    contexts, _ = complete(cluster, "balance", "--context", "")
    assert contexts  # the test kubeconfig's context


def test_standalone_scripts_name_the_program_without_a_space() -> None:
    for shell in ("bash", "zsh", "fish"):
        proc = subprocess.run([sys.executable, "-m", "kubectl_desched", "completion", shell], capture_output=True,
                              text=True, check=False, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "_KUBECTL_DESCHED_COMPLETE" in proc.stdout and "kubectl-desched" in proc.stdout
        assert "_KUBECTL DESCHED" not in proc.stdout
    env = {**os.environ, "_KUBECTL_DESCHED_COMPLETE": "bash_complete", "COMP_WORDS": "kubectl-desched bal",
           "COMP_CWORD": "1"}
    answer = subprocess.run([sys.executable, "-m", "kubectl_desched"], capture_output=True, text=True, env=env,
                            check=False, timeout=60)
    assert answer.stdout.split() == ["plain,balance"]


def test_the_main_executable_answers_cobras_request_too() -> None:
    """What the krew archive's kubectl_complete-desched script runs."""
    proc = subprocess.run([sys.executable, "-m", "kubectl_desched", "__complete", "balance", "--plugin", "LowNode"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.stdout.splitlines() == ["LowNodeLoad", "LowNodeUtilization", ":4"]
