"""The installed plugin as a user meets it: found through its entry point, listed by `kubectl desched plugins`, and
run by the real CLI (a subprocess) from flags and from a policy file, against a snapshot."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from cordoned_fixtures import PLUGIN
from kubectl_desched_cordoned import RemovePodsFromCordonedNodes

from kubectl_desched.framework import ENTRY_POINT_GROUP
from kubectl_desched.testing import NOW, desched, node, pdb, pod, registry, snapshot, taint, timestamp

CA_TAINT = taint("ToBeDeletedByClusterAutoscaler", "1762160000")
DEFAULT_ARGS: dict[str, Any] = {"namespaces": None, "labelSelector": None, "drainTaints": [], "drainLabel": "",
                "includeTolerating": False, "minPodAgeSeconds": 0}
NAME_RULE = "the name part must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"


@pytest.fixture
def snapshot_file(tmp_path: Path) -> str:
    """Two cordoned nodes (one with a PDB-guarded pod), one node the autoscaler is removing, one healthy node."""
    objs = [node("cordoned-1", cordoned=True), node("cordoned-2", cordoned=True),
            node("scaling-down", taints=[CA_TAINT]), node("healthy"),
            pod("web-1", "cordoned-1", namespace="shop", priority=100), pod("web-2", "cordoned-1", namespace="shop"),
            pod("agent", "cordoned-1", namespace="kube-system", owner="DaemonSet"),
            pod("db-0", "cordoned-2", namespace="shop", owner="StatefulSet", labels={"app": "db"}),
            pod("crashed", "cordoned-2", namespace="shop", phase="Failed"),
            pod("batch-1", "scaling-down", namespace="jobs", owner="Job"),
            pod("api-1", "healthy", namespace="shop"),
            pdb("db", {"app": "db"}, namespace="shop", allowed=0)]  # db-0: kept unless --no-respect-pdbs
    path = tmp_path / "snapshot.yaml"
    path.write_text(json.dumps(snapshot(objs)))  # JSON is YAML: no yaml stubs for mypy --strict
    return str(path)


def candidates(proc: subprocess.CompletedProcess[str]) -> list[tuple[str, str, str]]:
    assert proc.returncode == 0, proc.stderr
    return [(c["pod"], c["node"], c["reason"]) for c in json.loads(proc.stdout)["candidates"]]


# --- discovery ------------------------------------------------------------------------------------------------------


def test_registered_through_its_entry_point() -> None:
    (ep,) = [e for e in entry_points(group=ENTRY_POINT_GROUP) if e.name == PLUGIN]
    assert ep.dist is not None and ep.dist.name == "kubectl-desched-cordoned"
    assert ep.load() is RemovePodsFromCordonedNodes
    found = registry()
    spec = found.get(PLUGIN)
    assert spec.factory is RemovePodsFromCordonedNodes
    assert spec.points == ("deschedule",)
    assert spec.origin == f"kubectl-desched-cordoned (entry point {PLUGIN})"
    assert not [line for line in found.broken if PLUGIN in line]


def test_plugins_command_lists_it_with_its_defaults() -> None:
    table = desched("plugins")
    assert table.returncode == 0 and table.stderr == ""
    lines = table.stdout.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith(PLUGIN)]
    assert lines[at].split()[:3] == [PLUGIN, "deschedule", "kubectl-desched-cordoned"]
    args = [line.strip() for line in lines[at + 1:at + 4]]  # one arg per line under the first
    args = [line.strip() for line in lines[at + 1:at + 7]]
    assert {"drainTaints: []", "includeTolerating: false", "minPodAgeSeconds: 0"} <= set(args)
    doc = json.loads(desched("plugins", "-o", "json").stdout)
    (entry,) = [p for p in doc["plugins"] if p["name"] == PLUGIN]
    assert entry == {
        "name": PLUGIN, "extensionPoints": ["deschedule"], "origin": f"kubectl-desched-cordoned (entry point {PLUGIN})",
        "description": "Drains cordoned nodes (or nodes with a drainTaints taint) within the eviction limits.",
        "defaultArgs": DEFAULT_ARGS,
        "flagDefaultArgs": DEFAULT_ARGS,
        "flags": ["--drain-taints", "--drain-label", "--include-tolerating", "--drain-min-pod-age"]}
    assert doc["broken"] == []


# --- from flags -----------------------------------------------------------------------------------------------------


def test_deschedule_with_the_plugin_flag(snapshot_file: str) -> None:
    got = candidates(desched("deschedule", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN, "-o", "json"))
    cordoned = "node is cordoned (spec.unschedulable)"
    assert got == [("web-2", "cordoned-1", cordoned), ("web-1", "cordoned-1", cordoned)]  # priority 0 before 100
    # db-0's PDB allows no disruption: kept, unless PDBs are ignored as upstream's dry run ignores them.
    loose = candidates(desched("deschedule", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN, "-o", "json",
                               "--no-respect-pdbs"))
    assert loose == [*got, ("db-0", "cordoned-2", cordoned)]


def test_args_flag_adds_drain_taints_and_limits_apply(snapshot_file: str) -> None:
    proc = desched("deschedule", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN, "--max-pods-per-node", "1",
                   "--args", f'{PLUGIN}={{"drainTaints": ["ToBeDeletedByClusterAutoscaler"]}}', "-o", "json")
    assert [(p, n) for p, n, _ in candidates(proc)] == [("web-2", "cordoned-1"), ("batch-1", "scaling-down")]
    assert candidates(proc)[1][2] == "node has drain taint ToBeDeletedByClusterAutoscaler=1762160000:NoSchedule"


def test_its_own_flag_sets_drain_taints(snapshot_file: str) -> None:
    """--drain-taints comes from the plugin's declaration: the same plan as --args, without touching the CLI."""
    by_flag = desched("deschedule", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN, "--max-pods-per-node", "1",
                      "--drain-taints", "ToBeDeletedByClusterAutoscaler", "-o", "json")
    by_args = desched("deschedule", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN, "--max-pods-per-node", "1",
                      "--args", f'{PLUGIN}={{"drainTaints": ["ToBeDeletedByClusterAutoscaler"]}}', "-o", "json")
    assert candidates(by_flag) == candidates(by_args)
    assert [n for _, n, _ in candidates(by_flag)] == ["cordoned-1", "scaling-down"]


def test_its_flags_are_in_help_of_the_commands_that_run_it() -> None:
    deschedule = " ".join(desched("deschedule", "--help").stdout.split())
    assert f"--drain-taints KEY[=VALUE],... {PLUGIN}: also drain nodes with these taints, as KEY or KEY=VALUE." \
        in deschedule
    assert "--include-tolerating" in deschedule
    # the defaults come from the args dataclass: the plugin does not repeat them in CliSurface
    assert f"--drain-min-pod-age DURATION {PLUGIN}: keep pods younger than this [default: 0s]." in deschedule
    assert f"--drain-label KEY {PLUGIN}: also drain nodes with this label." in deschedule
    assert "--drain-taints" in desched("explain", "node", "--help").stdout
    assert "--drain-taints" not in desched("balance", "--help").stdout  # a Deschedule plugin's flag


def test_a_bad_flag_value_names_the_flag(snapshot_file: str) -> None:
    proc = desched("deschedule", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN, "--drain-taints", "two words")
    assert (proc.returncode, proc.stderr) == (2, "error: --drain-taints: drainTaints[0]: 'two words' is not a taint "
                                                 f"key or key=value: invalid key: {NAME_RULE}\n")
    proc = desched("deschedule", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN, "--drain-label", "a b")
    assert (proc.returncode, proc.stderr) == (2, f"error: --drain-label: 'a b': {NAME_RULE}\n")
    proc = desched("deschedule", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN, "--drain-taints", "a,,b")
    assert (proc.returncode, proc.stderr) == (2, "error: --drain-taints: empty item in 'a,,b'\n")


def test_table_output_shows_reasons_and_pdb_warning(snapshot_file: str) -> None:
    proc = desched("deschedule", "--from-file", snapshot_file, "-n", "shop", "--plugin", PLUGIN, "--no-respect-pdbs")
    assert proc.returncode == 0, proc.stderr
    assert "3 candidate pod(s):" in proc.stdout
    assert "node is cordoned (spec.unschedulable) [1]" in proc.stdout  # db-0's PDB allows no disruption
    assert "PodDisruptionBudget db allows no disruption" in proc.stdout
    assert "nothing can be evicted" in proc.stdout


def test_bad_args_flag_is_one_line_naming_the_field(snapshot_file: str) -> None:
    proc = desched("deschedule", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN,
                   "--args", f'{PLUGIN}={{"drainTaints": ["no spaces allowed"]}}')
    assert proc.returncode == 2
    assert proc.stderr == (f"error: --args {PLUGIN}: drainTaints[0]: 'no spaces allowed' is not a taint key or "
                           f"key=value: invalid key: {NAME_RULE}\n")


def test_explain_node_with_the_plugin(snapshot_file: str) -> None:
    proc = desched("explain", "node", "cordoned-1", "--from-file", snapshot_file, "-A", "--plugin", PLUGIN,
                   "-o", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["plugins"] == [{"plugin": PLUGIN, "class": "draining",
                               "detail": "node is cordoned (spec.unschedulable): 2 pod(s) to move"}]
    verdicts = {p["pod"]: (p["verdict"], p["why"]) for p in doc["pods"]}
    assert verdicts["agent"] == ("keep", "protected: DaemonSet pod")
    assert verdicts["web-1"] == ("evict", f"{PLUGIN}: node is cordoned (spec.unschedulable)")


# --- from a policy file ---------------------------------------------------------------------------------------------


def _policy(tmp_path: Path, doc: dict[str, Any]) -> str:
    path = tmp_path / "policy.yaml"
    path.write_text(json.dumps(doc))
    return str(path)


def test_run_policy_with_in_tree_and_out_of_tree_plugins(snapshot_file: str, tmp_path: Path) -> None:
    policy = _policy(tmp_path, {
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy", "maxNoOfPodsToEvictTotal": 10,
        "profiles": [{"name": "maintenance",
                      "pluginConfig": [{"name": "DefaultEvictor", "args": {"evictFailedBarePods": True}},
                                       {"name": "RemoveFailedPods", "args": {"minPodLifetimeSeconds": 0}},
                                       {"name": PLUGIN, "args": {"drainTaints": ["ToBeDeletedByClusterAutoscaler"],
                                                                 "namespaces": {"exclude": ["jobs"]}}}],
                      "plugins": {"deschedule": {"enabled": ["RemoveFailedPods", PLUGIN]}}}]})
    proc = desched("run", "--policy", policy, "--from-file", snapshot_file, "-o", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert [(c["pod"], c["plugin"]) for c in doc["candidates"]] == [
        ("crashed", "RemoveFailedPods"), ("web-2", PLUGIN), ("web-1", PLUGIN)]  # db-0: its PDB allows none
    assert doc["policy"]["profiles"][0]["deschedule"] == ["RemoveFailedPods", PLUGIN]


def test_koordinator_configuration_runs_it_too(snapshot_file: str, tmp_path: Path) -> None:
    policy = _policy(tmp_path, {
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration",
        # EvictDirectly: Koordinator's default ReservationFirst only moves koord-scheduler's pods.
        "profiles": [{"name": "koord", "pluginConfig": [{"name": PLUGIN, "args": {"includeTolerating": False}},
                                                        {"name": "MigrationController",
                                                         "args": {"defaultJobMode": "EvictDirectly"}}],
                      "plugins": {"deschedule": {"enabled": [{"name": PLUGIN}]}}}]})
    got = candidates(desched("run", "--policy", policy, "--from-file", snapshot_file, "-o", "json"))
    assert [p for p, _, _ in got] == ["web-2", "web-1"]


def test_bad_args_in_a_policy_name_file_and_path(snapshot_file: str, tmp_path: Path) -> None:
    policy = _policy(tmp_path, {
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
        "profiles": [{"name": "p", "pluginConfig": [{"name": PLUGIN, "args": {"includeTolerating": "sometimes"}}],
                      "plugins": {"deschedule": {"enabled": [PLUGIN]}}}]})
    proc = desched("run", "--policy", policy, "--from-file", snapshot_file)
    assert proc.returncode == 2
    assert proc.stderr == (f"error: {policy}: profiles[0].pluginConfig[0].args.includeTolerating: "
                           "must be a boolean, not 'sometimes'\n")


@pytest.mark.parametrize("kind", ["DeschedulerPolicy", "DeschedulerConfiguration"])
def test_an_unknown_args_field_refuses_the_policy(snapshot_file: str, tmp_path: Path, kind: str) -> None:
    """An out-of-tree plugin's args are decoded strictly, as upstream's framework decodes every plugin's."""
    policy = _policy(tmp_path, {
        "apiVersion": "descheduler/v1alpha2", "kind": kind,
        "profiles": [{"name": "p", "pluginConfig": [{"name": PLUGIN, "args": {"drainTaints": [], "minPodAge": 5}}],
                      "plugins": {"deschedule": {"enabled": [{"name": PLUGIN}]}}}]})
    proc = desched("run", "--policy", policy, "--from-file", snapshot_file)
    assert proc.returncode == 2
    assert proc.stderr == (f"error: {policy}: profiles[0].pluginConfig[0].args.minPodAge: unknown field "
                           "(did you mean minPodAgeSeconds?)\n")


def test_now_judges_ages_in_a_snapshot_at_a_chosen_time(snapshot_file: str) -> None:
    """The snapshot's pods were created an hour before testing.NOW: --now moves the clock the plugin reads."""
    run = ["deschedule", "--from-file", snapshot_file, "-n", "shop", "--plugin", PLUGIN, "--drain-min-pod-age", "2h",
           "-o", "json"]
    assert candidates(desched(*run, "--now", timestamp(NOW))) == []
    later = candidates(desched(*run, "--now", timestamp(NOW + timedelta(hours=2))))
    assert [p for p, _, _ in later] == ["web-2", "web-1"]


def test_a_flag_without_its_plugin_is_refused(snapshot_file: str) -> None:
    proc = desched("deschedule", "--from-file", snapshot_file, "-A", "--drain-taints", "x")
    assert (proc.returncode, proc.stderr) == (2, f"error: --drain-taints is a flag of plugin {PLUGIN}, which is not "
                                                 f"enabled: add --plugin {PLUGIN}\n")
