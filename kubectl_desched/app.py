"""Wiring between the CLI and the framework: source -> state -> plan -> render -> confirm -> act."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import click
import yaml
from tabulate import tabulate

from kubectl_desched import __version__
from kubectl_desched.confirm import NotConfirmed, choose
from kubectl_desched.errors import DeschedError, UsageError
from kubectl_desched.evictors.base import EvictionResult, now
from kubectl_desched.evictors.eviction_api import EvictionApiEvictor
from kubectl_desched.evictors.migration import (
    SUMMARY_HEADERS,
    MigrationEvictor,
    job_doc,
    phase_line,
    profile_settings,
    summary_rows,
)
from kubectl_desched.explain import explain_node_doc, explain_node_text, explain_pod_doc, explain_pod_text
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.runner import Scope, considered_nodes, run
from kubectl_desched.kube.config import Connection, KubeOptions, connect, context_namespace
from kubectl_desched.kube.live import read_cluster
from kubectl_desched.kube.snapshot import load_snapshot
from kubectl_desched.policy import Policy
from kubectl_desched.render import (
    Painter,
    candidates_table,
    color_enabled,
    document,
    node_rows,
    nodes_table,
    results_table,
)
from kubectl_desched.selectors import parse_selector
from kubectl_desched.state import ClusterState

EXIT_NOT_CONFIRMED = 3


def warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def _split(values: tuple[str, ...] | list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


@dataclass
class Options:
    kube: KubeOptions = field(default_factory=KubeOptions)
    from_files: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = False
    exclude_namespaces: tuple[str, ...] = ()
    selector: str | None = None
    nodes: str | None = None
    node_selector: str | None = None
    output: str = "table"
    yes: bool = False
    dry_run: str = "none"
    grace_period: int | None = None
    evictor: str = "eviction"  # or "migration": Koordinator PodMigrationJobs
    migration_mode: str | None = None
    migration_ttl: float | None = None
    wait: bool = True
    timeout: float | None = None


@dataclass
class Loaded:
    state: ClusterState
    conn: Connection | None
    scope: Scope
    scope_text: str


def default_namespace(opts: Options) -> str:
    """The context's namespace, as kubectl uses it; "default" for a snapshot when no kubeconfig can be read."""
    try:
        return context_namespace(opts.kube)
    except UsageError:
        if not opts.from_files:
            raise
        return "default"  # a snapshot needs no kubeconfig


def resolve_scope(opts: Options, *, policy_given: bool) -> tuple[Scope, str]:
    scope = Scope(excluded_namespaces=set(_split(opts.exclude_namespaces)))
    if opts.all_namespaces and opts.namespaces:
        raise UsageError("-A/--all-namespaces and -n/--namespace cannot be used together")
    if opts.namespaces:
        scope.namespaces = set(_split(opts.namespaces))
        text = "namespace " + ",".join(sorted(scope.namespaces))
    elif opts.all_namespaces or policy_given:
        text = "all namespaces"
    else:
        ns = default_namespace(opts)
        scope.namespaces = {ns}
        text = f"namespace {ns} (-A for all namespaces)"
    if scope.excluded_namespaces:
        text += ", excluding " + ",".join(sorted(scope.excluded_namespaces))
    if opts.selector:
        try:
            scope.pod_selector = parse_selector(opts.selector)
        except ValueError as e:
            raise UsageError(f"-l/--selector: {e}") from None
        scope.pod_selector_text = opts.selector
        text += f", pods -l {opts.selector}"
    if opts.nodes:
        scope.node_names = set(_split([opts.nodes]))
        text += f", nodes {','.join(sorted(scope.node_names))}"
    if opts.node_selector:
        try:
            scope.node_selector = parse_selector(opts.node_selector)
        except ValueError as e:
            raise UsageError(f"--node-selector: {e}") from None
        text += f", nodes -l {opts.node_selector}"
    return scope, text


class _Progress:
    """`reading pods: 12,000` on a terminal's stderr; silent otherwise."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.shown = False

    def __call__(self, label: str, count: int) -> None:
        if self.enabled:
            sys.stderr.write(f"\rreading {label}: {count:,}   ")
            sys.stderr.flush()
            self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def load(opts: Options, *, policy_given: bool, kinds: set[str] | None = None) -> Loaded:
    scope, text = resolve_scope(opts, policy_given=policy_given)
    if opts.from_files:
        if opts.yes or opts.dry_run == "server":
            raise UsageError("cannot evict from a snapshot: the cluster state comes from --from-file; "
                             "run against the cluster to evict")
        state = load_snapshot(opts.from_files)
        conn = None
        for kind in sorted(kinds or ()):
            if kind not in state.extra:
                raise UsageError(f"the policy needs {kind} objects: add them to the snapshot "
                                 f"(kubectl get nodes,pods,pdb,{kind.lower()} -A -o yaml)")
    else:
        conn = connect(opts.kube)
        progress = _Progress()
        names = sorted(scope.node_names) if scope.node_names else None
        try:
            state = read_cluster(conn, node_names=names, progress=progress, warn=warn, kinds=kinds or set())
        finally:
            progress.done()
    if scope.node_names:
        missing = sorted(scope.node_names - set(state.nodes))
        if missing:
            raise UsageError(f"--nodes: node {', '.join(missing)} not found")
    return Loaded(state, conn, scope, text)


def _meta(policy: Policy, loaded: Loaded, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubectl-desched/v1",
        "kind": "Plan",
        "version": __version__,
        "source": loaded.state.source,
        "scope": loaded.scope_text,
        "policy": {"kind": policy.kind, "source": policy.source,
                   "profiles": [{"name": p.name, "deschedule": [u.spec.name for u in p.deschedule],
                                 "balance": [u.spec.name for u in p.balance],
                                 "filter": [u.spec.name for u in p.filters]} for p in policy.profiles]},
        "mode": mode,
    }


def _emit(doc: dict[str, Any], output: str) -> None:
    if output == "json":
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False), nl=False)


def _mode(opts: Options, loaded: Loaded) -> str:
    if loaded.conn is None:
        return "snapshot"
    return {"client": "dry-run=client", "server": "dry-run=server"}.get(opts.dry_run, "evict")


def plan_and_act(opts: Options, policy: Policy, *, point: str | None = None) -> int:
    """The balance / deschedule / run commands. Returns the exit code."""
    for w in policy.warnings:
        warn(w)
    if point is not None:
        for p in policy.profiles:
            if point == "balance":
                p.deschedule = []
            else:
                p.balance = []
        if not any(p.balance or p.deschedule for p in policy.profiles):
            raise UsageError(f"the policy enables no {point} plugin")
    loaded = load(opts, policy_given=policy.from_file, kinds=policy.required_kinds())
    plan = run(policy, loaded.state, loaded.scope)
    nodes = considered_nodes(loaded.state, policy, loaded.scope)
    mode = _mode(opts, loaded)
    paint = Painter(color_enabled())
    structured = opts.output in ("json", "yaml")
    if not structured:
        _print_plan(plan, policy, loaded, nodes, paint, wide=opts.output == "wide")
    for e in plan.errors:
        click.echo(f"error: {e}", err=True)

    results: list[EvictionResult] | None = None
    migration: MigrationEvictor | None = None
    code = 1 if plan.errors else 0
    if plan.candidates and mode in ("evict", "dry-run=server"):
        assert loaded.conn is not None
        migration = _migration_evictor(opts, policy, loaded.conn, mode, structured) \
            if opts.evictor == "migration" else None
        if migration is not None:
            _require(migration.preflight(plan.candidates))
        try:
            chosen = plan.candidates if opts.yes else choose(plan.candidates)
        except NotConfirmed as e:
            if structured:
                _emit(document(plan, nodes, _meta(policy, loaded, mode)), opts.output)
            click.echo(str(e), err=True)
            return EXIT_NOT_CONFIRMED
        if migration is not None:
            results, interrupted = _migrate(migration, chosen, None if structured else _live_line(paint))
            if not structured:
                click.echo("")
                click.echo(tabulate(summary_rows(results, migration.tracks), headers=SUMMARY_HEADERS,
                                    tablefmt="plain"))
        else:
            evictor = EvictionApiEvictor(loaded.conn, server_dry_run=mode == "dry-run=server",
                                         grace_period=opts.grace_period)
            results = evictor.evict_all(chosen, on_result=None if structured else _live_line(paint))
            if not structured:
                click.echo("")
                click.echo(results_table(results, paint))
        failed = [r for r in results if not r.ok]
        if failed:
            code = 1
        if migration is not None and interrupted:
            code = 130
        click.echo(_summary(results), err=True)
    elif plan.candidates and mode == "snapshot" and not structured:
        click.echo("\nThe state comes from a file: nothing can be evicted. Run against the cluster to evict.")
    if structured:
        doc = document(plan, nodes, _meta(policy, loaded, mode), results)
        if migration is not None:
            tracks = migration.tracks
            doc["podMigrationJobs"] = [job_doc(tracks[id(r.candidate)], r) for r in results or []
                                       if id(r.candidate) in tracks]
        _emit(doc, opts.output)
    return code


def _migration_evictor(opts: Options, policy: Policy, conn: Connection, mode: str, structured: bool
                       ) -> MigrationEvictor:
    settings = profile_settings(policy.profiles, opts.migration_mode, opts.migration_ttl, opts.grace_period)
    show = None if structured else (lambda track: click.echo(phase_line(track), err=True))
    return MigrationEvictor(conn, settings, server_dry_run=mode == "dry-run=server", wait=opts.wait,
                            timeout=opts.timeout, on_phase=show)


def _require(missing: list[str]) -> None:
    if missing:
        raise DeschedError(f"missing permission: you may not {'; '.join(missing)} (nothing was evicted)")


def _migrate(evictor: MigrationEvictor, chosen: list, on_result: Callable[[EvictionResult], None] | None
             ) -> tuple[list[EvictionResult], bool]:
    """Create the jobs one by one, then follow them. Ctrl-C stops creating; jobs already created stay with
    Koordinator and the summary says where each one was."""
    stop = threading.Event()
    results = []
    for c in chosen:
        try:
            r = evictor.evict(c, stop)
        except KeyboardInterrupt:
            stop.set()
            r = EvictionResult(c, "unknown", "interrupted while its PodMigrationJob was being created: "
                               "see kubectl get podmigrationjobs", finished=now())
        results.append(r)
        if on_result and r.outcome != "created":  # created jobs get their own phase lines
            on_result(r)
    results = evictor.settle(results, stop)
    return results, stop.is_set()


def _live_line(paint: Painter) -> Callable[[EvictionResult], None]:
    def show(r: EvictionResult) -> None:
        p = r.candidate.pod
        click.echo(f"  {p.namespace}/{p.name}: {r.outcome}" + ("" if r.ok else f" ({r.message})"), err=True)
    return show


def _summary(results: list[EvictionResult]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    return f"{len(results)} confirmed: " + ", ".join(f"{v} {k}" for k, v in counts.items())


def _print_plan(plan: EvictionPlan, policy: Policy, loaded: Loaded, nodes: list, paint: Painter, wide: bool) -> None:
    plugins = ", ".join(dict.fromkeys(policy.plugin_names())) or "none"
    click.echo(f"Source:  {loaded.state.source}")
    click.echo(f"Scope:   {loaded.scope_text}")
    click.echo(f"Plugins: {plugins}  ({policy.source})")
    click.echo("")
    if plan.candidates:
        click.echo(paint(f"{len(plan.candidates)} candidate pod(s):", None, bold=True))
        click.echo(candidates_table(plan, wide=wide))
    else:
        click.echo(paint("No pods to evict.", None, bold=True))
    for plugin, message in plan.messages:
        click.echo(f"  {plugin}: {message}")
    click.echo("")
    table, hidden = nodes_table(node_rows(plan, nodes), paint, all_nodes=wide)
    click.echo(paint("Nodes (requests as % of allocatable, now -> after the evictions):", None, bold=True))
    click.echo(table)
    if hidden:
        click.echo(f"({hidden} other node(s) appropriately utilized and unchanged; -o wide lists all)")


def explain_pod(opts: Options, policy: Policy, pod_name: str) -> int:
    """-n only says where the pod is: the plan covers every namespace, as `balance -A` would."""
    for w in policy.warnings:
        warn(w)
    namespace = _split(opts.namespaces)[0] if opts.namespaces else default_namespace(opts)
    cluster_wide = replace(opts, namespaces=(), all_namespaces=True)
    loaded = load(cluster_wide, policy_given=True, kinds=policy.required_kinds())
    pod = loaded.state.find_pod(namespace, pod_name)
    if pod is None:
        raise DeschedError(f'pod "{pod_name}" not found in namespace {namespace}')
    plan = run(policy, loaded.state, loaded.scope)
    doc = explain_pod_doc(plan, pod, list(dict.fromkeys(policy.plugin_names())))
    return _show_explanation(plan, doc, explain_pod_text, opts.output)


def explain_node(opts: Options, policy: Policy, node_name: str) -> int:
    for w in policy.warnings:
        warn(w)
    loaded = load(opts, policy_given=policy.from_file, kinds=policy.required_kinds())
    node = loaded.state.nodes.get(node_name)
    if node is None:
        raise DeschedError(f'node "{node_name}" not found')
    plan = run(policy, loaded.state, loaded.scope)
    considered = node in considered_nodes(loaded.state, policy, loaded.scope)
    doc = explain_node_doc(plan, node, considered)
    return _show_explanation(plan, doc, explain_node_text, opts.output)


def _show_explanation(plan: EvictionPlan, doc: dict[str, Any], as_text: Callable[[dict[str, Any]], str],
                      output: str) -> int:
    for e in plan.errors:
        click.echo(f"error: {e}", err=True)
    if output in ("json", "yaml"):
        _emit(doc, output)
    else:
        click.echo(as_text(doc))
    return 1 if plan.errors else 0
