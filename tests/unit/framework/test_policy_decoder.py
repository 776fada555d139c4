"""Policy loading: upstream DeschedulerPolicy, Koordinator DeschedulerConfiguration, errors with field paths,
warnings for unknown fields, and --policy-patch."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_desched.app.policy_files import load_policy, patch_text
from kubectl_desched.errors import ConfigError, UsageError
from kubectl_desched.framework.args import PluginArgs, decode_args
from kubectl_desched.framework.policy_decoder import Policy, apply_patch, decode_policy, policy_from_plugins
from kubectl_desched.framework.registry import Registry
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.plugins.koordinator.migrationcontroller import MigrationControllerArgs
from kubectl_desched.plugins.upstream.defaultevictor import DefaultEvictorArgs
from kubectl_desched.plugins.upstream.lownodeutilization import LowNodeUtilizationArgs

API = "descheduler/v1alpha2"
LNU_ARGS = {"thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 50, "memory": 60}}


@pytest.fixture
def registry() -> Registry:
    return in_tree_registry()


def _upstream(*profiles: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "DeschedulerPolicy", **top, "profiles": list(profiles)}


def _lnu_profile(name: str = "p", args: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name,
            "pluginConfig": [{"name": "LowNodeUtilization", "args": LNU_ARGS if args is None else args}],
            "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}}, **extra}


def _names(uses: list[Any]) -> list[str]:
    return [u.spec.name for u in uses]


def _write(tmp_path: Path, doc: dict[str, Any] | str, name: str = "policy.yaml") -> str:
    f = tmp_path / name
    f.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    return str(f)


def _error(raw: dict[str, Any], registry: Registry, source: str = "policy.yaml") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        decode_policy(raw, registry, source)
    assert "\n" not in str(info.value)
    assert info.value.exit_code == 2
    assert str(info.value).startswith(f"{source}: ")
    return info.value


# --- upstream DeschedulerPolicy ----------------------------------------------------------------------------------

UPSTREAM_POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "pool=general,!legacy"
maxNoOfPodsToEvictPerNode: 3
maxNoOfPodsToEvictPerNamespace: 2
maxNoOfPodsToEvictTotal: 10
gracePeriodSeconds: 30
profiles:
  - name: balance-cpu
    pluginConfig:
      - name: DefaultEvictor
        args:
          nodeFit: true
          minReplicas: 2
          podProtections:
            extraEnabled: [PodsWithPVC]
            defaultDisabled: [PodsWithLocalStorage]
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 20, memory: 20, pods: 20}
          targetThresholds: {cpu: 50, memory: 50, pods: 50}
          numberOfNodes: 1
          evictableNamespaces: {exclude: [kube-system]}
          evictionLimits: {node: 4}
    plugins:
      balance:
        enabled: [LowNodeUtilization]
  - name: balance-memory
    pluginConfig:
      - name: LowNodeUtilization
        args:
          thresholds: {memory: 10}
          targetThresholds: {memory: 70}
    plugins:
      balance:
        enabled: [LowNodeUtilization]
      filter:
        enabled: [DefaultEvictor]
      preevictionfilter:
        enabled: [DefaultEvictor]
"""


def test_upstream_policy_two_profiles(tmp_path: Path, registry: Registry) -> None:
    path = _write(tmp_path, UPSTREAM_POLICY)
    policy = load_policy(path, registry)
    assert policy.kind == "DeschedulerPolicy"
    assert policy.source == path
    assert (policy.limits.per_node, policy.limits.per_namespace, policy.limits.total) == (3, 2, 10)
    assert policy.node_selector is not None
    assert policy.node_selector({"pool": "general"})
    assert not policy.node_selector({"pool": "general", "legacy": "1"})
    assert not policy.node_selector({"pool": "gpu"})
    assert [p.name for p in policy.profiles] == ["balance-cpu", "balance-memory"]
    assert policy.plugin_names() == ["LowNodeUtilization", "LowNodeUtilization"]
    assert policy.warnings == []  # gracePeriodSeconds is a known daemon field

    first, second = policy.profiles
    assert _names(first.filters) == ["DefaultEvictor"] == _names(first.pre_eviction_filters)
    assert _names(second.filters) == ["DefaultEvictor"] == _names(second.pre_eviction_filters)
    assert first.deschedule == [] and _names(first.balance) == ["LowNodeUtilization"]

    evictor = first.filters[0].args
    assert isinstance(evictor, DefaultEvictorArgs)
    assert evictor.node_fit and evictor.min_replicas == 2
    assert evictor.protections() == {"DaemonSetPods", "SystemCriticalPods", "FailedBarePods", "PodsWithPVC"}
    assert isinstance(second.filters[0].args, DefaultEvictorArgs)
    assert second.filters[0].args.protections() == {"PodsWithLocalStorage", "DaemonSetPods",
                                                    "SystemCriticalPods", "FailedBarePods"}

    lnu = first.balance[0].args
    assert isinstance(lnu, LowNodeUtilizationArgs)
    assert lnu.thresholds == {"cpu": 20.0, "memory": 20.0, "pods": 20.0}
    assert lnu.number_of_nodes == 1
    assert lnu.evictable_namespaces is not None and lnu.evictable_namespaces.exclude == ["kube-system"]
    assert lnu.eviction_limits is not None and lnu.eviction_limits.node == 4
    assert first.balance[0].path == "profiles[0].pluginConfig[1].args"
    assert second.balance[0].args.target_thresholds == {"memory": 70.0}


@pytest.mark.parametrize("key", ["preEvictionFilter", "preevictionfilter"])
def test_pre_eviction_filter_spellings(registry: Registry, key: str) -> None:
    profile = _lnu_profile()
    profile["plugins"][key] = {"enabled": ["DefaultEvictor"]}
    policy = decode_policy(_upstream(profile), registry, "p.yaml")
    assert _names(policy.profiles[0].pre_eviction_filters) == ["DefaultEvictor"]
    assert policy.warnings == []


def test_default_evictor_added_when_missing(registry: Registry) -> None:
    policy = decode_policy(_upstream(_lnu_profile()), registry, "p.yaml")
    prof = policy.profiles[0]
    assert _names(prof.filters) == ["DefaultEvictor"]
    assert _names(prof.pre_eviction_filters) == ["DefaultEvictor"]
    assert isinstance(prof.filters[0].args, DefaultEvictorArgs)
    assert prof.filters[0].args == DefaultEvictorArgs()


def test_default_evictor_goes_first_next_to_another_filter(registry: Registry) -> None:
    profile = _lnu_profile()
    profile["plugins"]["filter"] = {"enabled": ["MigrationController"]}
    policy = decode_policy(_upstream(profile), registry, "p.yaml")
    assert _names(policy.profiles[0].filters) == ["DefaultEvictor", "MigrationController"]


def test_upstream_disabled_is_warned_and_ignored(registry: Registry) -> None:
    profile = _lnu_profile()
    profile["plugins"]["balance"]["disabled"] = ["LowNodeUtilization"]
    profile["plugins"]["filter"] = {"disabled": ["DefaultEvictor"]}
    policy = decode_policy(_upstream(profile), registry, "p.yaml")
    assert _names(policy.profiles[0].balance) == ["LowNodeUtilization"]
    assert _names(policy.profiles[0].filters) == ["DefaultEvictor"]
    assert "p.yaml: profiles[0].plugins.balance.disabled: ignored, as upstream does" in policy.warnings
    assert "p.yaml: profiles[0].plugins.filter.disabled: ignored, as upstream does" in policy.warnings


def test_unknown_policy_fields_are_warnings(registry: Registry) -> None:
    """Upstream decodes the DeschedulerPolicy itself leniently (its scheme's codec is not strict): unknown fields
    there are ignored, and warned about here; only the plugins' args are decoded strictly."""
    profile = _lnu_profile(shinyProfileField=1)
    profile["plugins"]["sideways"] = {"enabled": ["X"]}
    profile["plugins"]["balance"]["weights"] = {}
    profile["pluginConfig"][0]["weight"] = 2
    raw = _upstream(profile, shinyNewField=True, ignorePVCPods=True)  # a v1alpha1 field v1alpha2 does not have
    policy = decode_policy(raw, registry, "p.yaml")
    assert sorted(policy.warnings) == [
        "p.yaml: ignorePVCPods: unknown field, ignored",
        "p.yaml: profiles[0].pluginConfig[0].weight: unknown field, ignored",
        "p.yaml: profiles[0].plugins.balance.weights: unknown field, ignored",
        "p.yaml: profiles[0].plugins.sideways: unknown extension point, ignored",
        "p.yaml: profiles[0].shinyProfileField: unknown field, ignored",
        "p.yaml: shinyNewField: unknown field, ignored",
    ]


def test_upstream_daemon_fields_are_accepted_silently(registry: Registry) -> None:
    raw = _upstream(_lnu_profile(), gracePeriodSeconds=5, evictionFailureEventNotification=True,
                    metricsCollector={"enabled": False},
                    metricsProviders=[{"source": "Prometheus", "prometheus": {"url": "https://prom:9090"}}])
    assert decode_policy(raw, registry, "p.yaml").warnings == []


@pytest.mark.parametrize(("args", "path", "hint"), [
    ({**LNU_ARGS, "futureKnob": 3}, "futureKnob", ""),
    ({**LNU_ARGS, "Thresholds": {"cpu": 1}}, "Thresholds", " (field names are case-sensitive: thresholds)"),
    ({**LNU_ARGS, "targetThreshold": {}}, "targetThreshold", " (did you mean targetThresholds?)"),
    ({**LNU_ARGS, "evictableNamespaces": {"include": ["a"], "inlcude": []}}, "evictableNamespaces.inlcude",
     " (did you mean include?)"),
    ({**LNU_ARGS, "evictionLimits": {"node": 1, "total": 3}}, "evictionLimits.total", ""),
    ({**LNU_ARGS, "metricsUtilization": {"metricsServer": True, "prometheus": {"query": "q", "url": "x"}}},
     "metricsUtilization.prometheus.url", ""),
])
def test_unknown_args_fields_are_errors(registry: Registry, args: dict[str, Any], path: str, hint: str) -> None:
    """Upstream decodes each pluginConfig's args strictly: `strict decoding error: unknown field "..."`."""
    e = _error(_upstream(_lnu_profile(args=args)), registry)
    assert (e.path, e.message) == (f"profiles[0].pluginConfig[0].args.{path}", f"unknown field{hint}")


def test_args_of_a_plugin_not_enabled_are_decoded_too(registry: Registry) -> None:
    profile = _lnu_profile()
    profile["pluginConfig"].append({"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 60, "typo": 1}})
    e = _error(_upstream(profile), registry)
    assert (e.path, e.message) == ("profiles[0].pluginConfig[1].args.typo", "unknown field")


@pytest.mark.parametrize(("selector", "path"), [
    ({"matchLabel": {"a": "b"}}, "labelSelector.matchLabel"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "value": []}]},
     "labelSelector.matchExpressions[0].value"),
])
def test_unknown_selector_fields_in_args_are_errors(registry: Registry, selector: dict[str, Any], path: str) -> None:
    profile = _lnu_profile()
    profile["pluginConfig"].append({"name": "DefaultEvictor", "args": {"labelSelector": selector}})
    e = _error(_upstream(profile), registry)
    assert (e.path, e.message[:13]) == (f"profiles[0].pluginConfig[1].args.{path}", "unknown field")


def test_deprecated_evictor_booleans_warn(registry: Registry) -> None:
    profile = _lnu_profile()
    profile["pluginConfig"].append({"name": "DefaultEvictor", "args": {"evictLocalStoragePods": True}})
    policy = decode_policy(_upstream(profile), registry, "p.yaml")
    assert policy.warnings == ["p.yaml: profiles[0].pluginConfig[1].args.evictLocalStoragePods: deprecated, "
                               "use podProtections"]
    assert "PodsWithLocalStorage" not in policy.profiles[0].filters[0].args.protections()


# --- Koordinator DeschedulerConfiguration ------------------------------------------------------------------------

KOORD_CONFIG = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
deschedulingInterval: 60s
dryRun: true
leaderElection: {leaderElect: false}
nodeSelector:
  matchLabels: {pool: batch}
maxNoOfPodsToEvictTotal: 5
profiles:
  - name: koord
    nodeSelector:
      matchExpressions:
        - {key: zone, operator: In, values: [a, b]}
    plugins:
      balance:
        enabled:
          - name: LowNodeUtilization
    pluginConfig:
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 20}
          targetThresholds: {cpu: 60}
      - name: MigrationController
        args:
          evictAllBarePods: true
          maxMigratingPerNode: 2
          defaultJobMode: EvictDirectly
          namespaces: {exclude: [kube-system]}
"""


def test_koordinator_configuration(tmp_path: Path, registry: Registry) -> None:
    policy = load_policy(_write(tmp_path, KOORD_CONFIG), registry)
    assert policy.kind == "DeschedulerConfiguration"
    assert policy.warnings == []  # daemon fields and controller args are accepted silently
    assert policy.limits.total == 5
    assert policy.node_selector is not None
    assert policy.node_selector({"pool": "batch"}) and not policy.node_selector({"pool": "web"})
    (prof,) = policy.profiles
    assert prof.name == "koord"
    assert prof.node_selector is not None
    assert prof.node_selector({"zone": "b"}) and not prof.node_selector({"zone": "c"})
    assert _names(prof.balance) == ["LowNodeUtilization"]
    assert _names(prof.filters) == ["MigrationController"]  # the default filter
    assert _names(prof.pre_eviction_filters) == ["MigrationController"]
    assert policy.evict_plugins == ["MigrationController"]
    mc = prof.filters[0].args
    assert isinstance(mc, MigrationControllerArgs)
    assert mc.evict_all_bare_pods and mc.max_migrating_per_node == 2
    assert mc.namespaces is not None and mc.namespaces.exclude == ["kube-system"]


def test_koordinator_defaults_one_profile(registry: Registry) -> None:
    policy = decode_policy({"apiVersion": API, "kind": "DeschedulerConfiguration"}, registry, "k.yaml")
    (prof,) = policy.profiles
    assert prof.name == "koord-descheduler"
    assert _names(prof.filters) == ["MigrationController"]
    assert prof.balance == [] and prof.deschedule == []


def test_koordinator_disabled_star_drops_defaults(registry: Registry) -> None:
    raw = {"apiVersion": API, "kind": "DeschedulerConfiguration", "profiles": [{
        "name": "k",
        "plugins": {"filter": {"disabled": [{"name": "*"}], "enabled": [{"name": "DefaultEvictor"}]},
                    "evict": {"disabled": [{"name": "*"}]}},
    }]}
    policy = decode_policy(raw, registry, "k.yaml")
    prof = policy.profiles[0]
    assert _names(prof.filters) == ["DefaultEvictor"]
    assert _names(prof.pre_eviction_filters) == ["DefaultEvictor"]
    assert policy.evict_plugins == []


def test_koordinator_disabling_the_default_by_name(registry: Registry) -> None:
    raw = {"apiVersion": API, "kind": "DeschedulerConfiguration", "profiles": [{
        "name": "k", "plugins": {"filter": {"disabled": [{"name": "MigrationController"}]}}}]}
    assert decode_policy(raw, registry, "k.yaml").profiles[0].filters == []


def test_koordinator_enabled_plugin_without_plugin_config_uses_defaults(registry: Registry) -> None:
    raw = {"apiVersion": API, "kind": "DeschedulerConfiguration", "profiles": [{
        "name": "k", "plugins": {"filter": {"enabled": [{"name": "DefaultEvictor"}]}}}]}
    prof = decode_policy(raw, registry, "k.yaml").profiles[0]
    assert _names(prof.filters) == ["MigrationController", "DefaultEvictor"]
    assert prof.filters[1].args == DefaultEvictorArgs()


def test_koordinator_unnamed_profile_needs_a_name_when_there_are_several(registry: Registry) -> None:
    raw = {"apiVersion": API, "kind": "DeschedulerConfiguration", "profiles": [{}, {"name": "x"}]}
    assert _error(raw, registry, "k.yaml").path == "profiles[0].name"


def _koord(**profile: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "DeschedulerConfiguration", "profiles": [{
        "name": "k", "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}},
        "pluginConfig": [{"name": "LowNodeLoad", "args": {"lowThresholds": {"cpu": 20}, "highThresholds": {"cpu": 50}}},
                         {"name": "MigrationController", "args": {"evictAllBarePods": True}}], **profile}]}


@pytest.mark.parametrize(("mutate", "path"), [
    (lambda r: r.update(shinyNewField=1), "shinyNewField"),
    (lambda r: r.update(metricsProviders=[]), "metricsProviders"),  # upstream's, not Koordinator's
    (lambda r: r.update(leaderElection={"leaderElect": False, "leaseDurations": "15s"}),
     "leaderElection.leaseDurations"),
    (lambda r: r.update(clientConnection={"qps": 5, "QPS": 5}), "clientConnection.QPS"),
    (lambda r: r.update(nodeSelector={"matchLabels": {"a": "b"}, "matchFields": []}), "nodeSelector.matchFields"),
    (lambda r: r["profiles"][0].update(weight=1), "profiles[0].weight"),
    (lambda r: r["profiles"][0].update(nodeSelector={"matchExpressions": [{"key": "a", "operator": "Exists",
                                                                           "vals": []}]}),
     "profiles[0].nodeSelector.matchExpressions[0].vals"),
    (lambda r: r["profiles"][0]["plugins"].update(preEvictionFilter={"enabled": []}),
     "profiles[0].plugins.preEvictionFilter"),
    (lambda r: r["profiles"][0]["plugins"]["balance"].update(enable=[]), "profiles[0].plugins.balance.enable"),
    (lambda r: r["profiles"][0]["plugins"]["balance"]["enabled"][0].update(weight=1),
     "profiles[0].plugins.balance.enabled[0].weight"),
    (lambda r: r["profiles"][0]["pluginConfig"][0].update(arg={}), "profiles[0].pluginConfig[0].arg"),
    (lambda r: r["profiles"][0]["pluginConfig"][0]["args"].update(highThreshold={}),
     "profiles[0].pluginConfig[0].args.highThreshold"),
    (lambda r: r["profiles"][0]["pluginConfig"][0]["args"].update(nodePools=[{"name": "a", "selector": {}}]),
     "profiles[0].pluginConfig[0].args.nodePools[0].selector"),
    (lambda r: r["profiles"][0]["pluginConfig"][1]["args"].update(arbitrationArgs={"enabled": True, "qps": 1}),
     "profiles[0].pluginConfig[1].args.arbitrationArgs.qps"),
    (lambda r: r["profiles"][0]["pluginConfig"][1]["args"].update(objectLimiters={"workload": {"burst": 1, "x": 1}}),
     "profiles[0].pluginConfig[1].args.objectLimiters.workload.x"),
    (lambda r: r["profiles"][0]["pluginConfig"][1]["args"].update(
        defaultDeleteOptions={"preconditions": {"uid": "u", "generation": 1}}),
     "profiles[0].pluginConfig[1].args.defaultDeleteOptions.preconditions.generation"),
])
def test_koordinator_decodes_its_configuration_strictly(registry: Registry, mutate: Any, path: str) -> None:
    """koord-descheduler's codec is strict for the whole configuration (`strict decoding error: unknown
    field ...`), its plugins' args included."""
    raw = _koord()
    mutate(raw)
    e = _error(raw, registry, "k.yaml")
    assert (e.path, e.message.split(" (")[0]) == (path, "unknown field")


def test_koordinator_accepts_every_field_of_its_types(registry: Registry) -> None:
    raw = _koord()
    raw.update(leaderElection={"leaderElect": False, "leaseDuration": "15s", "renewDeadline": "10s",
                               "retryPeriod": "2s", "resourceLock": "leases", "resourceName": "x",
                               "resourceNamespace": "y"},
               clientConnection={"kubeconfig": "", "acceptContentTypes": "", "contentType": "", "qps": 5, "burst": 10},
               enableProfiling=False, enableContentionProfiling=False, healthzBindAddress="0.0.0.0:10251",
               metricsBindAddress="0.0.0.0:10251", deschedulingInterval="1m", dryRun=True,
               nodeSelector={"matchLabels": {"a": "b"}}, maxNoOfPodsToEvictPerNode=1,
               maxNoOfPodsToEvictPerNamespace=1, maxNoOfPodsToEvictTotal=1)
    prof = raw["profiles"][0]
    prof["nodeSelector"] = {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}
    prof["plugins"].update(deschedule={"disabled": [{"name": "*"}]},
                           evict={"enabled": [{"name": "MigrationController"}]}, filter={"enabled": [], "disabled": []})
    prof["pluginConfig"][1]["args"].update(
        apiVersion=API, kind="MigrationControllerArgs", arbitrationArgs={"enabled": True, "interval": "500ms"},
        objectLimiters={"workload": {"duration": "5m", "maxMigrating": "10%", "burst": 1}},
        defaultDeleteOptions={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 30,
                              "preconditions": {"uid": "u", "resourceVersion": "1"}, "orphanDependents": False,
                              "propagationPolicy": "Background", "dryRun": [],
                              "ignoreStoreReadErrorWithClusterBreakingPotential": False})
    assert decode_policy(raw, registry, "k.yaml").warnings == []


def test_koordinator_decodes_upstream_plugins_args_leniently(registry: Registry) -> None:
    """koord-descheduler decodes its copies of upstream's plugins (DefaultEvictor too) with client-go's lenient
    scheme: an unknown field there is ignored, as it is here with a warning."""
    raw = _koord()
    raw["profiles"][0]["plugins"]["filter"] = {"enabled": [{"name": "DefaultEvictor"}]}
    raw["profiles"][0]["pluginConfig"].append({"name": "DefaultEvictor", "args": {"nodeFit": True, "nodeFitt": 1}})
    policy = decode_policy(raw, registry, "k.yaml")
    assert policy.warnings == ["k.yaml: profiles[0].pluginConfig[2].args.nodeFitt: unknown field, ignored"]
    assert policy.profiles[0].filters[1].args.node_fit


# --- errors ------------------------------------------------------------------------------------------------------


def test_wrong_api_version_hints_at_v1alpha1(registry: Registry) -> None:
    raw = _upstream(_lnu_profile())
    raw["apiVersion"] = "descheduler/v1alpha1"
    e = _error(raw, registry)
    assert e.path == "apiVersion"
    assert "v1alpha1 strategies are not supported" in e.message
    raw["apiVersion"] = "v1"
    e = _error(raw, registry)
    assert e.message == "must be descheduler/v1alpha2, not 'v1'"


def test_wrong_kind(registry: Registry) -> None:
    raw = _upstream(_lnu_profile())
    raw["kind"] = "ConfigMap"
    e = _error(raw, registry)
    assert str(e) == "policy.yaml: kind: must be DeschedulerPolicy or DeschedulerConfiguration, not 'ConfigMap'"


def test_unknown_plugin_enabled(registry: Registry) -> None:
    profile = _lnu_profile()
    profile["plugins"]["balance"]["enabled"].append("HighNodeUtilizationX")
    e = _error(_upstream(profile), registry)
    assert e.path == "profiles[0].plugins.balance.enabled[1]"
    assert e.message.startswith("unknown plugin HighNodeUtilizationX; known: DefaultEvictor, ")
    assert "LowNodeUtilization" in e.message


def test_unknown_plugin_configured(registry: Registry) -> None:
    profile = _lnu_profile()
    profile["pluginConfig"].append({"name": "Nope", "args": {}})
    e = _error(_upstream(profile), registry)
    assert e.path == "profiles[0].pluginConfig[1].name"
    assert e.message.startswith("plugin Nope is not registered")


@pytest.mark.parametrize(
    ("point", "plugin", "implements"),
    [("deschedule", "LowNodeUtilization", "balance"), ("balance", "DefaultEvictor", "filter, preEvictionFilter"),
     ("filter", "LowNodeUtilization", "balance")],
)
def test_plugin_at_wrong_extension_point(registry: Registry, point: str, plugin: str, implements: str) -> None:
    profile = {"name": "p", "pluginConfig": [{"name": "LowNodeUtilization", "args": LNU_ARGS}],
               "plugins": {point: {"enabled": [plugin]}}}
    e = _error(_upstream(profile), registry)
    assert e.path.startswith(f"profiles[0].plugins.{point}.enabled[")
    assert e.message == f"plugin {plugin} does not implement {point} (it implements {implements})"


def test_upstream_enabled_plugin_needs_plugin_config(registry: Registry) -> None:
    profile = {"name": "p", "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}}}
    e = _error(_upstream(profile), registry)
    assert str(e) == ("policy.yaml: profiles[0].plugins.balance.enabled[0]: plugin LowNodeUtilization is enabled "
                      "but has no pluginConfig entry")


def test_duplicate_plugin_config(registry: Registry) -> None:
    profile = _lnu_profile()
    profile["pluginConfig"].append({"name": "LowNodeUtilization", "args": LNU_ARGS})
    e = _error(_upstream(profile), registry)
    assert (e.path, e.message) == ("profiles[0].pluginConfig[1].name", "plugin LowNodeUtilization is configured twice")


def test_threshold_out_of_range_names_the_field(registry: Registry) -> None:
    profile = _lnu_profile(args={"thresholds": {"cpu": 120, "memory": 20}, "targetThresholds": {"cpu": 50,
                                                                                                   "memory": 60}})
    profile["pluginConfig"].insert(0, {"name": "DefaultEvictor", "args": {}})
    e = _error(_upstream(profile), registry)
    assert e.path == "profiles[0].pluginConfig[1].args.thresholds.cpu"
    assert e.message == "must be between 0 and 100, not 120"


def test_target_out_of_range(registry: Registry) -> None:
    e = _error(_upstream(_lnu_profile(args={"thresholds": {"cpu": 10}, "targetThresholds": {"cpu": -5}})), registry)
    assert e.path == "profiles[0].pluginConfig[0].args.targetThresholds.cpu"


def test_thresholds_above_targets(registry: Registry) -> None:
    args = {"thresholds": {"cpu": 60}, "targetThresholds": {"cpu": 50}}
    e = _error(_upstream(_lnu_profile(args=args)), registry)
    assert str(e) == ("policy.yaml: profiles[0].pluginConfig[0].args.thresholds.cpu: 60 is greater than "
                      "targetThresholds.cpu 50")
    policy = decode_policy(_upstream(_lnu_profile(args={**args, "useDeviationThresholds": True})), registry, "p")
    assert policy.profiles[0].balance[0].args.use_deviation_thresholds


@pytest.mark.parametrize(
    ("args", "path", "message"),
    [
        ({"thresholds": {"cpu": 10}, "targetThresholds": {"memory": 50}}, "targetThresholds",
         "thresholds and targetThresholds configured different resources"),
        ({"thresholds": {}, "targetThresholds": {"cpu": 50}}, "thresholds", "no resource threshold is configured"),
        ({**LNU_ARGS, "evictableNamespaces": {"include": ["a"]}}, "evictableNamespaces.include",
         "only exclude can be set, inclusion is not supported"),
        ({**LNU_ARGS, "evictableNamespaces": {"include": ["a"], "exclude": ["b"]}}, "evictableNamespaces",
         "only one of include and exclude can be set"),
        ({**LNU_ARGS, "numberOfNodes": -1}, "numberOfNodes", "must not be negative"),
        ({**LNU_ARGS, "numberOfNodes": "two"}, "numberOfNodes", "must be an integer, not 'two'"),
        ({**LNU_ARGS, "numberOfNodes": 1.5}, "numberOfNodes", "must be an integer, not 1.5"),
        ({**LNU_ARGS, "evictionLimits": {"node": -2}}, "evictionLimits.node", "must not be negative"),
        ({"thresholds": {"cpu": "lots"}, "targetThresholds": {"cpu": 50}}, "thresholds.cpu",
         "must be a number, not 'lots'"),
        ({"thresholds": [20], "targetThresholds": {"cpu": 50}}, "thresholds", "must be an object, not [20]"),
        ({**LNU_ARGS, "useDeviationThresholds": "yes"}, "useDeviationThresholds", "must be a boolean, not 'yes'"),
        ({**LNU_ARGS, "evictableNamespaces": {"exclude": "kube-system"}}, "evictableNamespaces.exclude",
         "must be a list, not 'kube-system'"),
        ({**LNU_ARGS, "metricsUtilization": {"source": "Graphite"}}, "metricsUtilization.source",
         "must be KubernetesMetrics or Prometheus"),
        ({**LNU_ARGS, "metricsUtilization": {"source": "Prometheus"}}, "metricsUtilization.prometheus.query",
         "required when source is Prometheus"),
    ],
)
def test_lnu_arg_errors(registry: Registry, args: dict[str, Any], path: str, message: str) -> None:
    e = _error(_upstream(_lnu_profile(args=args)), registry)
    assert (e.path, e.message) == (f"profiles[0].pluginConfig[0].args.{path}", message)


@pytest.mark.parametrize(
    ("args", "path", "message"),
    [
        ({"podProtections": {"extraEnabled": ["Bogus"]}}, "podProtections.extraEnabled[0]",
         "invalid pod protection 'Bogus'; valid: PodsWithPVC, PodsWithoutPDB, PodsWithResourceClaims"),
        ({"podProtections": {"defaultDisabled": ["DaemonSetPods", "DaemonSetPods"]}},
         "podProtections.defaultDisabled", "contains duplicate entries"),
        ({"podProtections": {"extraEnabled": ["PodsWithPVC"],
                             "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": ""}]}}}},
         "podProtections.config.PodsWithPVC.protectedStorageClasses[0].name", "cannot be empty"),
        ({"minReplicas": -1}, "minReplicas", "must not be negative"),
        ({"nodeSelector": "a b"}, "nodeSelector", "invalid label selector term 'a b'"),
        ({"priorityThreshold": {"value": 10, "name": "high"}}, "priorityThreshold",
         "priority threshold misconfigured, only one of value and name can be set"),
        ({"noEvictionPolicy": "Sometimes"}, "noEvictionPolicy",
         "must be one of , Preferred, Mandatory, not 'Sometimes'"),
        ({"minPodAge": "soon"}, "minPodAge", "must be a duration such as 5m, not 'soon'"),
        ({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}, "labelSelector",
         "matchExpressions[0]: unknown operator 'Near'"),
        ({"nodeFit": 1}, "nodeFit", "must be a boolean, not 1"),
    ],
)
def test_default_evictor_arg_errors(registry: Registry, args: dict[str, Any], path: str, message: str) -> None:
    profile = _lnu_profile()
    profile["pluginConfig"].append({"name": "DefaultEvictor", "args": args})
    e = _error(_upstream(profile), registry)
    assert (e.path, e.message) == (f"profiles[0].pluginConfig[1].args.{path}", message)


def test_pod_protections_conflict_with_deprecated_booleans(registry: Registry) -> None:
    profile = _lnu_profile()
    profile["pluginConfig"].append({"name": "DefaultEvictor", "args": {
        "evictDaemonSetPods": True, "podProtections": {"defaultDisabled": ["PodsWithLocalStorage"]}}})
    e = _error(_upstream(profile), registry)
    assert e.path == "profiles[0].pluginConfig[1].args"
    assert e.message.startswith("cannot use deprecated fields alongside podProtections")


@pytest.mark.parametrize("key", ["maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace",
                                 "maxNoOfPodsToEvictTotal"])
@pytest.mark.parametrize(("value", "written"), [(-1, "-1"), ("3", "'3'"), (1.5, "1.5"), (True, "true"),
                                               ([True, None], "[true, null]")])
def test_bad_limits(registry: Registry, key: str, value: Any, written: str) -> None:
    """The value as the policy author wrote it (YAML/JSON true and null), not as Python prints it."""
    e = _error(_upstream(_lnu_profile(), **{key: value}), registry)
    assert (e.path, e.message) == (key, f"must be a whole number >= 0, not {written}")


def test_zero_limits_are_allowed(registry: Registry) -> None:
    policy = decode_policy(_upstream(_lnu_profile(), maxNoOfPodsToEvictTotal=0), registry, "p")
    assert policy.limits.total == 0 and policy.limits.per_node is None


@pytest.mark.parametrize(
    ("mutate", "path", "message"),
    [
        (lambda r: r.update(profiles=[]), "profiles", "at least one profile is required"),
        (lambda r: r.update(profiles={"a": 1}), "profiles", "at least one profile is required"),
        (lambda r: r.pop("profiles"), "profiles", "at least one profile is required"),
        (lambda r: r["profiles"].append("x"), "profiles[1]", "must be an object"),
        (lambda r: r["profiles"][0].pop("name"), "profiles[0].name", "a profile needs a name"),
        (lambda r: r["profiles"].append(_lnu_profile()), "profiles[1].name", "duplicate profile name 'p'"),
        (lambda r: r["profiles"][0].update(plugins=["LowNodeUtilization"]), "profiles[0].plugins",
         "must be an object"),
        (lambda r: r["profiles"][0]["plugins"].update(balance=["LowNodeUtilization"]), "profiles[0].plugins.balance",
         "must be an object with enabled"),
        (lambda r: r["profiles"][0]["plugins"]["balance"].update(enabled="LowNodeUtilization"),
         "profiles[0].plugins.balance.enabled", "must be a list of plugin names"),
        (lambda r: r["profiles"][0]["plugins"]["balance"].update(enabled=[{"nam": "x"}]),
         "profiles[0].plugins.balance.enabled[0]", "must be a plugin name"),
        (lambda r: r["profiles"][0].update(pluginConfig={"name": "x"}), "profiles[0].pluginConfig",
         "must be a list of {name, args}"),
        (lambda r: r["profiles"][0]["pluginConfig"].append({"args": {}}), "profiles[0].pluginConfig[1]",
         "needs a name"),
        (lambda r: r["profiles"][0]["pluginConfig"][0].update(args=[1]), "profiles[0].pluginConfig[0].args",
         "must be an object, not [1]"),
        (lambda r: r.update(nodeSelector="a in (b"), "nodeSelector", "invalid label selector term 'a in (b'"),
        (lambda r: r["profiles"][0].update(nodeSelector={"matchLabels": "x"}), "profiles[0].nodeSelector",
         "matchLabels must be a map of strings"),
    ],
)
def test_structure_errors(registry: Registry, mutate: Any, path: str, message: str) -> None:
    raw = _upstream(_lnu_profile())
    mutate(raw)
    e = _error(raw, registry)
    assert (e.path, e.message) == (path, message)


def test_plugin_constructor_errors_name_file_and_path(registry: Registry) -> None:
    """Errors only a plugin's constructor can find (a PriorityClass that does not exist) are located too."""
    from kubectl_desched.framework.runner import Scope, run
    from kubectl_desched.model.objects import node_from_json
    from kubectl_desched.model.state import ClusterState
    from tests import builders as b

    profile = _lnu_profile()
    profile["pluginConfig"].append({"name": "DefaultEvictor", "args": {"priorityThreshold": {"name": "gold"}}})
    policy = decode_policy(_upstream(profile), registry, "pol.yaml")
    assert policy.required_kinds() == {"PriorityClass"}
    state = ClusterState([node_from_json(b.node("n1"))], [], extra={"PriorityClass": []})
    with pytest.raises(ConfigError) as info:
        run(policy, state, Scope())
    assert str(info.value) == ("pol.yaml: profiles[0].pluginConfig[1].args.priorityThreshold.name: "
                               "PriorityClass 'gold' not found")


# --- files -------------------------------------------------------------------------------------------------------


def test_policy_file_errors(tmp_path: Path, registry: Registry) -> None:
    missing = tmp_path / "missing.yaml"
    with pytest.raises(UsageError) as info:
        load_policy(str(missing), registry)
    assert str(info.value) == f"cannot read {missing}: No such file or directory"
    bad = _write(tmp_path, "apiVersion: descheduler/v1alpha2\nprofiles:\n  - name: [x\n", "bad.yaml")
    with pytest.raises(UsageError) as info:
        load_policy(bad, registry)
    assert str(info.value).startswith(f"{bad}: not valid YAML at line 4")
    assert "\n" not in str(info.value)
    listy = _write(tmp_path, "- a\n- b\n", "list.yaml")
    with pytest.raises(UsageError, match="a policy must be a YAML object"):
        load_policy(listy, registry)


def test_errors_from_a_file_name_the_file(tmp_path: Path, registry: Registry) -> None:
    path = _write(tmp_path, _upstream(_lnu_profile(args={"thresholds": {"cpu": 101}, "targetThresholds": {"cpu": 1}})))
    with pytest.raises(ConfigError) as info:
        load_policy(path, registry)
    assert str(info.value) == f"{path}: profiles[0].pluginConfig[0].args.thresholds.cpu: must be between 0 and 100, " \
                              "not 101"


# --- --policy-patch ----------------------------------------------------------------------------------------------


def test_patch_replace_and_add(registry: Registry) -> None:
    raw = _upstream(_lnu_profile())
    before = copy.deepcopy(raw)
    patched = apply_patch(raw, '[{"op": "replace", "path": "/profiles/0/pluginConfig/0/args/thresholds/cpu", '
                               '"value": 5}, {"op": "add", "path": "/maxNoOfPodsToEvictTotal", "value": 7}]')
    assert raw == before  # the input is not modified
    policy = decode_policy(patched, registry, "p")
    assert policy.profiles[0].balance[0].args.thresholds["cpu"] == 5.0
    assert policy.limits.total == 7


def test_patch_in_yaml_and_from_a_file(tmp_path: Path) -> None:
    raw = _upstream(_lnu_profile())
    f = tmp_path / "patch.yaml"
    f.write_text("- op: replace\n  path: /profiles/0/name\n  value: renamed\n")
    assert apply_patch(raw, patch_text(f"@{f}"))["profiles"][0]["name"] == "renamed"
    assert apply_patch(raw, "[{op: remove, path: /profiles/0/plugins}]")["profiles"][0].get("plugins") is None


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ('[{"op": "frobnicate", "path": "/a"}]', "--policy-patch: Unknown operation 'frobnicate'"),
        ('[{"op": "replace", "path": "/nope", "value": 1}]', "--policy-patch: can't replace a non-existent object"),
        ('[{"op": "replace", "path": "profiles", "value": 1}]', "--policy-patch: Location must start with /"),
        ('[{"op": "remove", "path": "/profiles/9"}]', "--policy-patch: can't remove a non-existent object"),
        ('[{"path": "/profiles"}]', "--policy-patch: Operation does not contain 'op' member"),
        ('[1]', "--policy-patch: "),
        ('{"op": "add"}', "--policy-patch: a JSON Patch is a list of operations"),
        ("[{op: add", "--policy-patch: not valid JSON/YAML"),
    ],
)
def test_patch_errors(patch: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        apply_patch(_upstream(_lnu_profile()), patch)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_patch_file_missing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        apply_patch({}, patch_text(f"@{tmp_path / 'none.json'}"))


def test_load_policy_applies_the_patch(tmp_path: Path, registry: Registry) -> None:
    path = _write(tmp_path, UPSTREAM_POLICY)
    policy = load_policy(path, registry, '[{"op": "remove", "path": "/profiles/1"}]')
    assert [p.name for p in policy.profiles] == ["balance-cpu"]


# --- flags ---------------------------------------------------------------------------------------------------------


def test_policy_from_plugins_round_trips(registry: Registry) -> None:
    raw = policy_from_plugins([("LowNodeUtilization", "balance", LNU_ARGS)], {"nodeFit": True},
                              {"maxNoOfPodsToEvictPerNode": 2, "maxNoOfPodsToEvictTotal": None})
    assert "maxNoOfPodsToEvictTotal" not in raw
    policy: Policy = decode_policy(raw, registry, "flags")
    assert policy.limits.per_node == 2 and policy.limits.total is None
    prof = policy.profiles[0]
    assert prof.name == "kubectl-desched"
    assert _names(prof.balance) == ["LowNodeUtilization"]
    assert prof.filters[0].args.node_fit is True
    assert policy.warnings == []


def test_args_type_errors_show_yaml_values() -> None:
    @dataclass
    class Args(PluginArgs):
        strict: bool = False
        label: str = ""

    with pytest.raises(ConfigError, match=r"^strict: must be a boolean, not null$"):
        decode_args(Args, {"strict": None}, "")
    with pytest.raises(ConfigError, match=r"^label: must be a string, not false \(YAML reads an unquoted"):
        decode_args(Args, {"label": False}, "")
    with pytest.raises(ConfigError, match=r"^strict: must be a boolean, not \{'on': true\}$"):
        decode_args(Args, {"strict": {"on": True}}, "")
