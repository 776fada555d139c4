"""Plugin args decoded as strictly as upstream: every in-tree plugin's args have exactly the fields of its upstream
type (descheduler v0.36.0's pkg/framework/plugins/*/types.go, Koordinator v1.8.0's
pkg/descheduler/apis/config/v1alpha2/types_*.go), each one is accepted, and an unknown one refuses the policy through
the CLI with one `error:` line naming the file and the field path, exit code 2."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_desched.cli.main import main
from kubectl_desched.errors import ConfigError
from kubectl_desched.framework.args import json_key
from kubectl_desched.framework.policy_decoder import decode_policy
from kubectl_desched.plugins import in_tree_registry
from tests import builders as b

API = "descheduler/v1alpha2"
SELECTOR = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}

# Every field of each args type upstream (JSON names), with a valid value, nested objects with all their fields.
FULL_ARGS: dict[str, dict[str, Any]] = {
    "DefaultEvictor": {
        "nodeSelector": "pool=batch", "labelSelector": SELECTOR, "namespaceLabelSelector": SELECTOR,
        "priorityThreshold": {"value": 1000}, "nodeFit": True, "minReplicas": 2, "minPodAge": "5m",
        "noEvictionPolicy": "Preferred",
        "podProtections": {"extraEnabled": ["PodsWithPVC"], "defaultDisabled": ["DaemonSetPods"],
                           "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "ssd"}]}}},
    },
    "HighNodeUtilization": {"thresholds": {"cpu": 20}, "numberOfNodes": 1,
                            "evictionModes": ["OnlyThresholdingResources"], "evictableNamespaces": {"exclude": ["a"]}},
    "LowNodeUtilization": {"useDeviationThresholds": False, "thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50},
                           "numberOfNodes": 1, "metricsUtilization": {"source": "KubernetesMetrics"},
                           "evictableNamespaces": {"exclude": ["kube-system"]}, "evictionLimits": {"node": 2}},
    "PodLifeTime": {"namespaces": {"include": ["a"]}, "labelSelector": SELECTOR, "ownerKinds": {"exclude": ["Job"]},
                    "maxPodLifeTimeSeconds": 60, "states": ["Running"],
                    "conditions": [{"type": "Ready", "status": "False", "reason": "x",
                                    "minTimeSinceLastTransitionSeconds": 5}],
                    "exitCodes": [1], "includingInitContainers": True, "includingEphemeralContainers": True},
    "RemoveDuplicates": {"namespaces": {"exclude": ["a"]}, "excludeOwnerKinds": ["ReplicaSet"]},
    "RemoveFailedPods": {"namespaces": {"include": ["a"]}, "labelSelector": SELECTOR, "excludeOwnerKinds": ["Job"],
                         "minPodLifetimeSeconds": 60, "reasons": ["OOMKilled"], "exitCodes": [1],
                         "includingInitContainers": True},
    "RemovePodsHavingTooManyRestarts": {"namespaces": {"include": ["a"]}, "labelSelector": SELECTOR,
                                        "podRestartThreshold": 5, "includingInitContainers": True,
                                        "states": ["CrashLoopBackOff"]},
    "RemovePodsViolatingInterPodAntiAffinity": {"namespaces": {"include": ["a"]}, "labelSelector": SELECTOR},
    "RemovePodsViolatingNodeAffinity": {"namespaces": {"include": ["a"]}, "labelSelector": SELECTOR,
                                        "nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]},
    "RemovePodsViolatingNodeTaints": {"namespaces": {"include": ["a"]}, "labelSelector": SELECTOR,
                                      "includePreferNoSchedule": True, "excludedTaints": ["a"]},
    "RemovePodsViolatingTopologySpreadConstraint": {"namespaces": {"include": ["a"]}, "labelSelector": SELECTOR,
                                                    "constraints": ["DoNotSchedule", "ScheduleAnyway"],
                                                    "topologyBalanceNodeFit": False},
    "LowNodeLoad": {
        "paused": False, "dryRun": False, "numberOfNodes": 1, "nodeMetricExpirationSeconds": 180,
        "evictableNamespaces": {"exclude": ["kube-system"]}, "nodeSelector": SELECTOR,
        "podSelectors": [{"name": "web", "selector": SELECTOR}], "nodeFit": True, "useDeviationThresholds": False,
        "highThresholds": {"cpu": 60}, "lowThresholds": {"cpu": 20}, "prodHighThresholds": {"cpu": 50},
        "prodLowThresholds": {"cpu": 10}, "resourceWeights": {"cpu": 1},
        "anomalyCondition": {"timeout": "1m", "consecutiveAbnormalities": 1, "consecutiveNormalities": 1},
        "detectorCacheTimeout": "5m",
        "nodePools": [{"name": "pool", "nodeSelector": SELECTOR, "useDeviationThresholds": False,
                       "highThresholds": {"cpu": 60}, "lowThresholds": {"cpu": 20}, "prodHighThresholds": {"cpu": 50},
                       "prodLowThresholds": {"cpu": 10}, "resourceWeights": {"cpu": 1},
                       "anomalyCondition": {"timeout": "1m", "consecutiveAbnormalities": 1,
                                            "consecutiveNormalities": 1}}],
    },
    "MigrationController": {
        "dryRun": False, "maxConcurrentReconciles": 1, "evictFailedBarePods": True, "evictAllBarePods": False,
        "evictLocalStoragePods": True, "evictSystemCriticalPods": False, "ignorePvcPods": False,
        "priorityThreshold": {"value": 1000}, "labelSelector": SELECTOR, "namespaces": {"exclude": ["kube-system"]},
        "nodeFit": True, "nodeSelector": "pool=batch", "skipEvictionGates": ["PVC"], "maxMigratingGlobally": 5,
        "maxMigratingPerNode": 2, "maxMigratingPerNamespace": 3, "maxMigratingPerWorkload": "10%",
        "maxUnavailablePerWorkload": 1, "skipCheckExpectedReplicas": False,
        "objectLimiters": {"workload": {"duration": "5m", "maxMigrating": 1, "burst": 1}},
        "defaultJobMode": "EvictDirectly", "defaultJobTTL": "5m", "schedulerNames": ["koord-scheduler"],
        "evictQPS": "10", "evictBurst": 1, "evictionPolicy": "Eviction",
        "defaultDeleteOptions": {"gracePeriodSeconds": 30, "preconditions": {"uid": "u", "resourceVersion": "1"},
                                 "orphanDependents": False, "propagationPolicy": "Background", "dryRun": [],
                                 "ignoreStoreReadErrorWithClusterBreakingPotential": False},
        "arbitrationArgs": {"enabled": True, "interval": "500ms"},
    },
}
# The deprecated DefaultEvictor booleans are fields too (they do not combine with extraEnabled and defaultDisabled).
EVICTOR_BOOLEANS = {k: True for k in ("evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods",
                                      "ignorePvcPods", "ignorePodsWithoutPDB", "evictFailedBarePods")}
# The fields that do not combine with the ones above: a second set of args.
OTHER_ARGS: dict[str, dict[str, Any]] = {"DefaultEvictor": EVICTOR_BOOLEANS,
                                         "RemovePodsViolatingNodeTaints": {"includedTaints": ["a"]}}
KOORD_PLUGINS = {"LowNodeLoad", "MigrationController"}
PLUGINS = sorted(FULL_ARGS)


def _point(name: str) -> str:
    return in_tree_registry().get(name).points[0]


def _policy(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A policy that enables `name` with these args (as the second pluginConfig entry for a filter plugin)."""
    point = _point(name)
    if name in KOORD_PLUGINS:
        configs = [{"name": "LowNodeLoad", "args": FULL_ARGS["LowNodeLoad"]}, {"name": "MigrationController"}]
        configs[0 if name == "LowNodeLoad" else 1]["args"] = args
        return {"apiVersion": API, "kind": "DeschedulerConfiguration", "profiles": [{
            "name": "k", "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}}, "pluginConfig": configs}]}
    runs = "RemoveDuplicates" if point == "filter" else name
    configs = [{"name": runs, "args": {} if point == "filter" else args}]
    if point == "filter":
        configs.append({"name": name, "args": args})
    return {"apiVersion": API, "kind": "DeschedulerPolicy", "profiles": [{
        "name": "p", "plugins": {_point(runs): {"enabled": [runs]}}, "pluginConfig": configs}]}


def _config_index(name: str) -> int:
    return 1 if name in ("DefaultEvictor", "MigrationController") else 0


UPSTREAM_FIELDS = {name: {*args, *OTHER_ARGS.get(name, {})} for name, args in FULL_ARGS.items()}


@pytest.mark.parametrize("name", PLUGINS)
def test_args_have_exactly_upstreams_fields(name: str) -> None:
    args_type = in_tree_registry().get(name).args_type
    assert args_type is not None
    assert {json_key(f) for f in dataclasses.fields(args_type)} == UPSTREAM_FIELDS[name]


@pytest.mark.parametrize("name", PLUGINS)
def test_every_upstream_field_is_accepted(name: str) -> None:
    policy = decode_policy(_policy(name, FULL_ARGS[name]), in_tree_registry(), "policy.yaml")
    assert policy.warnings == []


@pytest.mark.parametrize("name", sorted(OTHER_ARGS))
def test_the_other_upstream_fields_are_accepted(name: str) -> None:
    policy = decode_policy(_policy(name, OTHER_ARGS[name]), in_tree_registry(), "policy.yaml")
    assert all(w.endswith(": deprecated, use podProtections") for w in policy.warnings)  # the evictor's booleans


def test_prometheus_query_is_an_upstream_field_not_an_unknown_one() -> None:
    """LowNodeUtilization's metricsUtilization.prometheus.query is upstream's: whatever is said of it, it is not
    refused as an unknown field."""
    args = {**FULL_ARGS["LowNodeUtilization"], "metricsUtilization": {"source": "Prometheus",
                                                                       "prometheus": {"query": "instance:cpu"}}}
    try:
        decode_policy(_policy("LowNodeUtilization", args), in_tree_registry(), "policy.yaml")
    except ConfigError as e:
        assert "unknown field" not in e.message


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(b.cluster(b.node("n1"), b.node("n2"), b.pod("a", "n1"))))
    b.isolate_from_the_user(tmp_path, monkeypatch)
    return tmp_path


def _refused(workdir: Path, policy: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> str:
    """The one stderr line of `run --policy policy.yaml` on a snapshot, which must exit with 2."""
    (workdir / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    monkeypatch.setattr(sys, "argv", ["kubectl-desched", "run", "--policy", "policy.yaml", "--from-file",
                                      "snap.yaml", "-A", "--dry-run=client"])
    with pytest.raises(SystemExit) as exited:
        main()
    out, err = capsys.readouterr()
    assert exited.value.code == 2
    assert out == ""
    (line,) = err.splitlines()
    return line


@pytest.mark.parametrize("name", PLUGINS)
def test_an_unknown_args_field_refuses_the_policy(name: str, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    policy = _policy(name, {**FULL_ARGS[name], "unknownKnob": 1})
    assert _refused(workdir, policy, monkeypatch, capsys) == (
        f"error: policy.yaml: profiles[0].pluginConfig[{_config_index(name)}].args.unknownKnob: unknown field")


@pytest.mark.parametrize("name", PLUGINS)
def test_an_unknown_nested_field_refuses_the_policy(name: str, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """One level down (a selector, a namespaces object, a threshold pool): refused the same way."""
    args = FULL_ARGS[name]
    key = next(k for k, v in args.items() if isinstance(v, dict) and not k.endswith(("hresholds", "Weights")))
    policy = _policy(name, {**args, key: {**args[key], "unknownKnob": 1}})
    line = _refused(workdir, policy, monkeypatch, capsys)
    assert line == f"error: policy.yaml: profiles[0].pluginConfig[{_config_index(name)}].args.{key}.unknownKnob: " \
                   "unknown field"


@pytest.mark.parametrize(("where", "shown"), [
    ("key", "args.a\\rerror: forged: unknown field"), ("plugin", "name: plugin a\\nerror: forged is not registered")])
def test_a_newline_in_a_key_or_a_name_is_shown_not_obeyed(where: str, shown: str, workdir: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the fuzzed policies: an echoed key or plugin name with a newline made the error's own message two
    lines (the CLI's last guard kept what it printed to one)."""
    policy = _policy("LowNodeUtilization", {"a\rerror: forged": 1})
    if where == "plugin":
        policy["profiles"][0]["pluginConfig"].append({"name": "a\nerror: forged"})
    with pytest.raises(ConfigError) as refused:
        decode_policy(policy, in_tree_registry(), "policy.yaml")
    assert "\n" not in str(refused.value) and "\r" not in str(refused.value) and shown in str(refused.value)
    line = _refused(workdir, policy, monkeypatch, capsys)  # one line, exit 2
    assert shown in line, line


def test_high_node_utilization_refuses_metrics_utilization(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream v0.36.0: `strict decoding error: unknown field "metricsUtilization"`; the field is
    LowNodeUtilization's only."""
    args = {"thresholds": {"cpu": 20}, "metricsUtilization": {"source": "KubernetesMetrics"}}
    assert _refused(workdir, _policy("HighNodeUtilization", args), monkeypatch, capsys) == (
        "error: policy.yaml: profiles[0].pluginConfig[0].args.metricsUtilization: unknown field")


@pytest.mark.parametrize("key", ["kind", "apiVersion"])
def test_type_meta_is_allowed_at_the_top_of_the_args_only(key: str, workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Every args type inlines metav1.TypeMeta; the structs inside them do not."""
    args = {**FULL_ARGS["LowNodeUtilization"], key: "x"}
    args["evictionLimits"] = {"node": 1, key: "x"}
    assert _refused(workdir, _policy("LowNodeUtilization", args), monkeypatch, capsys) == (
        f"error: policy.yaml: profiles[0].pluginConfig[{_config_index('LowNodeUtilization')}].args.evictionLimits."
        f"{key}: unknown field")


def test_field_names_are_case_sensitive(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """sigs.k8s.io/json compares names case-sensitively in strict decoding: `Thresholds` is not `thresholds`."""
    args = {"Thresholds": {"cpu": 20}, "thresholds": {"cpu": 20}}
    assert _refused(workdir, _policy("HighNodeUtilization", args), monkeypatch, capsys) == (
        "error: policy.yaml: profiles[0].pluginConfig[0].args.Thresholds: unknown field "
        "(field names are case-sensitive: thresholds)")


def test_unknown_policy_fields_still_only_warn(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream decodes the DeschedulerPolicy leniently: an unknown top-level or profile field is ignored there,
    and warned about here; metricsProviders is upstream's and accepted silently."""
    policy = _policy("PodLifeTime", FULL_ARGS["PodLifeTime"])
    policy.update(shinyNewField=1, metricsProviders=[{"source": "KubernetesMetrics"}])
    policy["profiles"][0]["shiny"] = 1
    (workdir / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    monkeypatch.setattr(sys, "argv", ["kubectl-desched", "run", "--policy", "policy.yaml", "--from-file",
                                      "snap.yaml", "-A", "--dry-run=client", "-o", "name"])
    with pytest.raises(SystemExit) as exited:
        main()
    _, err = capsys.readouterr()
    assert exited.value.code == 0
    assert "warning: policy.yaml: shinyNewField: unknown field, ignored" in err
    assert "warning: policy.yaml: profiles[0].shiny: unknown field, ignored" in err
    assert "metricsProviders" not in err


def test_an_unknown_koordinator_field_refuses_the_configuration(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """koord-descheduler decodes its whole configuration strictly."""
    policy = _policy("LowNodeLoad", FULL_ARGS["LowNodeLoad"])
    policy["deschedulingIntervall"] = "1m"
    assert _refused(workdir, policy, monkeypatch, capsys) == (
        "error: policy.yaml: deschedulingIntervall: unknown field (did you mean deschedulingInterval?)")


def test_prometheus_beside_metrics_server_is_refused(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Upstream reads metrics-server then and ignores the query: the tool says so instead of guessing."""
    args = {"thresholds": {"MetricResource": 20}, "targetThresholds": {"MetricResource": 50},
            "metricsUtilization": {"source": "Prometheus", "metricsServer": True, "prometheus": {"query": "q"}}}
    line = _refused(workdir, _policy("LowNodeUtilization", args), monkeypatch, capsys)
    assert line.endswith("args.metricsUtilization.metricsServer: set either source Prometheus or metricsServer, "
                         "not both"), line
