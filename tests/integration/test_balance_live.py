"""kubectl desched balance against a real kube-apiserver: live reads, snapshot parity, confirmation,
Eviction API results, PDBs, UID preconditions, RBAC and bad kubeconfigs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from desched import BALANCE, Interactive, as_json, desched

pytestmark = pytest.mark.integration


def _imbalance(cluster: Any, ns: str) -> list[str]:
    """An over-utilized node (cpu 90%) and an under-utilized one; returns the node selector args."""
    labels = {"desched-test": ns}
    cluster.create_node(f"{ns}-over", labels=labels)
    cluster.create_node(f"{ns}-under", labels=labels)
    for i in range(6):
        cluster.create_pod(ns, f"web-{i}", f"{ns}-over", cpu="500m", labels={"app": "web"}, owner_name="web-rs")
    cluster.create_pod(ns, "a-guarded", f"{ns}-over", cpu="500m", labels={"app": "guarded"}, owner_name="g-rs")
    cluster.create_pod(ns, "agent", f"{ns}-over", cpu="100m", owner_kind="DaemonSet", owner_name="agent")
    cluster.create_pod(ns, "light", f"{ns}-under", cpu="200m", owner_name="light-rs")
    cluster.create_pdb(ns, "guarded", {"app": "guarded"}, min_available=1, disruptions_allowed=0)
    # --keep-futile: these tests are about previewing, choosing and acting; the nodes other tests left in the shared
    # cluster (no scheduler here) change where the estimate lands replacements, so which moves are futile varies
    # (tests/integration/test_outcomes_live.py tests that on the simulated cluster)
    return ["--node-selector", f"desched-test={ns}", "-n", ns, *BALANCE, "--keep-futile"]


def _terminating(cluster: Any, ns: str, name: str) -> bool:
    pod = cluster.get_pod(ns, name)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


EXPECTED = ["web-0", "web-1", "web-2", "web-3"]  # a-guarded's budget is spent: kept, the next pod planned
UPSTREAM = ["a-guarded", "web-0", "web-1", "web-2"]  # --no-respect-pdbs: PDBs ignored, as upstream's dry run


def test_preview_lists_candidates_and_explains(cluster: Any, namespace: str) -> None:
    scope = _imbalance(cluster, namespace)
    doc = as_json(desched(cluster.kubeconfig_for(), "balance", *scope, "--dry-run=client", "-o", "json"))
    assert [c["pod"] for c in doc["candidates"]] == EXPECTED
    assert {c["plugin"] for c in doc["candidates"]} == {"LowNodeUtilization"}
    assert doc["respectPDBs"] is True
    loose = as_json(desched(cluster.kubeconfig_for(), "balance", *scope, "--dry-run=client", "-o", "json",
                            "--no-respect-pdbs"))
    assert [c["pod"] for c in loose["candidates"]] == UPSTREAM
    assert any("PodDisruptionBudget guarded" in w for w in loose["candidates"][0]["warnings"])
    nodes = {n["name"]: n for n in doc["nodes"]}
    over = nodes[f"{namespace}-over"]
    assert over["class"] == {"LowNodeUtilization": "over-utilized"}
    # 90% less the four 500m pods (12.5% each), plus the replacements the placement estimate lands back here
    assert over["now"]["cpu"] == 90.0 and over["after"]["cpu"] == 40.0 + 12.5 * over["landing"]
    assert nodes[f"{namespace}-under"]["class"] == {"LowNodeUtilization": "under-utilized"}
    assert "evictions" not in doc  # client dry run: nothing sent
    assert not any(_terminating(cluster, namespace, p) for p in EXPECTED)

    explained = desched(cluster.kubeconfig_for(), "explain", "node", f"{namespace}-over", *scope, "-o", "json",
                        "--plugin", "LowNodeUtilization", "--full")
    assert explained.returncode == 0, explained.stderr
    full = as_json(explained)
    verdicts = {p["pod"]: (p["verdict"], p["why"]) for p in full["pods"]}
    assert verdicts["agent"] == ("keep", "protected: DaemonSet pod")
    assert verdicts["web-0"][0] == "evict" and "LowNodeUtilization: node over target" in verdicts["web-0"][1]
    assert verdicts["web-5"] == ("keep", "LowNodeUtilization: not moved: node is back under the target thresholds")
    every = desched(cluster.kubeconfig_for(), "explain", "node", f"{namespace}-over", *scope, "-o", "json", "--full")
    by_default = {p["pod"]: p["why"] for p in as_json(every)["pods"]}
    assert by_default["web-5"].startswith("RemoveDuplicates: ")  # every plugin, by default
    assert "pods of ReplicaSet" in by_default["web-5"]

    # Without --full only the node and its pods are read: the class is the same, the moves are estimates.
    quick = as_json(desched(cluster.kubeconfig_for(), "explain", "node", f"{namespace}-over", *scope, "-o", "json",
                            "--plugin", "LowNodeUtilization"))
    assert quick["read"] == "node" and quick["estimated"] == ["LowNodeUtilization"]
    assert quick["plugins"] == full["plugins"]
    guesses = {p["pod"]: (p["verdict"], p["why"]) for p in quick["pods"]}
    assert guesses["agent"] == verdicts["agent"]
    assert sorted(p for p, (v, _) in verdicts.items() if v == "evict") == EXPECTED
    assert all(guesses[p][0] == "maybe" for p in EXPECTED)
    assert guesses["web-5"][0] == "maybe"  # the full read stops before it: that needs the under-utilized nodes


def test_live_candidates_equal_snapshot_candidates(cluster: Any, namespace: str, tmp_path: Path) -> None:
    scope = _imbalance(cluster, namespace)
    live = as_json(desched(cluster.kubeconfig_for(), "balance", *scope, "--dry-run=client", "-o", "json"))
    got = cluster.kubectl("get", "nodes,pods,pdb", "-A", "-o", "yaml")
    assert got.returncode == 0, got.stderr
    snap = tmp_path / "snapshot.yaml"
    snap.write_text(got.stdout)
    offline = as_json(desched(cluster.kubeconfig_for(), "balance", *scope, "--from-file", str(snap), "-o", "json"))

    def key(doc: dict[str, Any]) -> list[tuple[str, ...]]:
        return [(c["namespace"], c["pod"], c["node"], c["plugin"], c["reason"]) for c in doc["candidates"]]

    assert key(live) == key(offline)
    assert [c[1] for c in key(live)] == EXPECTED
    assert offline["mode"] == "snapshot" and live["mode"] == "dry-run=client"


def test_confirmed_eviction_respects_pdb(cluster: Any, namespace: str) -> None:
    scope = _imbalance(cluster, namespace)
    # --no-respect-pdbs plans the guarded pod anyway: the Eviction API's 429 is what holds it.
    proc = desched(cluster.kubeconfig_for(), "balance", *scope, "--yes", "-o", "json", "--timeout", "0",
                   "--no-respect-pdbs")
    doc = as_json(proc)
    results = {e["pod"]: e["result"] for e in doc["evictions"]}
    assert results == {"a-guarded": "blocked", "web-0": "evicted", "web-1": "evicted", "web-2": "evicted"}
    assert proc.returncode == 1  # one confirmed eviction did not succeed
    for name in ("web-0", "web-1", "web-2"):
        assert _terminating(cluster, namespace, name)
    assert not _terminating(cluster, namespace, "a-guarded")  # the PDB held
    for name in ("web-3", "web-4", "web-5", "agent", "light"):
        assert not _terminating(cluster, namespace, name)


def test_no_terminal_without_yes_evicts_nothing(cluster: Any, namespace: str) -> None:
    scope = _imbalance(cluster, namespace)
    proc = desched(cluster.kubeconfig_for(), "balance", *scope)
    assert proc.returncode == 3
    assert "pass --yes" in proc.stderr and "Traceback" not in proc.stderr
    assert "4 candidate pod(s)" in proc.stdout
    assert not any(_terminating(cluster, namespace, p) for p in EXPECTED)


def test_server_dry_run_sends_evictions_that_change_nothing(cluster: Any, namespace: str) -> None:
    scope = _imbalance(cluster, namespace)
    doc = as_json(desched(cluster.kubeconfig_for(), "balance", *scope, "--dry-run=server", "--yes", "-o", "json",
                         "--timeout", "0", "--no-respect-pdbs"))
    results = {e["pod"]: e["result"] for e in doc["evictions"]}
    assert results == {"a-guarded": "blocked", "web-0": "would evict", "web-1": "would evict",
                       "web-2": "would evict"}
    assert not any(_terminating(cluster, namespace, p) for p in UPSTREAM)


def test_pod_recreated_after_the_plan_is_not_evicted(cluster: Any, namespace: str) -> None:
    scope = _imbalance(cluster, namespace)
    session = Interactive(cluster.kubeconfig_for(), "balance", *scope, "--timeout", "0")
    session.wait_for("[a]ll, [s]elect pod by pod, [n]o")
    old_uid = cluster.get_pod(namespace, "web-0")["metadata"]["uid"]
    gone = cluster.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/web-0", {"gracePeriodSeconds": 0})
    assert gone.ok, gone.body
    cluster.create_pod(namespace, "web-0", f"{namespace}-over", cpu="500m", labels={"app": "web"},
                       owner_name="web-rs")
    new_uid = cluster.get_pod(namespace, "web-0")["metadata"]["uid"]
    assert new_uid != old_uid
    session.answer("a")
    code, _out, err = session.finish()
    assert code == 1, err
    assert "web-0: changed" in err
    assert cluster.get_pod(namespace, "web-0")["metadata"]["uid"] == new_uid
    assert not _terminating(cluster, namespace, "web-0")  # the new pod was left alone
    assert _terminating(cluster, namespace, "web-1")


def test_select_pod_by_pod(cluster: Any, namespace: str) -> None:
    scope = _imbalance(cluster, namespace)
    session = Interactive(cluster.kubeconfig_for(), "balance", *scope)
    session.wait_for("[a]ll, [s]elect pod by pod, [n]o")
    session.answer("s")
    for reply in ("n", "y", "n", "n"):
        session.wait_for("[y]es, [n]o, [q]uit")
        session.err = b""  # wait for the next prompt, not this one
        session.answer(reply)
    code, _out, err = session.finish()
    assert code == 0, err
    assert _terminating(cluster, namespace, "web-1")  # the second asked, the only "y"
    assert not any(_terminating(cluster, namespace, p) for p in ("a-guarded", "web-0", "web-2", "web-3"))


def test_abort_at_the_prompt_evicts_nothing(cluster: Any, namespace: str) -> None:
    scope = _imbalance(cluster, namespace)
    session = Interactive(cluster.kubeconfig_for(), "balance", *scope)
    session.wait_for("[a]ll, [s]elect pod by pod, [n]o")
    session.answer("n")
    code, _out, err = session.finish()
    assert code == 3 and "nothing was evicted" in err
    assert not any(_terminating(cluster, namespace, p) for p in EXPECTED)


def test_forbidden_reads_and_evictions_are_named(cluster: Any, namespace: str) -> None:
    scope = _imbalance(cluster, namespace)
    limited = cluster.kubeconfig_for("limited")
    proc = desched(limited, "balance", *scope, "--yes")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: reading the cluster: forbidden (403)")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": f"read-{namespace}"},
            "rules": [{"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"]},
                      {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": f"read-{namespace}"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"read-{namespace}"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "limited"}]}
    assert cluster.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role).ok
    assert cluster.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding).ok
    try:
        refused = desched(limited, "balance", *scope, "--yes")  # the preflight names it before any eviction
        assert refused.returncode == 1
        assert refused.stderr == (f"error: not allowed to create pods/eviction in namespace {namespace} "
                                  "(checked before asking: nothing was evicted)\n")
    finally:
        cluster.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/read-{namespace}")
        cluster.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/read-{namespace}")
    assert not any(_terminating(cluster, namespace, p) for p in EXPECTED)


def test_kubeconfig_from_several_files_and_context_override(cluster: Any, namespace: str, tmp_path: Path) -> None:
    import yaml

    scope = _imbalance(cluster, namespace)
    admin = yaml.safe_load(cluster.kubeconfig_for().read_text())
    broken = {"apiVersion": "v1", "kind": "Config", "current-context": "nowhere",
              "contexts": [{"name": "nowhere", "context": {"cluster": "dead", "user": "nobody"}}],
              "clusters": [{"name": "dead", "cluster": {"server": "https://127.0.0.1:1"}}],
              "users": [{"name": "nobody", "user": {"token": "x"}}]}
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text(yaml.safe_dump(broken))
    second.write_text(yaml.safe_dump(admin))
    both = f"{first}:{second}"
    unreachable = desched(both, "balance", *scope, "--dry-run=client")
    assert unreachable.returncode == 1 and "cannot reach the API server at https://127.0.0.1:1" in unreachable.stderr
    assert unreachable.stderr.count("\n") == 1
    ok = desched(both, "balance", *scope, "--dry-run=client", "-o", "json",
                 "--context", admin["current-context"])
    assert [c["pod"] for c in as_json(ok)["candidates"]] == EXPECTED
    mixed = desched(both, "balance", *scope, "--dry-run=client", "-o", "json", "--context", "nowhere",
                    "--cluster", admin["clusters"][0]["name"], "--user", admin["users"][0]["name"])
    assert [c["pod"] for c in as_json(mixed)["candidates"]] == EXPECTED
    missing = desched(both, "balance", *scope, "--context", "nope")
    assert missing.returncode == 2 and 'context "nope" does not exist' in missing.stderr


def test_kubectl_finds_the_plugin_on_path(cluster: Any, namespace: str) -> None:
    import os
    import subprocess
    import sys

    from desched import desched_env

    scripts = Path(sys.executable).parent
    assert (scripts / "kubectl-desched").exists(), "install the package first (scripts/test does)"
    scope = _imbalance(cluster, namespace)
    env = desched_env(cluster.kubeconfig_for())
    env["PATH"] = f"{scripts}{os.pathsep}{env.get('PATH', '')}"
    kubectl = str(cluster.bin_dir / "kubectl")
    version = subprocess.run([kubectl, "desched", "version"], capture_output=True, text=True, env=env, check=False)
    assert version.returncode == 0 and version.stdout.startswith("kubectl-desched v"), version.stderr
    listed = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, env=env, check=False)
    assert "kubectl-desched" in listed.stdout
    plan = subprocess.run([kubectl, "desched", "balance", *scope, "--dry-run", "-o", "json"], capture_output=True,
                          text=True, env=env, check=False)
    assert [c["pod"] for c in as_json(plan)["candidates"]] == EXPECTED


def test_nodes_scope_still_counts_siblings_on_other_nodes(cluster: Any, namespace: str) -> None:
    """--nodes reads only the named nodes' pods, unless a filter looks further: minReplicas counts the owner's
    pods on every node, as upstream does."""
    over, under, other = (f"{namespace}-{n}" for n in ("over", "under", "other"))
    for name in (over, under, other):
        cluster.create_node(name)
    for i in range(3):
        cluster.create_pod(namespace, f"web-{i}", over, cpu="1200m", owner_name="web-rs")
    cluster.create_pod(namespace, "web-3", other, cpu="100m", owner_name="web-rs")
    args = ["-n", namespace, "--nodes", f"{over},{under}", *BALANCE, "--dry-run=client", "-o", "json"]
    counted = as_json(desched(cluster.kubeconfig_for(), "balance", *args, "--min-replicas", "4"))
    # 4 pods with web-3 (the plugin filters the node's pods before it moves any); 90% -> 60% -> 30%
    assert [c["pod"] for c in counted["candidates"]] == ["web-0", "web-1"]
    kept = as_json(desched(cluster.kubeconfig_for(), "balance", *args, "--min-replicas", "5"))
    assert kept["candidates"] == []
