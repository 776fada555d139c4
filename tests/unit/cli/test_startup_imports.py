"""`version`, `--help`, a command's `--help` and anything read from a snapshot start without the kubernetes client
(about 0.5 s of a 1 s start) or urllib3: both are imported where a request is made. `version` and `--help` start
without the plugin framework too, and a completion request without the policy readers and yaml: issue 13's
0.15 s. bench/startup.py reports the times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import cluster, node, pod

_CLIENT = ("kubernetes", "urllib3")


def imported_by(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The modules a run of the CLI imports (python -X importtime), after checking that it succeeded."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "kubectl_desched", *args],
                         capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "kubectl_desched.cli.main" in imported  # the importtime output was read
    return imported


def client_modules(imported: set[str]) -> set[str]:
    return {m for m in imported if m.split(".")[0] in _CLIENT}


@pytest.mark.parametrize("args", [["version"], ["--help"], ["balance", "--help"], ["deschedule", "--help"]])
def test_no_kubernetes_client_at_start(args: list[str]) -> None:
    assert not client_modules(imported_by(args))


# What a command needs only once it runs: the model and msgspec, the plugins and their registry (entry points),
# the policy readers, yaml, the parsed option types.
_FRAMEWORK = ("kubectl_desched.model.objects", "msgspec", "kubectl_desched.plugins",
              "kubectl_desched.framework.registry", "importlib.metadata",
              "kubectl_desched.framework.policy_decoder", "kubectl_desched.app.policy_files",
              "yaml", "kubectl_desched.app.options")
_RUN_ONLY = ("kubectl_desched.framework.policy_decoder", "kubectl_desched.app.policy_files",
             "kubectl_desched.kube.snapshot", "yaml", "jsonpatch",
             "kubectl_desched.app.options")


@pytest.mark.parametrize("args", [["version"], ["--help"]])
def test_version_and_help_start_without_the_framework(args: list[str]) -> None:
    imported = imported_by(args)
    assert "click" in imported
    assert not imported & set(_FRAMEWORK)


def test_a_completion_request_reads_the_plugins_but_not_the_policy_readers() -> None:
    imported = imported_by(["__complete", "balance", "--no-"])
    assert {"kubectl_desched.plugins", "kubectl_desched.framework.registry"} <= imported  # their flags complete
    assert not imported & set(_RUN_ONLY)


@pytest.fixture
def snapshot_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A snapshot, and a kubeconfig whose context names a namespace: the snapshot path reads it for the default
    namespace, as kubectl would, and must do so without the client."""
    snap = tmp_path / "cluster.json"
    snap.write_text(json.dumps(cluster(node("n1"), node("n2"), pod("p1", "n1", namespace="shop"))))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", "namespace": "shop"}}]}))
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    env.update(KUBECONFIG=str(kubeconfig), HOME=str(tmp_path), NO_COLOR="1")
    return snap, env


@pytest.mark.parametrize("args", [["explain", "node", "n1"], ["balance"], ["explain", "pod", "p1"],
                                  ["deschedule", "-A", "-o", "json"]])
def test_snapshot_path_never_imports_the_client(snapshot_env: tuple[Path, dict[str, str]], args: list[str]) -> None:
    snap, env = snapshot_env
    imported = imported_by([*args, "--from-file", str(snap)], env)
    # the namespace was looked up, except where all of them are in scope (-A; explain node's node is its scope)
    assert ("kubectl_desched.kube.config" in imported) == (args[0] != "deschedule" and args[:2] != ["explain", "node"])
    assert not client_modules(imported)


def test_a_request_path_still_finds_the_client_errors() -> None:
    from kubernetes.client.exceptions import ApiException

    from kubectl_desched.kube.apierrors import api_exception, is_api_exception
    assert api_exception() is ApiException
    assert is_api_exception(ApiException(status=404)) and not is_api_exception(OSError())
