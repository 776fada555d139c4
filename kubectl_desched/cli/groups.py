"""Option groups: each adds its flags to a command and hands the command one typed object instead of the flags'
values, parsed and checked (exit 2) before anything is read."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import click

from kubectl_desched.cli import checks, completers
from kubectl_desched.cli.help import ACTING, CLUSTER_ACCESS, OUTPUT, SCOPE, option
from kubectl_desched.errors import UsageError
from kubectl_desched.evictors.choose import DEFAULT_TIMEOUT, EVICTORS
from kubectl_desched.framework.flags import INT32_MAX
from kubectl_desched.model.durations import MAX_DURATION_SECONDS, format_duration
from kubectl_desched.model.names import dns1123_label_problem, dns1123_subdomain_problem
from kubectl_desched.model.podmigrationjob import (
    DEFAULT_TTL_SECONDS,
    JOB_MODES,
    RESERVATION_FIRST,
    WAIT_PAST_TTL_SECONDS,
    WAIT_WITHOUT_TTL_SECONDS,
)
from kubectl_desched.sanitize import shown
from kubectl_desched.ui.formats import check_format, check_sort_by, formats_help

# The parsed groups' types are imported where a command runs: their dozen frozen dataclasses take a few
# milliseconds to build, which `version`, `--help` and a completion request do not need.
if TYPE_CHECKING:
    from kubectl_desched.app.options import (
        ActOptions,
        ClusterAccess,
        Options,
        OutputOptions,
        PrometheusAccess,
        ScopeOptions,
    )
    from kubectl_desched.evictors.migration.options import MigrationOptions

T = TypeVar("T")


class OptionGroup(Generic[T]):
    """Adds `options` to a command; its callback gets their values parsed into one `param` argument."""

    def __init__(self, param: str, options: list[click.Option], parse: Callable[[dict[str, Any]], T]) -> None:
        self.param, self.options, self._parse = param, options, parse

    def parse(self, params: dict[str, Any]) -> T:
        """Takes this group's values out of a command's params and parses them."""
        return self._parse({o.name: params.pop(o.name) for o in self.options if o.name is not None})

    def __call__(self, f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def callback(*args: Any, **kw: Any) -> Any:
            parsed = self.parse(kw)  # first: it takes its values out of kw
            return f(*args, **kw, **{self.param: parsed})

        params = callback.__dict__.setdefault("__click_params__", [])
        params.extend(reversed(self.options))  # click lists them in reverse
        return callback


IMPERSONATION = ("as_user", "as_groups", "as_uid")
CONNECTION = ("server", "token", "certificate_authority", "client_certificate", "client_key",
              "insecure_skip_tls_verify", "tls_server_name", "disable_compression", "protobuf")


def _access(v: dict[str, Any]) -> ClusterAccess:
    from kubectl_desched.app.options import ClusterAccess
    from kubectl_desched.kube.overrides import ConnectionFlags

    files = tuple(v["from_files"])
    if any(not f.strip() for f in files):
        raise UsageError("--from-file: the file name must not be empty")
    if files.count("-") > 1:
        raise UsageError("--from-file -: standard input can be read only once")
    if files and any(v[k] for k in ("kubeconfig", "context", "cluster", "user", *IMPERSONATION, *CONNECTION)):
        raise UsageError("--from-file reads a snapshot: the flags that reach a cluster (--kubeconfig, --context, "
                         "-s/--server, --token, --as, ...) do not apply")
    now = checks.timestamp("--now", v["now"])
    if now is not None and not files:
        raise UsageError("--now evaluates a snapshot (--from-file) at another time; a cluster is read as it is now")
    flags = ConnectionFlags(**{k: v[k] for k in CONNECTION})
    flags.check()
    checks.server_url(flags.server)
    return ClusterAccess(v["kubeconfig"], v["context"], v["cluster"], v["user"], None,
                         checks.duration("--request-timeout", v["request_timeout"]) or 0.0, files,
                         v["as_user"], tuple(v["as_groups"]), v["as_uid"], flags, v["chunk_size"], v["verbosity"],
                         now, _prometheus(v))


def _prometheus(v: dict[str, Any]) -> PrometheusAccess:
    from kubectl_desched.app.options import PrometheusAccess

    access = PrometheusAccess(v["prometheus_url"], v["prometheus_token_file"], v["prometheus_ca_file"],
                              v["prometheus_insecure_skip_tls_verify"])
    for flag, path in (("--prometheus-token-file", access.token_file), ("--prometheus-ca-file", access.ca_file)):
        if path is not None and not os.path.isfile(path):
            raise UsageError(f"{flag} {path}: no such file")
    if access.ca_file and access.insecure_skip_tls_verify:
        raise UsageError("--prometheus-ca-file and --prometheus-insecure-skip-tls-verify exclude each other")
    return access


cluster_access = OptionGroup("access", [
    option(CLUSTER_ACCESS, "--kubeconfig", metavar="FILE", shell_complete=completers.files,
           help="Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)."),
    option(CLUSTER_ACCESS, "--context", shell_complete=completers.contexts, help="Kubeconfig context to use."),
    option(CLUSTER_ACCESS, "--cluster", shell_complete=completers.clusters,
           help="Kubeconfig cluster to use instead of the context's."),
    option(CLUSTER_ACCESS, "--user", shell_complete=completers.users,
           help="Kubeconfig user to use instead of the context's."),
    option(CLUSTER_ACCESS, "-s", "--server", metavar="URL",
           help="Address of the Kubernetes API server, instead of the kubeconfig cluster's."),
    option(CLUSTER_ACCESS, "--token", metavar="TOKEN", help="Bearer token for the API server, instead of the "
           "kubeconfig user's credentials (client certificates stay)."),
    option(CLUSTER_ACCESS, "--certificate-authority", metavar="FILE", shell_complete=completers.files,
           help="CA certificate file to verify the server with."),
    option(CLUSTER_ACCESS, "--client-certificate", metavar="FILE", shell_complete=completers.files,
           help="Client certificate file for TLS."),
    option(CLUSTER_ACCESS, "--client-key", metavar="FILE", shell_complete=completers.files,
           help="Client key file for TLS."),
    option(CLUSTER_ACCESS, "--insecure-skip-tls-verify", is_flag=True,
           help="Do not verify the server's certificate (insecure)."),
    option(CLUSTER_ACCESS, "--tls-server-name", metavar="NAME",
           help="Server name to verify the server's certificate against (and send as SNI)."),
    option(CLUSTER_ACCESS, "--disable-compression", is_flag=True,
           help="Do not ask for gzip (as kubectl's flag, or the cluster's disable-compression): the server then "
                "spends no CPU compressing, faster when the link is not the bottleneck (same machine, fast LAN)."),
    option(CLUSTER_ACCESS, "--protobuf", is_flag=True,
           help="Ask for pods and nodes as protobuf, as client-go does: the server writes it in half the time, but "
                "it takes more of this machine's CPU to decode than JSON (for a loaded server)."),
    option(CLUSTER_ACCESS, "--as", "as_user", metavar="USER",
           help="Username to impersonate (the RBAC preflight checks this identity), as kubectl's --as."),
    option(CLUSTER_ACCESS, "--as-group", "as_groups", multiple=True, metavar="GROUP", help="Group to impersonate."),
    option(CLUSTER_ACCESS, "--as-uid", metavar="UID", help="UID to impersonate."),
    option(CLUSTER_ACCESS, "--request-timeout", default="0", metavar="DURATION",
           help="Timeout of each API request, e.g. 30s (0: none, like kubectl)."),
    option(CLUSTER_ACCESS, "--chunk-size", type=checks.Count(0, INT32_MAX), default=500, show_default=True,
           metavar="N", help="Pods per LIST page, as kubectl's (0: each list in one answer)."),
    option(CLUSTER_ACCESS, "-v", "--v", "verbosity", type=checks.Count(0, 10), default=0, metavar="LEVEL",
           help="Log the API requests on stderr, as kubectl: 6 URLs, status and times; 7 headers too "
                "(credentials masked); 8 and 9 the answers' first 1 KiB and 64 KiB."),
    option(CLUSTER_ACCESS, "--from-file", "from_files", multiple=True, metavar="FILE", shell_complete=completers.files,
           help="Read nodes, pods and PDBs from `kubectl get nodes,pods,pdb -A -o yaml|json` output instead of the "
                "cluster (repeatable, - for stdin). Nothing can be evicted."),
    option(CLUSTER_ACCESS, "--prometheus-url", metavar="URL",
           help="Prometheus for a metricsUtilization query (--prometheus-query): an http(s) URL, or "
                "service/NAMESPACE/[https:]NAME[:PORT] through the API server's service proxy. Default: the "
                "policy's metricsProviders url."),
    option(CLUSTER_ACCESS, "--prometheus-token-file", metavar="FILE", shell_complete=completers.files,
           help="Bearer token for a Prometheus URL, instead of the policy's authToken Secret."),
    option(CLUSTER_ACCESS, "--prometheus-ca-file", metavar="FILE", shell_complete=completers.files,
           help="CA certificate file to verify a Prometheus https URL with (default: the system's)."),
    option(CLUSTER_ACCESS, "--prometheus-insecure-skip-tls-verify", is_flag=True,
           help="Do not verify the Prometheus server's certificate (insecure)."),
    option(CLUSTER_ACCESS, "--now", metavar="TIMESTAMP",
           help="With --from-file: evaluate ages (PodLifeTime, minPodAge, ...) at this RFC 3339 time, e.g. "
                "2026-01-01T12:00:00Z, instead of the current time."),
], _access)


def _scope(v: dict[str, Any]) -> ScopeOptions:
    from kubectl_desched.app.options import ScopeOptions

    return ScopeOptions(
        namespaces=checks.names("-n/--namespace", v["namespaces"], dns1123_label_problem),
        all_namespaces=v["all_namespaces"],
        exclude_namespaces=checks.names("--exclude-namespace", v["exclude_namespaces"], dns1123_label_problem),
        selector=checks.selector("-l/--selector", v["selector"]),
        field_selector=v["field_selector"],
        nodes=checks.names("--nodes", v["nodes"], dns1123_subdomain_problem) if v["nodes"] is not None else (),
        node_selector=checks.selector("--node-selector", v["node_selector"]))


scope = OptionGroup("scope", [
    option(SCOPE, "-n", "--namespace", "namespaces", multiple=True, metavar="NS", shell_complete=completers.namespaces,
           help="Only pods in these namespaces are candidates (repeatable or comma-separated). "
                "Default: the context's namespace; all namespaces with --policy."),
    option(SCOPE, "-A", "--all-namespaces", is_flag=True, help="Pods in every namespace are candidates."),
    option(SCOPE, "--exclude-namespace", "exclude_namespaces", multiple=True, metavar="NS",
           shell_complete=completers.namespaces,
           help="Pods in these namespaces are never candidates (repeatable or comma-separated)."),
    option(SCOPE, "-l", "--selector", metavar="LABELS", help="Only pods matching this label selector are candidates."),
    option(SCOPE, "--field-selector", metavar="FIELDS",
           help="Only pods matching this field selector are candidates, e.g. status.phase=Running or "
                "spec.nodeName!=n1 (the API server matches it; a snapshot answers metadata.name, metadata.namespace, "
                "spec.nodeName, spec.schedulerName, status.phase)."),
    option(SCOPE, "--nodes", metavar="A,B", shell_complete=completers.nodes, help="Only these nodes are considered."),
    option(SCOPE, "--node-selector", metavar="LABELS", help="Only nodes matching this label selector are considered."),
], _scope)


def _migration(v: dict[str, Any]) -> MigrationOptions | None:
    from kubectl_desched.evictors.migration.options import MigrationOptions

    if v["evictor"] != "migration":
        for flag in ("migration_mode", "migration_ttl", "no_wait"):
            if v[flag]:
                raise UsageError(f"--{flag.replace('_', '-')} only applies with --evictor migration")
        return None
    # Koordinator's controller evicts later, paces per workload (maxUnavailablePerWorkload) and records its own events.
    for flag in ("wait_ready", "record_events"):
        if v[flag]:
            raise UsageError(f"--{flag.replace('_', '-')} does not apply with --evictor migration: Koordinator's "
                             "migration controller paces the evictions and records their events")
    ttl = checks.duration("--migration-ttl", v["migration_ttl"])
    if ttl and format_duration(ttl) == "0s":  # Koordinator would read it as none
        raise UsageError(f"--migration-ttl: {shown(v['migration_ttl'])} would be written 0s, which "
                         "means no TTL; give 0 for none")
    # --timeout unset: wait as long as the jobs' TTL says (the PodMigrationJob evictor works it out).
    return MigrationOptions(v["migration_mode"], ttl, not v["no_wait"], checks.duration("--timeout", v["timeout"]))


def _acting(v: dict[str, Any]) -> ActOptions:
    from kubectl_desched.app.options import ActOptions

    return ActOptions(
        yes=v["yes"], dry_run=v["dry_run"],
        # -1 is kubectl's "the pod's own": send none (the API server would make any negative 1 second)
        grace_period=None if v["grace_period"] == -1 else v["grace_period"],
        max_in_flight=v["max_in_flight"], interval=checks.duration("--interval", v["interval"]) or 0.0,
        wait_ready=v["wait_ready"], timeout=checks.duration("--timeout", v["timeout"], DEFAULT_TIMEOUT) or 0.0,
        record_events=v["record_events"], report=checks.file_name("--report", v["report"]), evictor=v["evictor"],
        migration=_migration(v), wait_landing=not v["no_wait_landing"], rounds=v["rounds"])


acting = OptionGroup("acting", [
    option(ACTING, "-y", "--yes", is_flag=True, help="Evict every candidate without asking."),
    option(ACTING, "--dry-run", type=click.Choice(["none", "client", "server"]), default="none", is_flag=False,
           flag_value="client", show_default=True,
           help="client: plan only; server: send the evictions with dryRun=All."),
    option(ACTING, "--grace-period", type=checks.Count(-1, MAX_DURATION_SECONDS, " (-1: the pod's own)"),
           metavar="SECONDS", help="Grace period for the evicted pods; -1: the pod's own (the default), 0: at once."),
    option(ACTING, "--max-in-flight", type=checks.Count(1, checks.MAX_IN_FLIGHT), default=1, show_default=True,
           metavar="N", help="Evictions sent at the same time."),
    option(ACTING, "--interval", default="0", metavar="DURATION", help="Pause between the starts of two evictions."),
    option(ACTING, "--wait-ready", is_flag=True,
           help="Before evicting another pod of the same Deployment/ReplicaSet/StatefulSet, wait until it is back "
                "to its ready replica count."),
    option(ACTING, "--timeout", metavar="DURATION",
           help="How long to retry a pod a PodDisruptionBudget blocks (429), and to wait with --wait-ready "
                f"[default: {format_duration(DEFAULT_TIMEOUT)}]; with --evictor migration, how long to wait for the "
                f"PodMigrationJobs to end [default: their TTL plus {format_duration(WAIT_PAST_TTL_SECONDS)}; "
                f"{format_duration(WAIT_WITHOUT_TTL_SECONDS)} without a TTL]."),
    option(ACTING, "--report", metavar="FILE", help="Write a JSON record of the run (written even on failure)."),
    option(ACTING, "--record-events", is_flag=True,
           help="Post a Normal event (action Descheduled, reason the plugin) on each evicted pod."),
    option(ACTING, "--evictor", type=click.Choice(list(EVICTORS)), default=next(iter(EVICTORS)), show_default=True,
           help="; ".join(f"{name}: {entry.help}" for name, entry in EVICTORS.items()) + "."),
    option(ACTING, "--migration-mode", type=click.Choice(list(JOB_MODES)), metavar="|".join(JOB_MODES),
           help="PodMigrationJob spec.mode [default: the policy's MigrationController defaultJobMode, else "
                f"{RESERVATION_FIRST}]."),
    option(ACTING, "--migration-ttl", metavar="DURATION",
           help="PodMigrationJob spec.ttl, e.g. 10m; 0 for none [default: the policy's defaultJobTTL, else "
                f"{format_duration(DEFAULT_TTL_SECONDS)}]."),
    option(ACTING, "--no-wait", is_flag=True, help="With --evictor migration: return once the jobs are created."),
    option(ACTING, "--no-wait-landing", is_flag=True,
           help="Do not wait for the replacements to be scheduled after the evictions (by default the run waits, "
                "up to --timeout, and shows where each landed against the estimate, and the nodes measured after)."),
    option(ACTING, "--rounds", type=checks.Count(1, 100), default=1, show_default=True, metavar="N",
           help="Once the replacements are scheduled, read the cluster again and plan again, up to N rounds, "
                "until the plan is empty, nothing moved, or the nodes over target and the spread stop improving."),
], _acting)


def _output(v: dict[str, Any]) -> OutputOptions:
    from kubectl_desched.app.options import OutputOptions

    return OutputOptions(check_format(v["output"]), not v["no_pager"], v["no_headers"], check_sort_by(v["sort_by"]),
                         v["show_labels"], v["bars"])


output = OptionGroup("output", [
    option(OUTPUT, "-o", "--output", default="table", show_default=True, metavar="FORMAT",
           shell_complete=completers.output_formats, help=formats_help()),
    option(OUTPUT, "--no-headers", is_flag=True, help="Tables and custom-columns without their header lines."),
    option(OUTPUT, "--sort-by", metavar="JSONPATH",
           help="Order the candidates by this JSONPath over each one's document, e.g. '{.priority}'."),
    option(OUTPUT, "--show-labels", is_flag=True, help="A LABELS column with each candidate's labels."),
    option(OUTPUT, "--bars/--no-bars", default=None,
           help="Draw each node's cpu and memory as a bar, now -> after, with the plugins' targets marked, in the "
                "nodes table (-o table and wide) [default: on a terminal, where the table still fits its width]."),
    option(OUTPUT, "--no-pager", is_flag=True,
           help="Print a long plan straight to the terminal instead of through $PAGER (less -FRX)."),
], _output)


def options(access: ClusterAccess, scope: ScopeOptions, output: OutputOptions,
            acting: ActOptions | None = None) -> Options:
    """One command's options; the first -n is also kubectl's namespace override, as kubectl reads it."""
    from kubectl_desched.app.options import ActOptions, Options

    access = replace(access, namespace=scope.namespaces[0] if scope.namespaces else None)
    return Options(access, scope, acting or ActOptions(), output.format, output.pager, output)
