"""Loading the cluster state: from snapshot files, or read live (all of it, or one node and its pods)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_desched.app.options import Options
from kubectl_desched.app.scope import resolve_scope
from kubectl_desched.app.text import warn
from kubectl_desched.errors import DeschedError, UsageError
from kubectl_desched.framework.policy import Policy
from kubectl_desched.framework.runner import Scope
from kubectl_desched.kube.snapshot import load_snapshot
from kubectl_desched.model.label_selectors import selector_keys
from kubectl_desched.model.metrics import PROMETHEUS, SNAPSHOT_HINTS, PrometheusReading
from kubectl_desched.model.state import ClusterState
from kubectl_desched.sanitize import shown

# The kubernetes client (kube/config.py) and urllib3 (kube/live.py, evictors) are imported where a request is made:
# `version`, `--help`, completion and snapshot runs start without them (~0.5 s).
if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection, KubeOptions
    from kubectl_desched.kube.prometheus import Target


# Module-level stand-ins that import on first call (and that tests can replace).
def connect(opts: KubeOptions) -> Connection:
    from kubectl_desched.kube.config import connect
    return connect(opts)


def read_cluster(conn: Connection, **kw: Any) -> ClusterState:
    from kubectl_desched.kube.live import read_cluster
    return read_cluster(conn, **kw)


def read_node(conn: Connection, name: str, **kw: Any) -> ClusterState | None:
    from kubectl_desched.kube.live import read_node
    return read_node(conn, name, **kw)


def match_fields(conn: Connection, scope: Scope, node: str | None = None) -> None:
    """--field-selector against a cluster: the server says which pods match (it knows every field label); for one
    node's explanation, only among that node's pods."""
    if scope.pod_fields_text:
        from kubectl_desched.kube.apierrors import is_api_exception
        from kubectl_desched.kube.live import pod_keys_matching
        try:
            keys = pod_keys_matching(conn, scope.pod_fields_text + (f",spec.nodeName={node}" if node else ""))
        except DeschedError as e:
            answer = e.__cause__ or e.__context__  # the server's, behind the one-line error
            if answer is not None and is_api_exception(answer) and answer.status == 400:  # e.g. a field it lacks
                raise UsageError(str(e)) from None
            raise
        scope.pod_fields = lambda pod: pod.key in keys


@dataclass
class Loaded:
    state: ClusterState
    conn: Connection | None
    scope: Scope
    scope_text: str


class _Progress:
    """`reading pods: 12,000 of 150,000` on a terminal's stderr (the total as the list's first page gives it);
    silent otherwise."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.shown = False

    def __call__(self, label: str, count: int, total: int | None) -> None:
        if self.enabled:
            of = f" of {total:,}" if total and total >= count else ""
            sys.stderr.write(f"\rreading {label}: {count:,}{of}   ")
            sys.stderr.flush()
            self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def refuse_acting_on_snapshot(opts: Options) -> None:
    """--yes and --dry-run=server send requests: a snapshot has no API server to send them to."""
    if opts.acting.dry_run == "server":
        raise UsageError("--dry-run=server needs a cluster: the API server checks each eviction, and a snapshot "
                         "(--from-file) has no server to ask; a snapshot run only plans, as --dry-run=client does")
    if opts.acting.yes:
        raise UsageError("cannot evict from a snapshot: the cluster state comes from --from-file; "
                         "run against the cluster to evict")


def load(opts: Options, *, policy_given: bool, kinds: set[str] | None = None, one_node: str | None = None,
         all_pods: bool = False, policy: Policy | None = None) -> Loaded:
    """The state from the snapshot or the cluster; with one_node (live only), that node and its pods alone.
    --nodes reads only those nodes' pods unless all_pods (filters that look at the other nodes' pods). The
    Prometheus queries the policy's plugins read are evaluated once the state is read (query_prometheus)."""
    api_kinds = set(kinds or ()) - {PROMETHEUS}  # not an API kind: asked of Prometheus below
    loaded = _load(opts, policy_given=policy_given, kinds=api_kinds, one_node=one_node, all_pods=all_pods)
    if PROMETHEUS in (kinds or ()) and policy is not None:
        loaded.state.extra = {**loaded.state.extra, PROMETHEUS: query_prometheus(opts, policy, loaded.conn)}
    return loaded


def prometheus_target(opts: Options, policy: Policy) -> Target:
    """--prometheus-url, else the policy's metricsProviders url; with a snapshot, only the flag (the policy's
    address is the one the descheduler reaches from inside the cluster)."""
    from kubectl_desched.kube.config import in_cluster
    from kubectl_desched.kube.prometheus import parse_target

    flags = opts.access.prometheus
    if flags.url:
        return parse_target(flags.url, "--prometheus-url", in_cluster=in_cluster())
    provider = policy.prometheus
    if provider is None or opts.access.from_files:
        where = "a snapshot (--from-file) has none" if opts.access.from_files else \
            "the policy has no metricsProviders entry with source Prometheus"
        raise UsageError(f"the Prometheus query {shown(policy.prometheus_queries()[0], 80)} needs a Prometheus "
                         f"server to ask, and {where}: give --prometheus-url URL or service/NAMESPACE/NAME:PORT")
    return parse_target(provider.url, f"{policy.source}: {provider.path}.url", in_cluster=in_cluster())


def query_prometheus(opts: Options, policy: Policy, conn: Connection | None) -> list[PrometheusReading]:
    """Each query the policy's plugins read, evaluated now; with its token: --prometheus-token-file, else the
    policy's authToken Secret (read with the user's credentials). A service reached through the API server gets
    no token: the API server keeps the Authorization header."""
    from kubectl_desched.kube import httplog
    from kubectl_desched.kube.prometheus import evaluate, token_from_file, token_from_secret

    flags = opts.access.prometheus
    httplog.set_verbosity(opts.access.verbosity)
    target = prometheus_target(opts, policy)
    provider = policy.prometheus
    token: str | None = None
    if flags.token_file:
        token = token_from_file(flags.token_file)
    if target.service is not None:
        if token is not None or flags.ca_file or flags.insecure_skip_tls_verify:
            raise UsageError(f"{target.origin}: {target.service.shown()}: --prometheus-token-file, "
                             "--prometheus-ca-file and --prometheus-insecure-skip-tls-verify apply to a URL only "
                             "(the API server keeps the Authorization header and does its own TLS)")
        if provider is not None and provider.secret_name and not flags.url:
            warn(f"{policy.source}: {provider.path}.authToken: not sent: {target.service.shown()} cannot carry a "
                 "token (the API server keeps the Authorization header); if Prometheus refuses, give "
                 "--prometheus-url with its address (e.g. after kubectl port-forward) and --prometheus-token-file")
    elif token is None and provider is not None and provider.secret_name and (not flags.url or
                                                                             flags.url == provider.url):
        if conn is None:
            raise UsageError(f"{policy.source}: {provider.path}.authToken: the Secret cannot be read from a "
                             "snapshot: give --prometheus-token-file")
        token = token_from_secret(conn, provider.secret_namespace, provider.secret_name,
                                  f"{provider.path}.authToken")
    if flags.insecure_skip_tls_verify and target.url.startswith("https:"):
        import warnings

        import urllib3
        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
        warn("the Prometheus server's certificate is not verified (--prometheus-insecure-skip-tls-verify)")
    now = opts.access.now  # --now evaluates the query at that time too
    readings = [evaluate(target, q, conn=conn, token=token, ca_file=flags.ca_file,
                         insecure=flags.insecure_skip_tls_verify, request_timeout=opts.access.request_timeout,
                         now=now) for q in policy.prometheus_queries()]
    for r in readings:
        for w in r.warnings:
            warn(f"Prometheus, on {shown(r.query, 80)}: {w}")
    return readings


def _load(opts: Options, *, policy_given: bool, kinds: set[str] | None = None, one_node: str | None = None,
          all_pods: bool = False) -> Loaded:
    scope, text = resolve_scope(opts, policy_given=policy_given)
    if opts.access.from_files:
        refuse_acting_on_snapshot(opts)
        state = load_snapshot(opts.access.from_files)
        state.now = opts.access.now or state.now
        conn = None
        for kind in sorted(kinds or ()):
            if kind in state.extra:
                continue
            from kubectl_desched.kube.optional_kinds import OPTIONAL_KINDS
            if kind not in OPTIONAL_KINDS:
                how = SNAPSHOT_HINTS.get(kind) or f"kubectl get nodes,pods,pdb,{kind.lower()} -A -o yaml"
                raise UsageError(f"the policy needs {kind} objects: add them to the snapshot ({how})")
    elif one_node is not None:
        conn = connect(opts.access.kube())
        # Only the PDBs of namespaces in scope: at 150,000 pods a node's pods span some 100 namespaces.
        found = read_node(conn, one_node, warn=warn, kinds=kinds or set(),
                          in_scope=lambda pod: scope.check_pod(pod) is None)
        if found is None:
            raise DeschedError(f'node "{one_node}" not found')
        match_fields(conn, scope, one_node)  # the node's pods are all this read holds
        return Loaded(found, conn, scope, text)  # --nodes may name nodes this read does not see
    else:
        conn = connect(opts.access.kube())
        progress = _Progress()
        names = sorted(scope.node_names) if scope.node_names and not all_pods else None
        try:
            state = read_cluster(conn, node_names=names, progress=progress, warn=warn, kinds=kinds or set())
        finally:
            progress.done()
        match_fields(conn, scope)
    check_nodes(scope, opts.scope.node_selector, state)
    return Loaded(state, conn, scope, text)


def _few(names: list[str], most: int = 5) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def check_nodes(scope: Scope, node_selector: str | None, state: ClusterState) -> None:
    """--nodes naming nodes that do not exist, or a --node-selector that matches none: a plan of no node would
    only say that no node is under- or over-utilized. Say instead what the nodes are called, or labelled."""
    if scope.node_names:
        missing = sorted(scope.node_names - set(state.nodes))
        if missing:
            raise UsageError(f"--nodes: no node named {', '.join(missing)} (the nodes: {_few(sorted(state.nodes))})")
    if scope.node_selector is None or any(scope.node_ok(n) for n in state.nodes.values()):
        return
    among = [n for n in state.nodes.values() if scope.node_names is None or n.name in scope.node_names]
    have = []
    for key in selector_keys(node_selector or ""):
        values = sorted({n.labels[key] for n in among if key in n.labels})
        have.append(f"their {key}: {_few(values)}" if values else f"none has the label {key}")
    which = " --nodes names" if scope.node_names else ""
    raise UsageError(f"--node-selector {node_selector} matches none of the {len(among)} nodes{which} "
                     f"({'; '.join(have)})")
