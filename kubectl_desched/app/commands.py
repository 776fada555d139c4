"""The commands' flow: source -> state -> plan -> render -> confirm -> act, and explain."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import click

from kubectl_desched import errors, interrupts
from kubectl_desched.app.advice import advice_lines, advise
from kubectl_desched.app.documents import describe_run, emit, plan_meta, write_report
from kubectl_desched.app.evicting import act
from kubectl_desched.app.loading import Loaded, load
from kubectl_desched.app.options import Options
from kubectl_desched.app.scope import default_namespace
from kubectl_desched.app.text import SNAPSHOT_ONLY, error, plan_text, warn
from kubectl_desched.errors import DeschedError, UsageError
from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.framework.failures import PluginFailed
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.framework.runner import considered_nodes, filters_read_other_nodes, needs_whole_cluster, run
from kubectl_desched.framework.surge import SURGE_KINDS
from kubectl_desched.interrupts import Interrupted
from kubectl_desched.model.quantity import fmt_pct
from kubectl_desched.sanitize import LINE_LIMIT, one_line
from kubectl_desched.term import pager
from kubectl_desched.term.color import Painter, color_enabled
from kubectl_desched.ui.emptying import node_note
from kubectl_desched.ui.explain import explain_node_doc, explain_node_text, explain_pod_doc, explain_pod_text
from kubectl_desched.ui.formats import is_text
from kubectl_desched.ui.plan_view import document, node_rows
from kubectl_desched.ui.report import Report

if TYPE_CHECKING:
    from kubectl_desched.evictors.execute import EvictionRunner

EXIT_NOT_CONFIRMED = errors.NOT_CONFIRMED
EXIT_INTERRUPTED = errors.INTERRUPTED  # Ctrl-C; SIGTERM and SIGHUP give 128+N as well (143, 129)


def _mode(opts: Options, loaded: Loaded) -> str:
    if loaded.conn is None:
        return "snapshot"
    return {"client": "dry-run=client", "server": "dry-run=server"}.get(opts.acting.dry_run, "evict")


def plan_and_act(opts: Options, policy: Policy, *, point: str | None = None) -> int:
    """The balance / deschedule / run commands. Returns the exit code. With --report the record is written
    whatever happens after the path was checked (success, error, refusal, Ctrl-C, SIGTERM, SIGHUP): SIGTERM and
    SIGHUP raise Interrupted as Ctrl-C does instead of killing the process unrecorded."""
    report = Report(opts.acting.report) if opts.acting.report else None
    return recorded(report, lambda: _plan_and_act(opts, policy, point, report))


def recorded(report: Report | None, body: Callable[[], int]) -> int:
    """body() with signals raising, and its --report written whatever ends it, with the error or interrupt."""
    with interrupts.raising():
        try:
            code = body()
            if report:
                report.finish(code)
            return code
        except DeschedError as e:
            if report:
                report.doc["error"] = one_line(e, LINE_LIMIT)  # as the error line says it
                report.finish(e.exit_code)
            raise
        except (KeyboardInterrupt, Interrupted) as e:
            if report:
                by = e.name if isinstance(e, Interrupted) else "Ctrl-C"
                report.doc["error"] = f"interrupted by {by} " + ("after acting (see evictions)" if report.doc["summary"]
                                                                 else "before any eviction was sent")
                # the exit code the process will really have
                report.finish(e.exit_code if isinstance(e, Interrupted) else EXIT_INTERRUPTED, by)
            raise
        finally:
            if report:
                with interrupts.deferred():  # a signal now waits until the report is on disk
                    write_report(report)


@dataclass
class _Round:
    """What one round of plan, confirm, evict and wait came to."""

    code: int
    planned: int = 0
    evicted: int = 0
    measure: tuple[int, float] | None = None  # nodes over target, cpu spread (points) as the round found them
    landings: dict[str, Any] | None = None
    last: bool = False  # nothing more can follow (not confirmed, an error, a snapshot, a dry run)
    stopped: bool = False  # planned, but no better than the round before: nothing evicted


def _plan_and_act(opts: Options, policy: Policy, point: str | None, report: Report | None) -> int:
    for w in policy.warnings:
        warn(w)
    if point is not None:  # a copy: the caller's policy stays as given
        only_balance = point == "balance"
        policy = replace(policy, profiles=[replace(p, deschedule=[]) if only_balance else replace(p, balance=[])
                                           for p in policy.profiles])
        if not any(p.balance or p.deschedule for p in policy.profiles):
            raise UsageError(f"the policy enables no {point} plugin")
    rounds = opts.acting.rounds
    done: list[_Round] = []
    for number in range(1, rounds + 1):
        previous = done[-1].measure if done else None
        r = _one_round(opts, policy, report, number if rounds > 1 else 0, previous)
        done.append(r)
        if rounds > 1:
            click.echo(_round_line(number, r), err=True)
            if report:
                report.doc.setdefault("rounds", []).append(
                    {"round": number, "planned": r.planned, "evicted": r.evicted, "exitCode": r.code,
                     "nodesOverTarget": r.measure[0] if r.measure else None,
                     "cpuSpread": r.measure[1] if r.measure else None, "landings": r.landings})
        if r.last or r.code != 0 or not r.planned or not r.evicted:
            break
    else:
        if rounds > 1:  # the rounds ran out after moving pods: read once more to say where they left the nodes
            click.echo(_after_rounds(opts, policy, rounds), err=True)
    return done[-1].code if len(done) == 1 else max(r.code for r in done)


def _read_and_plan(opts: Options, policy: Policy) -> tuple[Loaded, EvictionPlan]:
    """The cluster as the policy needs it read, and the policy's plan on it: what each round starts with."""
    loaded = load(opts, policy_given=policy.from_file, kinds=policy.required_kinds(), policy=policy,
                  all_pods=filters_read_other_nodes(policy) is not None)
    return loaded, _run(opts, policy, loaded.state, loaded.scope)


def _after_rounds(opts: Options, policy: Policy, rounds: int) -> str:
    loaded, plan = _read_and_plan(opts, policy)
    over, spread = _measure(plan, considered_nodes(plan.state, policy, loaded.scope))
    if not over:
        return f"after round {rounds}: no node over target, cpu spread {fmt_pct(spread)} (read again)"
    more = f"; the next plan would move {len(plan.candidates)} pod(s)" if plan.candidates else \
        "; the next plan is empty"
    return f"after round {rounds}: {over} node(s) over target, cpu spread {fmt_pct(spread)} (read again){more}"


def _round_line(number: int, r: _Round) -> str:
    over, spread = r.measure or (0, 0.0)
    where = f"{over} node(s) over target, cpu spread {fmt_pct(spread)}"
    if not over and not r.planned:
        return f"round {number}: no node over target, cpu spread {fmt_pct(spread)}; nothing left to move"
    if r.stopped:
        return f"round {number}: stopped: {where}, no better than the round before"
    landed = ""
    if r.landings:
        landed = f"; {r.landings['asEstimated']} of {r.landings['waitedFor']} landed as estimated"
    return f"round {number}: {where}; {r.planned} planned, {r.evicted} evicted{landed}"


def _improved(before: tuple[int, float], now: tuple[int, float] | None) -> bool:
    return now is not None and (now[0] < before[0] or (now[0] == before[0] and now[1] < before[1] - 0.5))


def _measure(plan: EvictionPlan, nodes: list[Any]) -> tuple[int, float]:
    """Nodes a plugin classes over its targets, and the spread of cpu requests over the nodes in scope, now."""
    over = sum(1 for n in nodes if any(r.klass == "over-utilized" for r in plan.node_reports.get(n.name, ())))
    cpu = [row["now"]["cpu"] for row in node_rows(plan, nodes)]
    return over, round(max(cpu) - min(cpu), 2) if cpu else 0.0


def _one_round(opts: Options, policy: Policy, report: Report | None, number: int,
               previous: tuple[int, float] | None) -> _Round:
    loaded, plan = _read_and_plan(opts, policy)
    nodes = considered_nodes(plan.state, policy, loaded.scope)
    placement = plan.placement if plan.candidates else None  # worked out move by move as the plan was made
    measure = _measure(plan, nodes) if number else None  # only rounds compare it: 0.15 s at 5,000 nodes
    mode = _mode(opts, loaded)
    if report:
        describe_run(report, opts, policy, loaded, mode, plan)
    paint = Painter(color_enabled())
    structured = not is_text(opts.output)  # one document on stdout (json, yaml, name, jsonpath, ...)
    if number > 1 and previous is not None and plan.candidates and not _improved(previous, measure):
        return _Round(0, len(plan.candidates), 0, measure, last=True, stopped=True)  # rounds stopped paying off
    advice = advise(policy, loaded.state, loaded.scope, plan, nodes, rounds=opts.acting.rounds - max(number, 1) + 1)
    if not structured:
        if number:
            click.echo(paint(f"Round {number}", None, bold=True))
        pager.show(plan_text(plan, policy, loaded.state.source, loaded.scope_text, nodes, paint,
                             opts.output == "wide", placement, opts.view, advice_lines(advice)), opts.pager)
    _errors(plan, opts)

    results: list[EvictionResult] | None = None
    runner: EvictionRunner | None = None
    landings: dict[str, Any] | None = None
    code = 1 if plan.errors else 0
    if plan.candidates and mode in ("evict", "dry-run=server"):
        assert loaded.conn is not None
        acted = act(opts, loaded.conn, mode, policy, plan, placement, nodes, report, structured=structured,
                    paint=paint)
        if acted.refused is not None:
            if structured:
                emit(document(plan, nodes, plan_meta(policy, loaded, mode), placement=placement) | {"advice": advice},
                     opts.output, opts.view)
            click.echo(acted.refused, err=True)
            return _Round(EXIT_NOT_CONFIRMED, len(plan.candidates), 0, measure, last=True)
        results, runner, landings = acted.results, acted.runner, acted.landings
        code = acted.code or code
    elif plan.candidates and mode == "snapshot" and not structured:
        click.echo(f"\n{SNAPSHOT_ONLY}")
    if structured:
        doc = document(plan, nodes, plan_meta(policy, loaded, mode), results, placement, lazy=opts.output == "json")
        if runner is not None and results is not None:
            doc.update(runner.evictor.document_sections(results))
        if landings is not None:
            doc["landings"] = landings
        doc["advice"] = advice
        emit(doc, opts.output, opts.view)
    evicted = sum(1 for r in results or () if r.gone)
    return _Round(code, len(plan.candidates), evicted, measure, landings, last=mode != "evict")


def explain_pod(opts: Options, policy: Policy, pod_name: str) -> int:
    """-n only says where the pod is: the plan covers every namespace, as `balance -A` would."""
    for w in policy.warnings:
        warn(w)
    namespace = opts.scope.namespaces[0] if opts.scope.namespaces else default_namespace(opts)
    cluster_wide = replace(opts, scope=replace(opts.scope, namespaces=(), all_namespaces=True))
    # with what --surge reads: whether the pod could move replacement first is part of its answer
    loaded = load(cluster_wide, policy_given=True, kinds=policy.required_kinds() | SURGE_KINDS, policy=policy)
    pod = loaded.state.find_pod(namespace, pod_name)
    if pod is None:
        raise DeschedError(f'pod "{pod_name}" not found in namespace {namespace}{_elsewhere(loaded, pod_name)}')
    plan = _run(opts, policy, loaded.state, loaded.scope)
    doc = explain_pod_doc(plan, pod, list(dict.fromkeys(policy.plugin_names())))
    return _show_explanation(plan, doc, explain_pod_text, opts)


def _elsewhere(loaded: Loaded, pod_name: str) -> str:
    """Where pods of that name are: the cluster was read whole, so the -n to give costs nothing to find."""
    found = sorted({p.namespace for p in loaded.state.pods if p.name == pod_name})
    if not found:
        return ""
    if len(found) == 1:
        return f"; it is in namespace {found[0]}: -n {found[0]}"
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return f"; pods of that name are in namespaces {shown}: give -n NAMESPACE"


def explain_node(opts: Options, policy: Policy, node_name: str, *, full: bool = False) -> int:
    """Live, the node and its pods are read alone unless --full or the policy's filters or limits need every
    node: plugins that need the other nodes are then estimated or listed as not evaluated. The node is the scope:
    its pods in every namespace unless -n narrows them (a node's pods belong to many namespaces)."""
    for w in policy.warnings:
        warn(w)
    narrowed = opts.scope.namespaces
    if not narrowed:
        opts = replace(opts, scope=replace(opts.scope, all_namespaces=True))
    # --cordon and --surge judge the node's moves against the whole cluster (what lands where, who can surge)
    one_node = not full and not opts.access.from_files and needs_whole_cluster(policy) is None and \
        not policy.limits.cordon and not policy.limits.surge
    loaded = load(opts, policy_given=policy.from_file, kinds=policy.required_kinds(), policy=policy,
                  one_node=node_name if one_node else None, all_pods=filters_read_other_nodes(policy) is not None)
    node = loaded.state.nodes.get(node_name)
    if node is None:
        raise DeschedError(f'node "{node_name}" not found')
    plan = _run(opts, policy, loaded.state, loaded.scope, one_node=one_node)
    considered = node in considered_nodes(plan.state, policy, loaded.scope)
    doc = explain_node_doc(plan, node, considered, narrowed)
    doc["emptying"] = node_note(plan, node_name)
    return _show_explanation(plan, doc, explain_node_text, opts)


def _show_explanation(plan: EvictionPlan, doc: dict[str, Any], as_text: Callable[[dict[str, Any]], str],
                      opts: Options) -> int:
    _errors(plan, opts)
    if not is_text(opts.output):
        emit(doc, opts.output, opts.view)
    else:
        pager.show(as_text(doc), opts.pager)
    return 1 if plan.errors else 0


TRACE_LEVEL = 6  # -v at which a failing plugin's traceback is shown, as kubectl's -v 6 shows each request


def _run(opts: Options, *args: Any, **kw: Any) -> EvictionPlan:
    """The plan; a plugin that cannot start ends the command, with its traceback first at -v 6 and above."""
    try:
        return run(*args, **kw)
    except PluginFailed as e:
        if opts.access.verbosity >= TRACE_LEVEL:
            click.echo(e.trace, err=True)
        raise


def _errors(plan: EvictionPlan, opts: Options) -> None:
    """The plan's error lines, each after its traceback at -v 6 and above."""
    for e in plan.errors:
        if opts.access.verbosity >= TRACE_LEVEL and e in plan.traces:
            click.echo(plan.traces[e], err=True)
        error(e)
