"""`kubectl desched apply -f PLAN`: a plan document made earlier (balance, deschedule or run with -o json/yaml),
checked against the cluster as it is now before anything is asked: the same cluster (by its kube-system UID), not
older than --max-age, each candidate still there with the same UID, on the same node, not terminating, and the
PodDisruptionBudgets, the eviction limits and the placement estimate worked out again on today's state. What no
longer holds is listed and left out (--strict refuses the whole plan); the rest is confirmed, evicted, awaited and
recorded as balance does. Against a snapshot of the cluster (--from-file) the same checks run and nothing is evicted."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

import click

from kubectl_desched import errors
from kubectl_desched.app import loading
from kubectl_desched.app.commands import recorded
from kubectl_desched.app.documents import describe_run, emit
from kubectl_desched.app.evicting import act
from kubectl_desched.app.options import Options, ScopeOptions
from kubectl_desched.app.plan_identity import read_cluster_uid, snapshot_uid
from kubectl_desched.app.scope import resolve_scope
from kubectl_desched.app.text import SNAPSHOT_ONLY, warn
from kubectl_desched.errors import DeschedError, StaleError, UsageError
from kubectl_desched.evictors.base import now
from kubectl_desched.framework.plan import EvictionPlan, Limits
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.framework.surge import SURGE_KINDS
from kubectl_desched.framework.types import EvictOptions, Plugin
from kubectl_desched.model import Node, Pod
from kubectl_desched.model.durations import format_duration, parse_time
from kubectl_desched.model.state import ClusterState
from kubectl_desched.safeload import MAX_YAML_SNAPSHOT_CHARS, InputError, json_value, read_file, yaml_value
from kubectl_desched.term import pager
from kubectl_desched.term.color import Painter, color_enabled
from kubectl_desched.ui.node_bars import bar_view
from kubectl_desched.ui.plan_view import (
    candidates_table,
    document,
    node_rows,
    nodes_heading,
    nodes_table,
    plan_summary,
)
from kubectl_desched.ui.report import Report

if TYPE_CHECKING:
    from kubectl_desched.kube.config import Connection

API_VERSION, KIND = "kubectl-desched/v1", "Plan"
DEFAULT_MAX_AGE = 3600.0
CANDIDATE_FIELDS = ("namespace", "pod", "uid", "node", "plugin", "reason", "profile")


@dataclass(frozen=True)
class PlanFile:
    name: str  # as given (`-` reads standard input)
    doc: dict[str, Any]

    @property
    def identity(self) -> dict[str, Any]:
        return self.doc["identity"]

    @property
    def candidates(self) -> list[dict[str, Any]]:
        return self.doc["candidates"]


def read_plan(path: str) -> PlanFile:
    """The plan document, JSON or YAML, checked for what apply reads; a UsageError (exit 2) naming what is wrong."""
    name = "<stdin>" if path == "-" else path
    text = read_file(path, MAX_YAML_SNAPSHOT_CHARS)
    doc = json_value(text, name, MAX_YAML_SNAPSHOT_CHARS) if text.lstrip().startswith("{") else yaml_value(text, name)
    return PlanFile(name, check_plan(doc, name))


def check_plan(doc: Any, name: str) -> dict[str, Any]:
    if not isinstance(doc, Mapping) or doc.get("kind") != KIND or doc.get("apiVersion") != API_VERSION:
        got = f"apiVersion {doc.get('apiVersion')!r}, kind {doc.get('kind')!r}" if isinstance(doc, Mapping) else \
            "not a mapping"
        raise InputError(f"{name}: not a {API_VERSION} {KIND} ({got}): give what balance, deschedule or run print "
                         "with -o json or -o yaml")
    identity = doc.get("identity")
    if not isinstance(identity, Mapping):
        raise InputError(f"{name}: the plan has no identity (which cluster, when, by whom): it was made by a version "
                         "before apply existed; make it again with -o json")
    if parse_time(identity.get("madeAt")) is None:
        raise InputError(f"{name}: identity.madeAt: not a timestamp")
    candidates = doc.get("candidates")
    if not isinstance(candidates, list):
        raise InputError(f"{name}: candidates: a list is missing")
    for i, c in enumerate(candidates):
        if not isinstance(c, Mapping):
            raise InputError(f"{name}: candidates[{i}]: not a mapping")
        for key in CANDIDATE_FIELDS:
            if not isinstance(c.get(key), str):
                raise InputError(f"{name}: candidates[{i}].{key}: missing or not a string")
    for key, kind in (("respectPDBs", bool), ("keepFutile", bool)):
        if not isinstance(doc.get(key), kind):
            raise InputError(f"{name}: {key}: missing or not a boolean")
    return dict(doc)


def plan_limits(doc: Mapping[str, Any]) -> Limits:
    """The limits the plan was made under, to count them again on today's state."""
    raw = ((doc["identity"].get("policy") or {}).get("limits")) or {}

    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    return Limits(per_node=count(raw.get("maxNoOfPodsToEvictPerNode")),
                  per_namespace=count(raw.get("maxNoOfPodsToEvictPerNamespace")),
                  total=count(raw.get("maxNoOfPodsToEvictTotal")), per_workload=count(doc.get("maxPerWorkload")),
                  respect_pdbs=doc["respectPDBs"], keep_futile=doc["keepFutile"],
                  cordon=doc.get("cordon") is True, surge=doc.get("surge") is True)


def plan_emptying(doc: Mapping[str, Any]) -> dict[str, str]:
    """--cordon's nodes as the plan names them (node -> plugin); an entry that is not one is left out."""
    found = doc.get("emptying")
    return {str(e["node"]): str(e.get("plugin") or "") for e in found if isinstance(e, Mapping) and
            isinstance(e.get("node"), str)} if isinstance(found, list) else {}


def check_cluster(plan: PlanFile, uid: str, server: str) -> None:
    """The same cluster, by the UID of its kube-system namespace (a server URL may change; a UID is not reused)."""
    theirs = plan.identity.get("kubeSystemUID")
    if not isinstance(theirs, str) or not theirs:
        raise DeschedError(f"{plan.name}: the plan does not say which cluster it was made on (no kube-system UID: "
                           "a snapshot without the kube-system Namespace, or one that could not be read): refused")
    if theirs != uid:
        made = plan.identity.get("server") or "a snapshot"
        raise DeschedError(f"{plan.name}: the plan was made on another cluster ({made}, kube-system UID {theirs}); "
                           f"{server} has kube-system UID {uid}: refused")


def check_age(plan: PlanFile, max_age: float) -> None:
    made = parse_time(plan.identity["madeAt"])
    assert made is not None  # check_plan saw to it
    age = (now() - made).total_seconds()
    if age > max_age:
        raise StaleError(f"{plan.name}: the plan was made {format_duration(round(age))} ago, more than --max-age "
                         f"{format_duration(max_age)}: make it again (or give a longer --max-age)")
    if made - now() > timedelta(minutes=5):
        raise DeschedError(f"{plan.name}: the plan says it was made at {plan.identity['madeAt']}, in the future: "
                           "check this machine's clock")


def _relocating(name: str) -> Plugin:
    """Stands for a plugin that wants its pod on another node, when the estimate is judged again (plan.futility):
    a landing back on its node, or on one its workload leaves, changes nothing. Its own landing rule is not known
    from the document."""
    stand_in: type[Plugin] = type("Relocating", (Plugin,), {"name": name, "relocates": True})
    return stand_in(None, cast(Any, None))


def recheck(candidates: list[dict[str, Any]], state: ClusterState, limits: Limits,
            relocates: Callable[[str], bool], emptying: Mapping[str, str] | None = None
            ) -> tuple[EvictionPlan, list[dict[str, Any]]]:
    """The plan's candidates against today's state, in the plan's order: (the plan of those that still hold,
    the others with why). A candidate is stale when its pod is gone, replaced (another UID), moved or
    terminating; refused when a limit, its PodDisruptionBudget (or, for a surge, its Deployment) or the placement
    estimate no longer allows it. The nodes the plan cordons are cordoned in the estimate again, those that are
    still there and schedulable."""
    plan = EvictionPlan(state, limits)
    for name, plugin in (emptying or {}).items():
        node = state.nodes.get(name)
        if node is not None and not node.unschedulable:
            plan.emptying[name] = plugin
    if plan.emptying:
        plan.estimator.cordon(list(plan.emptying))
    left_out: list[dict[str, Any]] = []

    def leave(c: Mapping[str, Any], kind: str, why: str) -> None:
        left_out.append({"namespace": c["namespace"], "pod": c["pod"], "uid": c["uid"], "node": c["node"],
                         "plugin": c["plugin"], "kind": kind, "why": why})

    for c in candidates:
        pod = state.find_pod(c["namespace"], c["pod"])
        why = _stale(c, pod)
        if why is not None or pod is None:
            leave(c, "stale", why or "gone")
            continue
        hit = plan.limit_hit(pod)
        if hit:
            leave(c, "refused", hit)
            continue
        refused = plan.pdb_refusal(pod) if limits.respect_pdbs else None
        surge = ""
        if c.get("method") == "surge":
            target = plan.surge_target(pod)
            if isinstance(target, str):
                leave(c, "refused", f"--surge cannot move it now: {target}")
                continue
            surge, refused = plan.surge_reason(pod, refused) or "planned replacement first", None
        if refused:
            leave(c, "refused", refused)
            continue
        estimator = plan.estimator
        dest = estimator.move(pod, surge=bool(surge))
        futile = plan.futility(pod, dest, _relocating(c["plugin"]) if relocates(c["plugin"]) else None)
        if surge and dest.node is None:  # refused whatever --keep-futile says, as the plan refuses it
            estimator.undo()
            leave(c, "refused", f"--surge cannot move it now: no node has room for the extra pod ({dest.why})")
            continue
        if futile and not limits.keep_futile:
            estimator.undo()
            leave(c, "refused", f"the move would change nothing now: {futile}")
            continue
        estimator.keep()
        plan.add(pod, EvictOptions(plugin=c["plugin"], reason=c["reason"]), c["profile"], futile, surge)
    return plan, left_out


def _stale(c: Mapping[str, Any], pod: Pod | None) -> str | None:
    if pod is None:
        return "gone: no pod of that name now"
    if pod.uid != c["uid"]:
        return f"replaced: the pod of that name is now uid {pod.uid}, the plan's was {c['uid']}"
    if pod.node_name != c["node"]:
        return f"moved: now on {pod.node_name or 'no node'}, the plan's was on {c['node']}"
    if pod.terminating:
        return "terminating: already being deleted"
    return None


def apply_plan(opts: Options, path: str, *, max_age: float, strict: bool, relocates: Callable[[str], bool]) -> int:
    plan = read_plan(path)
    report = Report(opts.acting.report) if opts.acting.report else None
    return recorded(report, lambda: _apply(opts, plan, max_age, strict, relocates, report))


def _made_from(planned: PlanFile) -> str:
    """The --from-file a snapshot plan was made with, as its arguments say (FILE if they do not)."""
    args = [a for a in planned.identity.get("arguments") or () if isinstance(a, str)]
    for i, a in enumerate(args):
        if a.startswith("--from-file="):
            return a.split("=", 1)[1]
        if a == "--from-file" and i + 1 < len(args):
            return args[i + 1]
    return "FILE"


def _connect(opts: Options, planned: PlanFile) -> Connection:
    """The cluster; where there is none to reach and the plan came from a snapshot, the way to check it there."""
    try:
        return loading.connect(opts.access.kube())
    except UsageError as e:
        if planned.identity.get("source") != "snapshot":
            raise
        raise UsageError(f"{e}; the plan was made from a snapshot: --from-file {_made_from(planned)} checks it "
                         "against that snapshot") from None


def _read(opts: Options, planned: PlanFile, kinds: set[str]) -> loading.Loaded:
    """The state the plan is checked against, once it is known to be the plan's cluster: read live, or a snapshot
    of it (a dry run: nothing can be evicted from a file, and --yes and --dry-run=server are refused). `kinds`:
    what the plan's --surge checks read."""
    if opts.access.from_files:
        loaded = loading.load(opts, policy_given=True, kinds=kinds)
        uid = snapshot_uid(loaded)
        if uid is None:
            raise DeschedError(f"{loaded.state.source}: no kube-system Namespace, so which cluster it is cannot be "
                               "told (kubectl get ns,nodes,pods,pdb -A -o yaml holds it): refused")
        check_cluster(planned, uid, loaded.state.source)
        return loaded
    conn = _connect(opts, planned)
    check_cluster(planned, read_cluster_uid(conn), conn.server)
    scope, scope_text = resolve_scope(opts, policy_given=True)
    return loading.Loaded(loading.read_cluster(conn, warn=warn, kinds=kinds), conn, scope, scope_text)


def _apply(opts: Options, planned: PlanFile, max_age: float, strict: bool, relocates: Callable[[str], bool],
           report: Report | None) -> int:
    if report:
        report.doc["plan"] = {"file": planned.name, "identity": planned.identity,
                              "candidates": len(planned.candidates)}
    opts = replace(opts, scope=ScopeOptions(all_namespaces=True))  # the plan names its pods; they may be anywhere
    limits = plan_limits(planned.doc)
    loaded = _read(opts, planned, set(SURGE_KINDS) if limits.surge else set())
    check_age(planned, max_age)
    conn, state = loaded.conn, loaded.state
    plan, left_out = recheck(planned.candidates, state, limits, relocates, plan_emptying(planned.doc))
    mode = "snapshot" if conn is None else \
        {"client": "dry-run=client", "server": "dry-run=server"}.get(opts.acting.dry_run, "evict")
    policy = Policy("Plan", planned.name, [], limits, None, {})
    nodes = list(state.nodes.values())
    placement = plan.placement if plan.candidates else None
    if report:
        describe_run(report, opts, policy, loaded, mode, plan)
        report.doc["policy"] = planned.identity.get("policy")
        report.doc["stale"] = left_out
    structured = opts.output not in ("table", "wide")
    for s in left_out:
        click.echo(f"{s['kind']}: {s['namespace']}/{s['pod']}: {s['why']}", err=True)
    if left_out and strict:
        raise StaleError(f"--strict: {len(left_out)} of {len(planned.candidates)} candidate(s) are stale or refused "
                         "(listed above): the plan is refused whole, nothing was evicted")
    paint = Painter(color_enabled())
    if not structured:
        pager.show(_plan_text(planned, plan, nodes, paint, opts, placement, len(left_out)), opts.pager)
    code = errors.STALE if left_out else errors.DONE
    acted = None
    if plan.candidates and mode in ("evict", "dry-run=server"):
        assert conn is not None
        acted = act(opts, conn, mode, policy, plan, placement, nodes, report, structured=structured, paint=paint)
        code = acted.code or code
        if report and report.doc["summary"]:
            report.doc["summary"]["exitCode"] = code  # the process's, stale candidates counted
    meta = {k: v for k, v in planned.doc.items() if k not in ("candidates", "nodes", "kept", "messages", "errors",
                                                               "evictions", "landings", "advice", "podMigrationJobs",
                                                               "stale")}
    meta["mode"] = mode
    if structured:
        results = acted.results if acted is not None and acted.refused is None else None
        doc = document(plan, nodes, meta, results, placement)
        if acted is not None and acted.runner is not None and results is not None:
            doc.update(acted.runner.evictor.document_sections(results))
        if acted is not None and acted.landings is not None:
            doc["landings"] = acted.landings
        doc["stale"] = left_out
        emit(doc, opts.output, opts.view)
    if acted is not None and acted.refused is not None:
        click.echo(acted.refused, err=True)
    if plan.candidates and mode == "snapshot" and not structured:
        click.echo(f"\n{SNAPSHOT_ONLY}")
    return code


def _plan_text(planned: PlanFile, plan: EvictionPlan, nodes: list[Node], paint: Painter, opts: Options,
               placement: Any, left_out: int) -> str:
    ident = planned.identity
    by = (ident.get("madeBy") or {}).get("username")
    made = f"made {ident.get('madeAt')}" + (f" by {by}" if by else "") + f" on {ident.get('server') or 'a snapshot'}"
    out = [paint(plan_summary(plan), None, bold=True), f"Plan:    {planned.name}, {made}",
           f"Checked: {len(planned.candidates)} planned, {len(plan.candidates)} still hold, {left_out} left out", ""]
    view = opts.view
    if plan.candidates:
        out.append(candidates_table(plan, wide=opts.output == "wide", placement=placement,
                                    headers=not view.no_headers, labels=view.show_labels, sort_key=view.sort_by))
    else:
        out.append(paint("No pods to evict.", None, bold=True))
    rows = node_rows(plan, nodes, placement)
    table, _hidden = nodes_table(rows, paint, all_nodes=opts.output == "wide", headers=not view.no_headers,
                                 bars=bar_view(view.bars, plan.targets, nodes))
    out += ["", paint(nodes_heading(rows), None, bold=True), table]
    return "\n".join(out)
