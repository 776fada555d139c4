"""Wiring between the CLI and the framework: source -> state -> plan -> render -> confirm -> act."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import click
import yaml

from kubectl_desched import __version__, interrupts, pager
from kubectl_desched.confirm import NotConfirmed, ask
from kubectl_desched.errors import DeschedError, UsageError
from kubectl_desched.evictors.base import EvictionResult, Evictor
from kubectl_desched.explain import explain_node_doc, explain_node_text, explain_pod_doc, explain_pod_text
from kubectl_desched.framework.plan import Candidate, EvictionPlan
from kubectl_desched.framework.runner import Scope, considered_nodes, filters_read_other_nodes, needs_whole_cluster, run
from kubectl_desched.interrupts import Interrupted
from kubectl_desched.kube.snapshot import load_snapshot
from kubectl_desched.metrics import SNAPSHOT_HINTS
from kubectl_desched.options import Options
from kubectl_desched.placement import Placement, estimate
from kubectl_desched.placement import warnings as placement_warnings
from kubectl_desched.policy import Policy
from kubectl_desched.render import (
    Painter,
    candidates_table,
    color_enabled,
    document,
    node_rows,
    nodes_heading,
    nodes_table,
    plan_summary,
    results_table,
)
from kubectl_desched.report import Report, policy_doc
from kubectl_desched.sanitize import LINE_LIMIT, one_line
from kubectl_desched.selectors import parse_selector
from kubectl_desched.state import ClusterState
from kubectl_desched.statusline import StatusLine

# The kubernetes client (kube/config.py) and urllib3 (kube/live.py, evictors) are imported where a request is made:
# `version`, `--help`, completion and snapshot runs start without them (~0.5 s).
if TYPE_CHECKING:
    from kubectl_desched.evictors.eviction_api import Progress
    from kubectl_desched.evictors.execute import Runner
    from kubectl_desched.kube.config import Connection, KubeOptions

EXIT_NOT_CONFIRMED = 3
EXIT_INTERRUPTED = 130  # Ctrl-C; SIGTERM and SIGHUP give 128+N as well (143, 129): see interrupts.py


def warn(message: str) -> None:
    click.echo(f"warning: {one_line(message, LINE_LIMIT)}", err=True)


def error(message: object) -> None:
    """An `error:` line that does not end the run (a plan error); one printable line whatever it quotes."""
    click.echo(f"error: {one_line(message, LINE_LIMIT)}", err=True)


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


@dataclass
class Loaded:
    state: ClusterState
    conn: Connection | None
    scope: Scope
    scope_text: str


def default_namespace(opts: Options) -> str:
    """The context's namespace, as kubectl uses it; "default" for a snapshot when no kubeconfig can be read."""
    from kubectl_desched.kube.config import context_namespace
    try:
        return context_namespace(opts.access.kube())
    except UsageError:
        if not opts.access.from_files:
            raise
        return "default"  # a snapshot needs no kubeconfig


def resolve_scope(opts: Options, *, policy_given: bool) -> tuple[Scope, str]:
    given = opts.scope
    scope = Scope(excluded_namespaces=set(given.exclude_namespaces))
    if given.all_namespaces and given.namespaces:
        raise UsageError("-A/--all-namespaces and -n/--namespace cannot be used together")
    if given.namespaces:
        scope.namespaces = set(given.namespaces)
        text = "namespace " + ",".join(sorted(scope.namespaces))
    elif given.all_namespaces or policy_given:
        text = "all namespaces"
    else:
        ns = default_namespace(opts)
        scope.namespaces = {ns}
        text = f"namespace {ns} (-A for all namespaces)"
    if scope.excluded_namespaces:
        text += ", excluding " + ",".join(sorted(scope.excluded_namespaces))
    if given.selector:
        try:
            scope.pod_selector = parse_selector(given.selector)
        except ValueError as e:
            raise UsageError(f"-l/--selector: {e}") from None
        scope.pod_selector_text = given.selector
        text += f", pods -l {given.selector}"
    if given.nodes:
        scope.node_names = set(given.nodes)
        text += f", nodes {','.join(sorted(scope.node_names))}"
    if given.node_selector:
        try:
            scope.node_selector = parse_selector(given.node_selector)
        except ValueError as e:
            raise UsageError(f"--node-selector: {e}") from None
        text += f", nodes -l {given.node_selector}"
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


def load(opts: Options, *, policy_given: bool, kinds: set[str] | None = None, one_node: str | None = None,
         all_pods: bool = False) -> Loaded:
    """The state from the snapshot or the cluster; with one_node (live only), that node and its pods alone.
    --nodes reads only those nodes' pods unless all_pods (filters that look at the other nodes' pods)."""
    scope, text = resolve_scope(opts, policy_given=policy_given)
    from kubectl_desched.kube.live import OPTIONAL_KINDS
    if opts.access.from_files:
        if opts.acting.yes or opts.acting.dry_run == "server":
            raise UsageError("cannot evict from a snapshot: the cluster state comes from --from-file; "
                             "run against the cluster to evict")
        state = load_snapshot(opts.access.from_files)
        conn = None
        for kind in sorted(kinds or ()):
            if kind not in state.extra and kind not in OPTIONAL_KINDS:
                how = SNAPSHOT_HINTS.get(kind) or f"kubectl get nodes,pods,pdb,{kind.lower()} -A -o yaml"
                raise UsageError(f"the policy needs {kind} objects: add them to the snapshot ({how})")
    elif one_node is not None:
        conn = connect(opts.access.kube())
        found = read_node(conn, one_node, warn=warn, kinds=kinds or set())
        if found is None:
            raise DeschedError(f'node "{one_node}" not found')
        return Loaded(found, conn, scope, text)  # --nodes may name nodes this read does not see
    else:
        conn = connect(opts.access.kube())
        progress = _Progress()
        names = sorted(scope.node_names) if scope.node_names and not all_pods else None
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
        "respectPDBs": policy.limits.respect_pdbs,
        "maxPerWorkload": policy.limits.per_workload,
    }


def _emit(doc: dict[str, Any], output: str) -> None:
    if output == "json":
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False), nl=False)


def _mode(opts: Options, loaded: Loaded) -> str:
    if loaded.conn is None:
        return "snapshot"
    return {"client": "dry-run=client", "server": "dry-run=server"}.get(opts.acting.dry_run, "evict")


def plan_and_act(opts: Options, policy: Policy, *, point: str | None = None) -> int:
    """The balance / deschedule / run commands. Returns the exit code. With --report the record is written
    whatever happens after the path was checked (success, error, refusal, Ctrl-C, SIGTERM, SIGHUP): SIGTERM and
    SIGHUP raise Interrupted as Ctrl-C does instead of killing the process unrecorded."""
    report = Report(opts.acting.report) if opts.acting.report else None
    with interrupts.raising():
        try:
            code = _plan_and_act(opts, policy, point, report)
        except DeschedError as e:
            if report:
                report.doc["error"] = one_line(e, LINE_LIMIT)  # as the error line says it
            raise
        except (KeyboardInterrupt, Interrupted) as e:
            if report:
                by = e.name if isinstance(e, Interrupted) else "Ctrl-C"
                summary = report.doc["summary"]
                report.doc["error"] = f"interrupted by {by} " + ("after acting (see evictions)" if summary
                                                                 else "before any eviction was sent")
                if summary:  # the exit code the process will really have
                    summary["exitCode"] = e.exit_code if isinstance(e, Interrupted) else EXIT_INTERRUPTED
            raise
        finally:
            if report:
                with interrupts.deferred():  # a signal now waits until the report is on disk
                    _write_report(report)
    return code


def _write_report(report: Report) -> None:
    try:
        report.write()
    except OSError as e:
        click.echo(f"error: --report {report.path}: {e.strerror or e}", err=True)


def _plan_and_act(opts: Options, policy: Policy, point: str | None, report: Report | None) -> int:
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
    loaded = load(opts, policy_given=policy.from_file, kinds=policy.required_kinds(),
                  all_pods=filters_read_other_nodes(policy) is not None)
    plan = run(policy, loaded.state, loaded.scope)
    nodes = considered_nodes(loaded.state, policy, loaded.scope)
    placement = estimate(loaded.state, plan.candidates) if plan.candidates else None
    mode = _mode(opts, loaded)
    if report:
        _describe_run(report, opts, policy, loaded, mode, plan)
    paint = Painter(color_enabled())
    structured = opts.output in ("json", "yaml")
    if not structured:
        pager.show(_plan_text(plan, policy, loaded, nodes, paint, opts.output == "wide", placement), opts.pager)
    for e in plan.errors:
        error(e)

    results: list[EvictionResult] | None = None
    runner: Runner | None = None
    code = 1 if plan.errors else 0
    if plan.candidates and mode in ("evict", "dry-run=server"):
        assert loaded.conn is not None
        # Progress goes to stderr in every format: stdout stays the one document -o json/yaml promises.
        runner, status = _runner(opts, loaded.conn, mode, policy, quiet=False)
        _preflight(runner, plan.candidates, opts, report)
        try:
            landing = (lambda c: d.text if (d := placement.of(c)) else None) if placement else None
            chosen, answer = (plan.candidates, "all") if opts.acting.yes else ask(plan.candidates, landing)
        except NotConfirmed as e:
            if report:
                report.doc["confirmation"] = {"how": "interactive", "answer": None, "chosen": [], "refused": str(e)}
            if structured:
                _emit(document(plan, nodes, _meta(policy, loaded, mode), placement=placement), opts.output)
            click.echo(str(e), err=True)
            return EXIT_NOT_CONFIRMED
        except Interrupted as e:  # at the prompt: an interrupt (128+N), not a "no" (3)
            if report:
                report.doc["confirmation"] = {"how": "interactive", "answer": None, "chosen": [],
                                              "refused": f"interrupted by {e.name} at the prompt"}
            raise
        if report:
            report.confirmation("--yes" if opts.acting.yes else "interactive", answer, chosen)
        with interrupts.deferred():  # a signal just before or after acting must not cut the record short
            try:
                outcome = runner.run(chosen)
            finally:
                if status is not None:
                    status.clear()
            results = outcome.results
            if any(not r.ok for r in results):
                code = 1
            by = interrupts.signal_name(outcome.signum) if outcome.signum is not None else None
            if outcome.interrupted:
                code = interrupts.exit_code(outcome.signum) if outcome.signum is not None else EXIT_INTERRUPTED
            if report:
                report.evictions(results, interrupted=outcome.interrupted, exit_code=code,
                                 interrupted_by=by if outcome.interrupted else None)
        if not structured:
            click.echo("")
            click.echo(_results_table(runner.evictor, results, paint))
        click.echo(_summary(results, outcome.interrupted, by), err=True)
    elif plan.candidates and mode == "snapshot" and not structured:
        click.echo("\nThe state comes from a file: nothing can be evicted. Run against the cluster to evict.")
    if structured:
        from kubectl_desched.evictors.migration import MigrationEvictor, job_doc
        doc = document(plan, nodes, _meta(policy, loaded, mode), results, placement)
        if runner is not None and results is not None and isinstance(runner.evictor, MigrationEvictor):
            tracks = runner.evictor.tracks
            doc["podMigrationJobs"] = [job_doc(tracks[id(r.candidate)], r) for r in results
                                       if id(r.candidate) in tracks]
        _emit(doc, opts.output)
    return code


def _results_table(evictor: Evictor, results: list[EvictionResult], paint: Painter) -> str:
    from kubectl_desched.evictors.migration import MigrationEvictor, summary_table
    if isinstance(evictor, MigrationEvictor):
        return summary_table(results, evictor.tracks)
    return results_table(results, paint)


def make_evictor(opts: Options, conn: Connection, mode: str, progress: Progress | None,
                 policy: Policy | None = None, say: Callable[[str], None] | None = None) -> Evictor:
    """The evictor --evictor names (the Eviction API unless told otherwise)."""
    from kubectl_desched.evictors.eviction_api import EvictionApiEvictor
    from kubectl_desched.evictors.migration import MigrationEvictor, phase_line, profile_settings
    acting, migration = opts.acting, opts.acting.migration
    if migration is not None:
        settings = profile_settings(policy.profiles if policy else [], migration.mode, migration.ttl,
                                    acting.grace_period)
        shout = say or (lambda m: click.echo(m, err=True))
        show = (lambda track: shout(phase_line(track))) if progress else None
        return MigrationEvictor(conn, settings, server_dry_run=mode == "dry-run=server", wait=migration.wait,
                                timeout=migration.timeout, on_phase=show)
    return EvictionApiEvictor(conn, server_dry_run=mode == "dry-run=server", grace_period=acting.grace_period,
                              timeout=acting.timeout, progress=progress)


def _runner(opts: Options, conn: Connection, mode: str, policy: Policy, *,
            quiet: bool) -> tuple[Runner, StatusLine | None]:
    from kubectl_desched.evictors.events import EventRecorder
    from kubectl_desched.evictors.execute import Pacing, Runner
    from kubectl_desched.evictors.workloads import WorkloadReader

    # On a terminal one progress line is redrawn on stderr; each pod's result is then printed once, in the results
    # table, rather than also as it comes (which a log, where stderr is not a terminal, still gets).
    status = StatusLine(sys.stderr) if not quiet and sys.stderr.isatty() else None
    table_follows = sys.stdout.isatty() and opts.output in ("table", "wide")

    def say(message: str) -> None:
        if status is not None:
            status.clear()
        click.echo(message, err=True)

    def progress(c: Candidate, message: str) -> None:
        say(f"  {c.pod.namespace}/{c.pod.name}: {message}")

    acting = opts.acting
    pacing = Pacing(max_in_flight=acting.max_in_flight, interval=acting.interval, wait_ready=acting.wait_ready,
                    timeout=acting.timeout)
    events = EventRecorder(conn) if acting.record_events and mode == "evict" else None
    evictor = make_evictor(opts, conn, mode, None if quiet else progress, policy, say)
    per_pod = not quiet and not (status is not None and table_follows)
    return Runner(evictor, pacing,
                  workloads=WorkloadReader(conn) if acting.wait_ready else None, events=events,
                  on_result=(lambda r: _live_line(r, say)) if per_pod else None, note=say,
                  on_tick=status.update if status is not None else None), status


def _preflight(runner: Runner, candidates: list[Candidate], opts: Options, report: Report | None) -> None:
    """Before the prompt: name every missing permission in one line and stop, rather than fail pod by pod."""
    from kubectl_desched.kube.access import AccessCheckUnavailable
    try:
        missing, optional = runner.preflight(candidates)
    except AccessCheckUnavailable as e:
        warn(f"{e}; going ahead (the API server still checks each request)")
        missing, optional = [], []
    if report:
        report.doc["preflight"] = {"missing": missing, "missingForEvents": optional}
    if missing:
        raise DeschedError(f"not allowed to {'; '.join(missing)} (checked before asking: nothing was evicted)")
    if optional:
        warn(f"--record-events: not allowed to {'; '.join(optional)}: evictions will go ahead without events")


def _describe_run(report: Report, opts: Options, policy: Policy, loaded: Loaded, mode: str,
                  plan: EvictionPlan) -> None:
    conn, acting, migration = loaded.conn, opts.acting, opts.acting.migration
    report.doc.update({
        "cluster": {"server": conn.server, "context": conn.context} if conn else None,
        "source": loaded.state.source, "scope": loaded.scope_text, "mode": mode,
        "evictor": "eviction-api" if migration is None else "migration",
        "pacing": {"maxInFlight": acting.max_in_flight, "interval": acting.interval, "waitReady": acting.wait_ready,
                   "timeout": acting.timeout, "recordEvents": acting.record_events,
                   "gracePeriod": acting.grace_period},
        "policy": policy_doc(policy), "planErrors": list(plan.errors),
    })
    if migration is not None:
        report.doc["migration"] = {"mode": migration.mode, "ttl": migration.ttl, "wait": migration.wait,
                                   "timeout": migration.timeout}  # None: the policy's or Koordinator's default
    report.candidates(plan.candidates)


def _live_line(r: EvictionResult, say: Callable[[str], None]) -> None:
    if r.outcome == "created":
        return  # a PodMigrationJob's phases have their own lines
    p = r.candidate.pod
    say(f"  {p.namespace}/{p.name}: {r.outcome}" + ("" if r.ok else f" ({one_line(r.message, LINE_LIMIT)})"))


def _summary(results: list[EvictionResult], interrupted: bool = False, by: str | None = None) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    line = f"{len(results)} confirmed: " + ", ".join(f"{v} {k}" for k, v in counts.items())
    if interrupted:
        done = sum(1 for r in results if r.disruptive)
        said = "interrupted" if by in (None, "Ctrl-C") else f"interrupted by {by}"
        line = f"{said}: {done} evicted or possibly evicted, {len(results) - done} not. " + line
    return line


def _plan_text(plan: EvictionPlan, policy: Policy, loaded: Loaded, nodes: list, paint: Painter, wide: bool,
               placement: Placement | None = None) -> str:
    plugins = ", ".join(dict.fromkeys(policy.plugin_names())) or "none"
    out = [paint(plan_summary(plan), None, bold=True),
           f"Source:  {loaded.state.source}", f"Scope:   {loaded.scope_text}", f"Plugins: {plugins}  ({policy.source})",
           ""]
    if plan.candidates:
        out.append(paint(f"{len(plan.candidates)} candidate pod(s):", None, bold=True))
        out.append(candidates_table(plan, wide=wide, placement=placement))
    else:
        out.append(paint("No pods to evict.", None, bold=True))
    out += [f"  {plugin}: {message}" for plugin, message in plan.messages]
    out.append("")
    rows = node_rows(plan, nodes, placement)
    table, hidden = nodes_table(rows, paint, all_nodes=wide)
    out += [paint(nodes_heading(rows), None, bold=True), table]
    if hidden:
        out.append(f"({hidden} other node(s) appropriately utilized and unchanged; -o wide lists all)")
    if placement is not None:
        out.append("After the evictions the scheduler places the replacements: LAND and the after-columns are an "
                   "estimate (-o wide: DESTINATION).")
        said = placement_warnings(placement, plan.candidates, loaded.state.nodes, plan.targets)
        out += [paint(f"warning: {w}", "yellow") for w in said]
    return "\n".join(out)


def explain_pod(opts: Options, policy: Policy, pod_name: str) -> int:
    """-n only says where the pod is: the plan covers every namespace, as `balance -A` would."""
    for w in policy.warnings:
        warn(w)
    namespace = opts.scope.namespaces[0] if opts.scope.namespaces else default_namespace(opts)
    cluster_wide = replace(opts, scope=replace(opts.scope, namespaces=(), all_namespaces=True))
    loaded = load(cluster_wide, policy_given=True, kinds=policy.required_kinds())
    pod = loaded.state.find_pod(namespace, pod_name)
    if pod is None:
        raise DeschedError(f'pod "{pod_name}" not found in namespace {namespace}')
    plan = run(policy, loaded.state, loaded.scope)
    doc = explain_pod_doc(plan, pod, list(dict.fromkeys(policy.plugin_names())))
    return _show_explanation(plan, doc, explain_pod_text, opts.output, opts.pager)


def explain_node(opts: Options, policy: Policy, node_name: str, *, full: bool = False) -> int:
    """Live, the node and its pods are read alone unless --full or the policy's filters or limits need every
    node: plugins that need the other nodes are then estimated or listed as not evaluated."""
    for w in policy.warnings:
        warn(w)
    one_node = not full and not opts.access.from_files and needs_whole_cluster(policy) is None
    loaded = load(opts, policy_given=policy.from_file, kinds=policy.required_kinds(),
                  one_node=node_name if one_node else None, all_pods=filters_read_other_nodes(policy) is not None)
    node = loaded.state.nodes.get(node_name)
    if node is None:
        raise DeschedError(f'node "{node_name}" not found')
    plan = run(policy, loaded.state, loaded.scope, one_node=one_node)
    considered = node in considered_nodes(loaded.state, policy, loaded.scope)
    doc = explain_node_doc(plan, node, considered)
    return _show_explanation(plan, doc, explain_node_text, opts.output, opts.pager)


def _show_explanation(plan: EvictionPlan, doc: dict[str, Any], as_text: Callable[[dict[str, Any]], str],
                      output: str, paged: bool = False) -> int:
    for e in plan.errors:
        error(e)
    if output in ("json", "yaml"):
        _emit(doc, output)
    else:
        pager.show(as_text(doc), paged)
    return 1 if plan.errors else 0
