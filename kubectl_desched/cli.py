"""`kubectl desched`: parse flags, build the policy, hand over to app. Errors end as one line on stderr."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

import click
from tabulate import tabulate

from kubectl_desched import __version__, app, safeload
from kubectl_desched.durations import MAX_DURATION_SECONDS, parse_duration
from kubectl_desched.errors import ConfigError, DeschedError, UsageError
from kubectl_desched.framework.args import encode_args
from kubectl_desched.framework.registry import Registry
from kubectl_desched.interrupts import Interrupted
from kubectl_desched.names import dns1123_label_problem, dns1123_subdomain_problem
from kubectl_desched.plugins import full_registry
from kubectl_desched.plugins.migrationcontroller import JOB_MODES
from kubectl_desched.policy import Policy, apply_patch, decode_policy, load_policy, policy_from_plugins
from kubectl_desched.sanitize import LINE_LIMIT, one_line, shown
from kubectl_desched.selectors import parse_selector

DEFAULT_BALANCE = "LowNodeUtilization"
DEFAULT_TIMEOUT = 300.0  # --timeout for the Eviction API: retries on a PodDisruptionBudget, --wait-ready
DEFAULT_THRESHOLDS = "cpu=20,memory=20,pods=20"
DEFAULT_TARGETS = "cpu=50,memory=50,pods=50"
# LowNodeLoad balances actual load; cpu and memory only, with headroom for load spikes.
DEFAULT_LOAD_LOW = "cpu=45,memory=55"
DEFAULT_LOAD_HIGH = "cpu=75,memory=80"
OUTPUTS = click.Choice(["table", "wide", "json", "yaml"])

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

INT32_MAX = 2**31 - 1  # counts are int32 fields in Kubernetes and in the descheduler's args
MAX_IN_FLIGHT = 1000  # each eviction in flight is a thread and a connection


class Count(click.ParamType):
    """An integer flag checked against its range when it is parsed (exit 2), never after the user confirmed;
    a 400-digit value is refused without being echoed whole."""

    name = "integer"

    def __init__(self, low: int, high: int, note: str = "") -> None:
        self.low, self.high, self.note = low, high, note

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            if not re.fullmatch(r"[+-]?[0-9]+", text):
                self.fail(f"{shown(value)} is not an integer", param, ctx)
            # Python refuses int() of more than 4300 digits; anything past 19 is out of range anyway.
            digits = text.lstrip("+-").lstrip("0")
            number = int(text) if len(digits) <= 19 else (-1 if text.startswith("-") else 1) * 10**20
        if not self.low <= number <= self.high:
            self.fail(f"must be from {self.low} to {self.high}{self.note}, not {shown(value)}", param, ctx)
        return number


COUNT = Count(0, INT32_MAX)


def _options(*decorators: Decorator) -> Decorator:
    def apply(f: Callable[..., Any]) -> Callable[..., Any]:
        for d in reversed(decorators):
            f = d(f)
        return f
    return apply


cluster_options = _options(
    click.option("--kubeconfig", metavar="FILE", help="Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."),
    click.option("--context", help="Kubeconfig context to use."),
    click.option("--cluster", help="Kubeconfig cluster to use instead of the context's."),
    click.option("--user", help="Kubeconfig user to use instead of the context's."),
    click.option("-n", "--namespace", "namespaces", multiple=True, metavar="NS",
                 help="Only pods in these namespaces are candidates (repeatable or comma-separated). "
                      "Default: the context's namespace; all namespaces with --policy."),
    click.option("-A", "--all-namespaces", is_flag=True, help="Pods in every namespace are candidates."),
    click.option("--request-timeout", default="0", metavar="DURATION",
                 help="Timeout of each API request, e.g. 30s (0: none, like kubectl)."),
    click.option("--from-file", "from_files", multiple=True, metavar="FILE",
                 help="Read nodes, pods and PDBs from `kubectl get nodes,pods,pdb -A -o yaml|json` output "
                      "instead of the cluster (repeatable, - for stdin). Nothing can be evicted."),
)

scope_options = _options(
    click.option("--nodes", metavar="A,B", help="Only these nodes are considered."),
    click.option("--node-selector", metavar="LABELS", help="Only nodes matching this label selector are considered."),
    click.option("--exclude-namespace", "exclude_namespaces", multiple=True, metavar="NS",
                 help="Pods in these namespaces are never candidates (repeatable or comma-separated)."),
    click.option("-l", "--selector", metavar="LABELS", help="Only pods matching this label selector are candidates."),
    click.option("-o", "--output", type=OUTPUTS, default="table", show_default=True, help="Output format."),
)

policy_options = _options(
    click.option("--policy", "policy_file", metavar="FILE",
                 help="A DeschedulerPolicy or Koordinator DeschedulerConfiguration (descheduler/v1alpha2)."),
    click.option("--policy-patch", metavar="PATCH",
                 help="RFC 6902 JSON Patch applied to the policy first (inline, or @FILE)."),
)

plugin_options = _options(
    click.option("--plugin", "plugins", multiple=True, metavar="NAME", help="Plugin to run (repeatable)."),
    click.option("--thresholds", metavar="R=PCT,...",
                 help=f"Low/HighNodeUtilization under-utilization thresholds [default: {DEFAULT_THRESHOLDS}]; "
                      f"LowNodeLoad lowThresholds [default: {DEFAULT_LOAD_LOW}]."),
    click.option("--target-thresholds", metavar="R=PCT,...",
                 help=f"LowNodeUtilization target thresholds [default: {DEFAULT_TARGETS}]; "
                      f"LowNodeLoad highThresholds [default: {DEFAULT_LOAD_HIGH}]."),
    click.option("--use-metrics", is_flag=True,
                 help="LowNodeUtilization balances actual usage from metrics.k8s.io (metrics-server), "
                      "not requests."),
    click.option("--use-deviation-thresholds", is_flag=True,
                 help="Thresholds are deviations from the average node usage."),
    click.option("--number-of-nodes", type=COUNT, metavar="N",
                 help="Act only when more than N nodes are under-utilized."),
    click.option("--node-eviction-limit", type=COUNT, metavar="N", help="evictionLimits.node of LowNodeUtilization."),
    click.option("--args", "plugin_args", multiple=True, metavar="PLUGIN=JSON",
                 help='Args for a plugin as JSON or YAML, e.g. LowNodeUtilization=\'{"numberOfNodes": 1}\'.'),
    click.option("--evict-local-storage-pods", is_flag=True, help="DefaultEvictor: allow pods with emptyDir/hostPath."),
    click.option("--evict-system-critical-pods", is_flag=True, help="DefaultEvictor: allow system-critical pods."),
    click.option("--evict-daemonset-pods", is_flag=True, help="DefaultEvictor: allow DaemonSet pods."),
    click.option("--evict-failed-bare-pods", is_flag=True, help="DefaultEvictor: allow failed pods without owner."),
    click.option("--ignore-pvc-pods", is_flag=True, help="DefaultEvictor: protect pods with PVCs."),
    click.option("--ignore-pods-without-pdb", is_flag=True, help="DefaultEvictor: protect pods no PDB covers."),
    click.option("--priority-threshold", type=Count(-INT32_MAX - 1, INT32_MAX), metavar="N",
                 help="DefaultEvictor: protect pods of priority >= N."),
    click.option("--min-replicas", type=COUNT, metavar="N", help="DefaultEvictor: protect owners with fewer pods."),
    click.option("--min-pod-age", metavar="DURATION", help="DefaultEvictor: protect pods younger than this."),
    click.option("--node-fit", is_flag=True, help="DefaultEvictor: only evict pods that fit another node."),
)

deschedule_options = _options(
    click.option("--max-pod-lifetime", metavar="DURATION",
                 help="PodLifeTime: evict pods older than this, e.g. 168h [default: Pending pods older than 24h]."),
    click.option("--pod-restart-threshold", type=Count(1, INT32_MAX), metavar="N",
                 help="RemovePodsHavingTooManyRestarts podRestartThreshold [default: 100]."),
)

limit_options = _options(
    click.option("--max-pods-per-node", type=COUNT, metavar="N", help="maxNoOfPodsToEvictPerNode."),
    click.option("--max-pods-per-namespace", type=COUNT, metavar="N", help="maxNoOfPodsToEvictPerNamespace."),
    click.option("--max-pods", type=COUNT, metavar="N", help="maxNoOfPodsToEvictTotal."),
)

act_options = _options(
    click.option("-y", "--yes", is_flag=True, help="Evict every candidate without asking."),
    click.option("--dry-run", type=click.Choice(["none", "client", "server"]), default="none", is_flag=False,
                 flag_value="client", show_default=True,
                 help="client: plan only; server: send the evictions with dryRun=All."),
    click.option("--grace-period", type=Count(-1, MAX_DURATION_SECONDS, " (-1: the pod's own)"), metavar="SECONDS",
                 help="Grace period for the evicted pods; -1: the pod's own (the default), 0: at once."),
    click.option("--max-in-flight", type=Count(1, MAX_IN_FLIGHT), default=1, show_default=True, metavar="N",
                 help="Evictions sent at the same time."),
    click.option("--interval", default="0", metavar="DURATION", help="Pause between the starts of two evictions."),
    click.option("--wait-ready", is_flag=True,
                 help="Before evicting another pod of the same Deployment/ReplicaSet/StatefulSet, wait until it "
                      "is back to its ready replica count."),
    click.option("--timeout", metavar="DURATION",
                 help="How long to retry a pod a PodDisruptionBudget blocks (429), and to wait with --wait-ready "
                      "[default: 5m]; with --evictor migration, how long to wait for the PodMigrationJobs to end "
                      "[default: their TTL plus 1m; 30m without a TTL]."),
    click.option("--report", metavar="FILE", help="Write a JSON record of the run (written even on failure)."),
    click.option("--record-events", is_flag=True,
                 help="Post a Normal event (action Descheduled, reason the plugin) on each evicted pod."),
)

evictor_options = _options(
    click.option("--evictor", type=click.Choice(["eviction", "migration"]), default="eviction", show_default=True,
                 help="eviction: the Eviction API; migration: create Koordinator PodMigrationJobs."),
    click.option("--migration-mode", type=click.Choice(list(JOB_MODES)), metavar="|".join(JOB_MODES),
                 help="PodMigrationJob spec.mode [default: the policy's MigrationController defaultJobMode, "
                      "else ReservationFirst]."),
    click.option("--migration-ttl", metavar="DURATION",
                 help="PodMigrationJob spec.ttl, e.g. 10m; 0 for none [default: the policy's defaultJobTTL, "
                      "else 5m]."),
    click.option("--no-wait", is_flag=True, help="With --evictor migration: return once the jobs are created."),
)


def _percentages(flag: str, text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        try:
            number = float(value)
            if not sep or not name.strip() or not math.isfinite(number):  # nan and inf compare as nothing else
                raise ValueError
            out[name.strip()] = number
        except ValueError:
            raise UsageError(f"{flag}: expected RESOURCE=PERCENT[,...] such as cpu=20,memory=20, got {shown(part)}") \
                from None
    return out


def _plugin_args(values: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for v in values:
        name, sep, text = v.partition("=")
        try:  # YAML 1.1 as upstream reads policies, bounded in size and depth
            parsed = safeload.yaml_value(text, f"--args {name.strip()}") if sep else None
        except safeload.InputError as e:
            if "not valid YAML" not in str(e):
                raise  # too big or too deep: say so
            parsed = None
        if not sep or not isinstance(parsed, dict):
            raise UsageError(f"--args: expected PLUGIN={{...}} with a JSON/YAML object, got {safeload.short(repr(v))}")
        out.setdefault(name.strip(), {}).update(parsed)
    return out


def _name(what: str, name: str, problem: Callable[[str], str | None], given: str | None = None) -> None:
    if not name:  # `-n "$NS"` with NS unset must not fall back to another namespace
        raise UsageError(f"{what}: empty name in {shown(given if given is not None else name)}")
    why = problem(name)
    if why:
        raise UsageError(f"{what}: {shown(name)} {why}")


def _names(flag: str, values: tuple[str, ...] | str | None, problem: Callable[[str], str | None]) -> None:
    """Every comma-separated name of a flag is non-empty and valid, or one error naming it."""
    for item in (values,) if isinstance(values, str) else values or ():
        for name in item.split(","):
            _name(flag, name.strip(), problem, item)


# Every flag that takes a duration, with what it is called in messages.
DURATION_FLAGS = {"request_timeout": "--request-timeout", "interval": "--interval", "timeout": "--timeout",
                  "migration_ttl": "--migration-ttl", "min_pod_age": "--min-pod-age",
                  "max_pod_lifetime": "--max-pod-lifetime"}


def check_flags(kw: dict[str, Any]) -> None:
    """What can be refused from the flags alone is refused before anything is read, asked or sent (exit 2)."""
    _names("-n/--namespace", kw.get("namespaces"), dns1123_label_problem)
    _names("--exclude-namespace", kw.get("exclude_namespaces"), dns1123_label_problem)
    if kw.get("nodes") is not None:
        _names("--nodes", kw["nodes"], dns1123_subdomain_problem)
    for key, flag in (("selector", "-l/--selector"), ("node_selector", "--node-selector")):
        if kw.get(key) is not None:
            try:
                parse_selector(kw[key])
            except ValueError as e:
                raise UsageError(f"{flag}: {e}") from None
    for key, flag in DURATION_FLAGS.items():
        if kw.get(key) is not None:
            parse_duration(kw[key], flag)
    if kw.get("report") is not None and not kw["report"].strip():
        raise UsageError("--report: the file name must not be empty")
    files = kw.get("from_files") or ()
    if any(not f.strip() for f in files):
        raise UsageError("--from-file: the file name must not be empty")
    if list(files).count("-") > 1:
        raise UsageError("--from-file -: standard input can be read only once")


def _options_from(kw: dict[str, Any]) -> app.Options:
    check_flags(kw)
    if kw.get("from_files") and any(kw.get(k) for k in ("kubeconfig", "context", "cluster", "user")):
        raise UsageError("--from-file reads a snapshot: --kubeconfig, --context, --cluster and --user do not apply")
    timeout = parse_duration(kw.get("request_timeout") or "0")
    from kubectl_desched.kube.config import KubeOptions  # imports the kubernetes client: only for a command that runs
    return app.Options(
        kube=KubeOptions(kw.get("kubeconfig"), kw.get("context"), kw.get("cluster"), kw.get("user"),
                         (app._split(kw["namespaces"]) or [None])[0] if kw.get("namespaces") else None, timeout),
        from_files=tuple(kw.get("from_files") or ()),
        namespaces=tuple(kw.get("namespaces") or ()),
        all_namespaces=bool(kw.get("all_namespaces")),
        exclude_namespaces=tuple(kw.get("exclude_namespaces") or ()),
        selector=kw.get("selector"),
        nodes=kw.get("nodes"),
        node_selector=kw.get("node_selector"),
        output=kw.get("output") or "table",
        yes=bool(kw.get("yes")),
        dry_run=kw.get("dry_run") or "none",
        # -1 is kubectl's "the pod's own": send none (the API server would make any negative 1 second)
        grace_period=None if kw.get("grace_period") == -1 else kw.get("grace_period"),
        **_act_options(kw),
        **_evictor_options(kw),
    )


def _act_options(kw: dict[str, Any]) -> dict[str, Any]:
    """The pacing and record flags; the explain commands have none of them."""
    if "max_in_flight" not in kw:
        return {}
    if kw["max_in_flight"] < 1:
        raise UsageError("--max-in-flight: must be at least 1")
    timeout = parse_duration(kw["timeout"], "--timeout") if kw.get("timeout") is not None else DEFAULT_TIMEOUT
    return {"max_in_flight": kw["max_in_flight"], "interval": parse_duration(kw["interval"], "--interval"),
            "wait_ready": bool(kw["wait_ready"]), "timeout": timeout,
            "report": kw.get("report"), "record_events": bool(kw["record_events"])}


def _evictor_options(kw: dict[str, Any]) -> dict[str, Any]:
    """--evictor and the PodMigrationJob flags; the explain commands have none of them."""
    if "evictor" not in kw:
        return {}
    migration = kw.get("evictor") == "migration"
    for flag in ("migration_mode", "migration_ttl", "no_wait"):
        if kw.get(flag) and not migration:
            raise UsageError(f"--{flag.replace('_', '-')} only applies with --evictor migration")
    # Koordinator's controller evicts later, paces per workload (maxUnavailablePerWorkload) and records its own events.
    for flag in ("wait_ready", "record_events"):
        if kw.get(flag) and migration:
            raise UsageError(f"--{flag.replace('_', '-')} does not apply with --evictor migration: Koordinator's "
                             "migration controller paces the evictions and records their events")
    ttl = kw.get("migration_ttl")
    timeout = kw.get("timeout")
    return {
        "evictor": kw.get("evictor") or "eviction",
        "migration_mode": kw.get("migration_mode"),
        "migration_ttl": None if ttl is None else parse_duration(ttl, "--migration-ttl"),
        "wait": not kw.get("no_wait"),
        # Unset: wait as long as the jobs' TTL says (the PodMigrationJob evictor works it out).
        "migration_timeout": None if timeout is None else parse_duration(timeout, "--timeout"),
    }


def _evictor_args(kw: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for flag, key in (("evict_local_storage_pods", "evictLocalStoragePods"),
                      ("evict_system_critical_pods", "evictSystemCriticalPods"),
                      ("evict_daemonset_pods", "evictDaemonSetPods"),
                      ("evict_failed_bare_pods", "evictFailedBarePods"),
                      ("ignore_pvc_pods", "ignorePvcPods"),
                      ("ignore_pods_without_pdb", "ignorePodsWithoutPDB"),
                      ("node_fit", "nodeFit")):
        if kw.get(flag):
            args[key] = True
    if kw.get("priority_threshold") is not None:
        args["priorityThreshold"] = {"value": kw["priority_threshold"]}
    if kw.get("min_replicas") is not None:
        args["minReplicas"] = kw["min_replicas"]
    if kw.get("min_pod_age") is not None:
        args["minPodAge"] = kw["min_pod_age"]
    return args


_PLUGIN_FLAGS = ("thresholds", "target_thresholds", "use_deviation_thresholds", "number_of_nodes", "use_metrics",
                 "node_eviction_limit", "plugin_args", "plugins", "max_pod_lifetime", "pod_restart_threshold")


def _threshold_pair(kw: dict[str, Any], default_low: str, default_high: str) -> tuple[dict, dict]:
    low = _percentages("--thresholds", kw["thresholds"]) if kw.get("thresholds") else None
    high = _percentages("--target-thresholds", kw["target_thresholds"]) if kw.get("target_thresholds") else None
    # One given alone: the other defaults for the same resources.
    if low is None:
        defaults = _percentages("--thresholds", default_low)
        low = {r: defaults.get(r, 20.0) for r in high} if high else defaults
    if high is None:
        defaults = _percentages("--target-thresholds", default_high)
        high = {r: defaults.get(r, 50.0) for r in low}
    return low, high


def _lnu_args(kw: dict[str, Any]) -> dict[str, Any]:
    low, high = _threshold_pair(kw, DEFAULT_THRESHOLDS, DEFAULT_TARGETS)
    args: dict[str, Any] = {"thresholds": low, "targetThresholds": high}
    if kw.get("use_deviation_thresholds"):
        args["useDeviationThresholds"] = True
    if kw.get("number_of_nodes") is not None:
        args["numberOfNodes"] = kw["number_of_nodes"]
    if kw.get("node_eviction_limit") is not None:
        args["evictionLimits"] = {"node": kw["node_eviction_limit"]}
    if kw.get("use_metrics"):
        args["metricsUtilization"] = {"source": "KubernetesMetrics"}
    return args


def _lnl_args(kw: dict[str, Any]) -> dict[str, Any]:
    low, high = _threshold_pair(kw, DEFAULT_LOAD_LOW, DEFAULT_LOAD_HIGH)
    args: dict[str, Any] = {"lowThresholds": low, "highThresholds": high}
    if kw.get("use_deviation_thresholds"):
        args["useDeviationThresholds"] = True
    if kw.get("number_of_nodes") is not None:
        args["numberOfNodes"] = kw["number_of_nodes"]
    return args


# Upstream leaves these unset; a one-shot run needs a conservative choice the user can see in --help.
PODLIFETIME_CRITERIA = ("maxPodLifeTimeSeconds", "states", "conditions", "exitCodes")
DEFAULT_PODLIFETIME = {"maxPodLifeTimeSeconds": 86400, "states": ["Pending"]}
DEFAULT_RESTART_THRESHOLD = 100
DEFAULT_NODE_AFFINITY_TYPE = ["requiredDuringSchedulingIgnoredDuringExecution"]


def _flag_args(name: str, kw: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """A plugin's args from flags and our defaults, then --args on top."""
    args: dict[str, Any] = {}
    if name == "LowNodeUtilization":
        args = _lnu_args(kw)
    elif name == "LowNodeLoad":
        args = _lnl_args(kw)
    elif name == "HighNodeUtilization":
        args = {"thresholds": _percentages("--thresholds", kw.get("thresholds") or DEFAULT_THRESHOLDS)}
        if kw.get("number_of_nodes") is not None:
            args["numberOfNodes"] = kw["number_of_nodes"]
    elif name == "PodLifeTime":
        if kw.get("max_pod_lifetime") is not None:
            args = {"maxPodLifeTimeSeconds": int(parse_duration(kw["max_pod_lifetime"], "--max-pod-lifetime"))}
        elif not any(k in given for k in PODLIFETIME_CRITERIA):  # criteria combine, so ours only stand alone
            args = dict(DEFAULT_PODLIFETIME)
    elif name == "RemovePodsHavingTooManyRestarts":
        threshold = kw.get("pod_restart_threshold")
        args = {"podRestartThreshold": DEFAULT_RESTART_THRESHOLD if threshold is None else threshold}
    elif name == "RemovePodsViolatingNodeAffinity":
        args = {"nodeAffinityType": list(DEFAULT_NODE_AFFINITY_TYPE)}
    args.update(given)
    return args


COMMAND_FOR_POINT = {"deschedule": "deschedule", "balance": "balance"}


def build_policy(registry: Registry, kw: dict[str, Any], point: str, default_plugins: list[str], *,
                 only_point: bool = False) -> Policy:
    """--policy (with --policy-patch), or the one-profile policy the plugin flags describe. With only_point
    (the balance and deschedule commands) a --plugin must have that extension point: `balance --plugin
    PodLifeTime` names the command that runs it instead of quietly running a Deschedule plugin."""
    limits = {"maxNoOfPodsToEvictPerNode": kw.get("max_pods_per_node"),
              "maxNoOfPodsToEvictPerNamespace": kw.get("max_pods_per_namespace"),
              "maxNoOfPodsToEvictTotal": kw.get("max_pods")}
    for key, value in limits.items():
        if value is not None and value < 0:
            raise UsageError(f"{key}: must not be negative")
    if kw.get("policy_file"):
        given = [f for f in _PLUGIN_FLAGS if kw.get(f)]
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} does not combine with --policy; use --policy-patch")
        policy = load_policy(kw["policy_file"], registry, kw.get("policy_patch"))
        _override_limits(policy, limits)
        return policy
    names = list(kw.get("plugins") or default_plugins)
    extra = _plugin_args(kw.get("plugin_args") or ())
    for name in extra:
        if name not in names and name != "DefaultEvictor":
            raise UsageError(f"--args {name}: the plugin is not enabled (add --plugin {name})")
    plugins = []
    for name in names:
        spec = registry.get(name)
        use = point if point in spec.points else next((p for p in ("deschedule", "balance") if p in spec.points), None)
        if use is None:
            raise UsageError(f"--plugin {name}: a {'/'.join(spec.points)} plugin cannot be run by this command")
        if only_point and use != point:
            raise UsageError(f"{name} is a {use.capitalize()} plugin: run it with "
                             f"`kubectl desched {COMMAND_FOR_POINT[use]} --plugin {name}`")
        args = _flag_args(name, kw, extra.get(name, {}))
        plugins.append((name, use, args))
    evictor = _evictor_args(kw)
    evictor.update(extra.get("DefaultEvictor", {}))
    raw = policy_from_plugins(plugins, evictor, limits)
    if kw.get("policy_patch"):
        raw = apply_patch(raw, kw["policy_patch"])
        policy = decode_policy(raw, registry, "flags with --policy-patch")
    else:
        try:
            policy = decode_policy(raw, registry, "flags")
        except ConfigError as e:
            raise UsageError(_flag_error(e, ["DefaultEvictor", *(name for name, _p, _a in plugins)])) from None
    policy.from_file = False
    return policy


_FLAG_FOR_ARG = {
    ("LowNodeUtilization", "thresholds"): "--thresholds",
    ("LowNodeUtilization", "targetThresholds"): "--thresholds/--target-thresholds",
    ("LowNodeUtilization", "numberOfNodes"): "--number-of-nodes",
    ("LowNodeUtilization", "evictionLimits"): "--node-eviction-limit",
    ("LowNodeUtilization", "metricsUtilization"): "--use-metrics",
    ("LowNodeLoad", "lowThresholds"): "--thresholds",
    ("LowNodeLoad", "highThresholds"): "--target-thresholds",
    ("LowNodeLoad", "numberOfNodes"): "--number-of-nodes",
    ("HighNodeUtilization", "thresholds"): "--thresholds",
    ("HighNodeUtilization", "numberOfNodes"): "--number-of-nodes",
    ("PodLifeTime", "maxPodLifeTimeSeconds"): "--max-pod-lifetime",
    ("RemovePodsHavingTooManyRestarts", "podRestartThreshold"): "--pod-restart-threshold",
    ("DefaultEvictor", "minReplicas"): "--min-replicas",
    ("DefaultEvictor", "minPodAge"): "--min-pod-age",
    ("DefaultEvictor", "priorityThreshold"): "--priority-threshold",
}


def _flag_error(e: ConfigError, config_names: list[str]) -> str:
    """Say which flag was wrong, not where in the policy the flags were turned into."""
    m = re.match(r"profiles\[0\]\.pluginConfig\[(\d+)\]\.args\.?(.*)", e.path)
    if not m or int(m.group(1)) >= len(config_names):
        return f"{e.path}: {e.message}" if e.path else e.message
    plugin, field = config_names[int(m.group(1))], m.group(2)
    flag = _FLAG_FOR_ARG.get((plugin, field.split(".")[0].split("[")[0]))
    if flag:
        return f"{flag}: {field}: {e.message}"
    return f"--args {plugin}: {field or 'args'}: {e.message}"


def _override_limits(policy: Policy, limits: dict[str, int | None]) -> None:
    if limits["maxNoOfPodsToEvictPerNode"] is not None:
        policy.limits.per_node = limits["maxNoOfPodsToEvictPerNode"]
    if limits["maxNoOfPodsToEvictPerNamespace"] is not None:
        policy.limits.per_namespace = limits["maxNoOfPodsToEvictPerNamespace"]
    if limits["maxNoOfPodsToEvictTotal"] is not None:
        policy.limits.total = limits["maxNoOfPodsToEvictTotal"]


def _registry() -> Registry:
    registry = full_registry()
    for line in registry.broken:
        app.warn(line)
    return registry


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
def cli() -> None:
    """Interactive descheduling: preview which pods the descheduler's plugins would move and why,
    then evict them through the Eviction API after you confirm."""


@cli.command()
@cluster_options
@scope_options
@policy_options
@plugin_options
@limit_options
@act_options
@evictor_options
def balance(**kw: Any) -> None:
    """Run Balance plugins (LowNodeUtilization unless --plugin or --policy says otherwise)."""
    opts = _options_from(kw)
    policy = build_policy(_registry(), kw, "balance", [DEFAULT_BALANCE], only_point=True)
    sys.exit(app.plan_and_act(opts, policy, point="balance" if kw.get("policy_file") else None))


@cli.command()
@cluster_options
@scope_options
@policy_options
@plugin_options
@deschedule_options
@limit_options
@act_options
@evictor_options
def deschedule(**kw: Any) -> None:
    """Run Deschedule plugins (all in-tree ones unless --plugin or --policy says otherwise)."""
    opts = _options_from(kw)
    registry = _registry()
    defaults = [s.name for s in registry.with_points("deschedule") if s.origin == "in-tree"]
    policy = build_policy(registry, kw, "deschedule", defaults, only_point=True)
    sys.exit(app.plan_and_act(opts, policy, point="deschedule" if kw.get("policy_file") else None))


@cli.command(name="run")
@cluster_options
@scope_options
@policy_options
@limit_options
@act_options
@evictor_options
def run_policy(**kw: Any) -> None:
    """Run a whole policy once: every profile's Deschedule plugins, then its Balance plugins."""
    if not kw.get("policy_file"):
        raise UsageError("run needs --policy FILE (balance and deschedule run plugins from flags)")
    opts = _options_from(kw)
    sys.exit(app.plan_and_act(opts, build_policy(_registry(), kw, "balance", [])))


@cli.group()
def explain() -> None:
    """Explain the verdicts on a node's pods, or on one pod."""


EXPLAIN_DEFAULT = ["PodLifeTime", "RemoveFailedPods", "RemovePodsHavingTooManyRestarts",
                   "RemovePodsViolatingInterPodAntiAffinity", "RemovePodsViolatingNodeAffinity",
                   "RemovePodsViolatingNodeTaints", "LowNodeUtilization", "RemoveDuplicates",
                   "RemovePodsViolatingTopologySpreadConstraint"]


@explain.command(name="pod")
@click.argument("pod_name", metavar="POD")
@cluster_options
@scope_options
@policy_options
@plugin_options
@deschedule_options
@limit_options
def explain_pod(pod_name: str, **kw: Any) -> None:
    """The pod against every filter and enabled plugin, and which other nodes could take it."""
    _name("POD", pod_name, dns1123_subdomain_problem)
    opts = _options_from(kw)
    policy = build_policy(_registry(), kw, "balance", EXPLAIN_DEFAULT)
    sys.exit(app.explain_pod(opts, policy, pod_name))


@explain.command(name="node")
@click.argument("node_name", metavar="NODE")
@cluster_options
@scope_options
@policy_options
@plugin_options
@deschedule_options
@limit_options
@click.option("--full", is_flag=True,
              help="Read the whole cluster and evaluate every plugin; by default only this node and its pods are "
                   "read, and plugins that need the other nodes are estimated or listed as not evaluated.")
def explain_node(node_name: str, full: bool, **kw: Any) -> None:
    """The node's utilization against the thresholds, its class, and every pod on it with its verdict."""
    _name("NODE", node_name, dns1123_subdomain_problem)
    opts = _options_from(kw)
    policy = build_policy(_registry(), kw, "balance", EXPLAIN_DEFAULT)
    sys.exit(app.explain_node(opts, policy, node_name, full=full))


def _args_text(defaults: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in defaults.items()) or "-"


@cli.command()
@click.option("-o", "--output", type=click.Choice(["table", "wide", "json"]), default="table", show_default=True,
              help="wide adds each plugin's description.")
def plugins(output: str) -> None:
    """List in-tree and out-of-tree plugins with their extension points and args (with their defaults)."""
    registry = _registry()
    rows = []
    for spec in registry:
        defaults = encode_args(spec.args_type()) if spec.args_type else {}
        rows.append({"name": spec.name, "extensionPoints": list(spec.points), "origin": spec.origin,
                     "description": spec.description, "defaultArgs": defaults})
    if output == "json":
        click.echo(json.dumps({"plugins": rows, "broken": registry.broken}, indent=2))
        return
    headers = ["NAME", "EXTENSION POINTS", "ORIGIN", "ARGS (DEFAULTS)"]
    table = [[r["name"], ",".join(r["extensionPoints"]), r["origin"].split(" (entry point")[0],
              _args_text(r["defaultArgs"])] for r in rows]
    widths: list[int | None] = [None, None, None, 60]
    if output == "wide":
        headers.append("DESCRIPTION")
        widths.append(50)
        for cells, r in zip(table, rows, strict=True):
            cells.append(r["description"])
    click.echo(tabulate(table, headers=headers, tablefmt="plain", maxcolwidths=widths))


@cli.command()
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text")
def version(output: str) -> None:
    """Print the version."""
    if output == "json":
        click.echo(json.dumps({"version": __version__, "python": sys.version.split()[0]}))
    else:
        click.echo(f"kubectl-desched v{__version__} (python {sys.version.split()[0]})")


def error_line(message: object) -> str:
    """The last guard before the terminal: whatever a message quotes (a server's words, a value typed, a file's
    content) it stays one printable line of bounded length, so it cannot forge a second `error:` line."""
    return f"error: {one_line(message, LINE_LIMIT)}"


def main() -> None:
    """Entry point: every failure becomes one line on stderr and an exit code (2 for usage)."""
    try:
        cli.main(prog_name="kubectl desched", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted: nothing further was evicted", err=True)
        sys.exit(app.EXIT_NOT_CONFIRMED)
    except click.ClickException as e:
        click.echo(error_line(e.format_message()), err=True)
        sys.exit(2 if isinstance(e, click.UsageError) else e.exit_code)
    except DeschedError as e:
        click.echo(error_line(e), err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("\ninterrupted: nothing further was evicted", err=True)
        sys.exit(app.EXIT_INTERRUPTED)
    except Interrupted as e:  # Ctrl-C, SIGTERM or SIGHUP while planning or at the prompt: 128+N
        said = "interrupted" if e.name == "Ctrl-C" else f"interrupted by {e.name}"
        click.echo(f"\n{said}: nothing further was evicted", err=True)
        sys.exit(e.exit_code)
    except BrokenPipeError:
        sys.exit(1)
