"""When the plan stops short of its goal (nodes still over a plugin's targets once the moves have landed, as the
estimate sees it): say so, and try the plugins' nearby args (Plugin.nearby_args) on the same state, in memory, to
propose the smallest change that would get there."""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from dataclasses import replace
from typing import Any

from kubectl_desched.framework.args import encode_args
from kubectl_desched.framework.placement import over_targets
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy import PluginUse, Policy
from kubectl_desched.framework.rehearsal import REHEARSE_LIMIT_PODS, Rehearsal, rehearse
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.framework.surge import SURGE_KINDS
from kubectl_desched.framework.types import Plugin
from kubectl_desched.model.objects import Node
from kubectl_desched.model.quantity import fmt_pct
from kubectl_desched.model.state import ClusterState
from kubectl_desched.ui.emptying import emptying_docs

# Each try is a whole plan: past this many pods the advice names what to try without trying it.
TRY_LIMIT_PODS = 20_000
MAX_TRIES = 8
MAX_ROUNDS = 3  # what the advice tries with --rounds: more is a reshuffle, not a nudge
MAX_PLANS = 12  # every try together: what the advice may cost, whatever the plugin offers


def over_after(plan: EvictionPlan, nodes: list[Node]) -> dict[str, list[str]]:
    """Plugin -> the nodes over its targets once every planned move has landed (requests, as estimated)."""
    placement = plan.placement
    out: dict[str, list[str]] = {}
    for plugin, limits in plan.targets.items():
        for n in nodes:
            used = placement.used.get(n.name, {}) if placement is not None else plan.state.requested(n.name)
            if over_targets(used, n, limits):
                out.setdefault(plugin, []).append(n.name)
    return out


def _names(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _with_args(policy: Policy, target: PluginUse, args: Any) -> Policy:
    profiles = [replace(p, balance=[replace(u, args=args) if u is target else u for u in p.balance],
                        deschedule=[replace(u, args=args) if u is target else u for u in p.deschedule])
                for p in policy.profiles]
    return replace(policy, profiles=profiles)


def _integral(value: Any) -> Any:
    """30.0 written as 30, as a person writes a percentage in a policy."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def _policy_patch(use: PluginUse, args: Any, raw: dict[str, Any], patched: bool) -> str | None:
    """Nearby args as the --policy-patch that makes them: beside --policy the plugin flags that nearby_args names are
    refused. None when the policy file has no pluginConfig entry for the plugin to patch. patched: a --policy-patch
    was given (raw is the patched policy), so the operations go after its own."""
    m = re.fullmatch(r"profiles\[(\d+)\]\.pluginConfig\[(\d+)\]\.args", use.path)
    if m is None:
        return None
    profile, entry = int(m.group(1)), int(m.group(2))
    at = f"/profiles/{profile}/pluginConfig/{entry}/args"
    before, after = encode_args(use.args), _integral(encode_args(args))
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    if raw["profiles"][profile]["pluginConfig"][entry].get("args") is None:
        ops = [{"op": "add", "path": at, "value": changed}]
    else:  # add replaces a member that is there, and adds one that is not
        ops = [{"op": "add", "path": f"{at}/{k}", "value": v} for k, v in changed.items()]
    if patched:
        return f"--policy-patch with {', '.join(map(json.dumps, ops))} after its operations"
    return f"--policy-patch {shlex.quote(json.dumps(ops))}"


def _tries(policy: Policy, use: PluginUse, scope: Scope, wide: Scope | None,
           only_wide: bool) -> list[tuple[str, Policy, Scope]]:
    """The policy as given (more rounds may be all it takes), then on every namespace (wide: -A's scope, when the
    namespaces in scope leave pods on the nodes out), then with each of the plugin's nearby args, on every namespace
    when only_wide (no pod of those in scope is on the nodes: no args can move one). None for a plugin with no nearby
    args: it cannot say its goal can be tried in memory (actual usage, say)."""
    factory = use.spec.factory
    variants = factory.nearby_args(use.args) if isinstance(factory, type) and issubclass(factory, Plugin) else []
    if not variants:
        return []
    out = [("", policy, scope)] + ([("-A", policy, wide)] if wide is not None else [])
    for flags, args in variants[:MAX_TRIES]:
        if policy.from_file:
            flags = _policy_patch(use, args, policy.raw, policy.patched) or ""
            if not flags:
                continue
        if wide is not None and only_wide:
            out.append((f"-A {flags}", _with_args(policy, use, args), wide))
        else:
            out.append((flags, _with_args(policy, use, args), scope))
    return out


def _namespaces_on(scope: Scope, state: ClusterState, over: list[str]) -> tuple[Counter[str], int]:
    """The pods on these nodes, by namespace, that -A would make candidates (those of the namespaces not in scope),
    and how many of their pods are in scope now."""
    outside: Counter[str] = Counter()
    inside = 0
    if scope.namespaces is None:
        return outside, -1
    for p in (p for n in over for p in state.pods_on_node(n) if not p.is_terminal):
        if p.namespace in scope.namespaces:
            inside += 1
        elif p.namespace not in scope.excluded_namespaces:
            outside[p.namespace] += 1
    return outside, inside


def _try(policy: Policy, state: ClusterState, scope: Scope, plan: EvictionPlan | None, nodes: list[Node],
         plugin: str, budget: int) -> Rehearsal:
    """Rounds in memory on a small cluster, as many as the budget of plans allows; one plan on a larger one."""
    def left(p: EvictionPlan) -> list[str]:
        return over_after(p, nodes).get(plugin, [])

    rounds = min(MAX_ROUNDS, budget + (plan is not None)) if len(state.pods) <= REHEARSE_LIMIT_PODS else 1
    return rehearse(policy, state, scope, left, rounds, first=plan)


def advise(policy: Policy, state: ClusterState, scope: Scope, plan: EvictionPlan,
           nodes: list[Node], rounds: int = 1) -> list[dict[str, Any]]:
    """One entry per plugin that leaves nodes over its targets: which, and the smallest change that would help,
    if any: more rounds of the same policy first, then every namespace, then nearby args (in as few rounds as they
    take). rounds: those the command runs from this plan on; a suggestion does not name them again."""
    out = []
    for plugin, left in sorted(over_after(plan, nodes).items()):
        limits = plan.targets[plugin]
        entry: dict[str, Any] = {"plugin": plugin, "overAfter": left,
                                 "targets": {r: v for r, v in limits.items()}, "tried": [], "suggestion": None}
        outside, inside = _namespaces_on(scope, state, left)
        if outside:
            entry["outsideScope"] = dict(outside.most_common())
        wide = replace(scope, namespaces=None) if outside else None
        uses = [u for p in policy.profiles for u in (*p.balance, *p.deschedule) if u.spec.name == plugin]
        tries = _tries(policy, uses[0], scope, wide, only_wide=not inside) if uses else []
        if tries and len(state.pods) <= TRY_LIMIT_PODS:
            budget = MAX_PLANS
            for flags, trial, where in tries:
                if budget <= 0:
                    break
                r = _try(trial, state, where, plan if not flags else None, nodes, plugin, budget)
                budget -= r.plans
                if not flags and r.rounds <= 1:
                    continue  # the policy as given, in one round: this plan
                more = f"--rounds {r.rounds}" if r.rounds > max(rounds, 1) else ""
                entry["tried"].append({"flags": " ".join(f for f in (flags, more) if f),
                                       "argsChanged": trial is not policy, "scopeChanged": where is not scope,
                                       "rounds": r.rounds, "moves": r.moves, "overAfter": r.left})
                if not r.left:
                    break
            if entry["tried"]:
                best = min(entry["tried"], key=lambda t: (len(t["overAfter"]), t["argsChanged"] or t["scopeChanged"],
                                                          t["rounds"], t["moves"]))
                if len(best["overAfter"]) < len(left) and best["moves"]:
                    entry["suggestion"] = best
        elif tries[1:]:
            flags, trial, where = tries[1]
            entry["suggestion"] = {"flags": flags, "argsChanged": trial is not policy,
                                   "scopeChanged": where is not scope, "rounds": None, "moves": None,
                                   "overAfter": None}
        futile = [(p, why) for p, name, why in plan.kept_futile.values() if name == plugin]
        entry["keptFutile"] = len(futile)
        if futile:  # what the moves would have done, and the explain that shows it, as this command ran the plugin
            entry["futileWhy"] = _futile_kinds([why for _p, why in futile])
            entry["explain"] = f"explain node {futile[0][0].node_name} " + (
                f"--policy {policy.source}" if policy.from_file else f"--plugin {plugin}")
        out.append(entry)
    return out + _first_steps(policy, state, scope, plan)


def _first_steps(policy: Policy, state: ClusterState, scope: Scope, plan: EvictionPlan) -> list[dict[str, Any]]:
    """The moves a step before the eviction would make possible: --cordon where a plugin that empties nodes had
    its moves kept as futile (tried in memory), --surge where budgets kept ReplicaSet pods (named, not tried:
    its checks need the Deployments, which a run without it does not read)."""
    out: list[dict[str, Any]] = []
    emptying = set(policy.emptying_plugins())
    futile = [name for _p, name, _w in plan.kept_futile.values() if name in emptying]
    if futile and not policy.limits.cordon:
        entry: dict[str, Any] = {"plugin": futile[0], "step": "--cordon", "keptFutile": len(futile), "moves": None,
                                 "emptied": None}
        if len(state.pods) <= TRY_LIMIT_PODS:
            tried = run(replace(policy, limits=replace(policy.limits, cordon=True)), state, scope)
            entry["moves"] = len(tried.candidates)
            entry["emptied"] = [d["node"] for d in emptying_docs(tried) if d["empty"] and d["moved"]]
        if entry["moves"] != 0:
            out.append(entry)
    guarded = [p for p, _name, _w in plan.kept_by_pdb.values() if p.controller and p.controller.kind == "ReplicaSet"]
    if guarded and not policy.limits.surge:
        entry = {"plugin": plan.kept_by_pdb[id(guarded[0])][1], "step": "--surge", "keptByPDB": len(guarded),
                 "example": guarded[0].key, "moves": None}
        if SURGE_KINDS - {"HorizontalPodAutoscaler"} <= state.extra.keys() and len(state.pods) <= TRY_LIMIT_PODS:
            tried = run(replace(policy, limits=replace(policy.limits, surge=True)), state, scope)  # a snapshot's
            entry["moves"] = sum(1 for c in tried.candidates if c.method == "surge")
        if entry["moves"] != 0:
            out.append(entry)
    return out


def advice_lines(advice: list[dict[str, Any]]) -> list[str]:
    lines = []
    for a in advice:
        if "step" in a:
            lines.append(_first_step_line(a))
            continue
        targets = ", ".join(f"{r} {fmt_pct(v)}" for r, v in a["targets"].items())
        text = f"{_names(a['overAfter'])} stay{'s' if len(a['overAfter']) == 1 else ''} over {a['plugin']}'s " \
               f"targets ({targets}) after this plan"
        s = a["suggestion"]
        outside = a.get("outsideScope") if s is not None and s["scopeChanged"] else None  # why -A, when it is
        if outside:
            by = ", ".join(f"{ns} {n}" for ns, n in list(outside.items())[:4]) + (", ..." if len(outside) > 4 else "")
            text += f": {sum(outside.values())} of their pods are in other namespaces ({by})"
        if s is not None and s["moves"] is None:
            text += f"; {s['flags']} may help (not tried: a large cluster)"
        elif s is not None:
            left = "every node within its targets" if not s["overAfter"] else \
                f"{_names(s['overAfter'])} over"
            within = f" in {s['rounds']} rounds" if s["rounds"] > 1 else ""
            what = s["flags"] or "the --rounds given"  # those given are enough: say so, not what to add
            text += f"{';' if outside else ':'} {what} would move {s['moves']} pod(s){within} and leave {left}"
        elif a["tried"]:
            tried = ", ".join(t["flags"] or "the --rounds given" for t in a["tried"][:2])
            text += f": none of {tried}... gets closer"
        lines.append(text)
        if a["keptFutile"]:
            lines.append(f"{a['keptFutile']} pod(s) {a['plugin']} picked were kept because their moves would change "
                         f"nothing ({a['futileWhy']}): {a['explain']} says why")
    return lines


# What a futile move's reason (plan.futility) says it would have done, in the advice's words.
_FUTILE_KINDS = (("would land back", "land back on their node"), ("is leaving", "swap with a pod of their workload"),
                 ("putting it over", "put another node over the targets"), ("stay Pending", "stay Pending"),
                 (", also ", "land on a node in the same class"))


def _futile_kinds(whys: list[str]) -> str:
    counts: dict[str, int] = {}
    for why in whys:
        kind = next((said for key, said in _FUTILE_KINDS if key in why), "break the plugin's rule where they land")
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{n} would {kind}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _first_step_line(a: dict[str, Any]) -> str:
    if a["step"] == "--cordon":
        text = (f"{a['keptFutile']} pod(s) {a['plugin']} picked were kept because their replacements would land "
                "back where it empties nodes")
        if a["moves"] is None:
            return text + ": --cordon cordons those nodes first and may help (not tried: a large cluster)"
        emptied = f" and leave {len(a['emptied'])} node(s) empty ({_names(a['emptied'])})" if a["emptied"] else ""
        return text + f": --cordon cordons them first and would move {a['moves']} pod(s){emptied}"
    namespace, name = a["example"].split("/")
    text = f"{a['keptByPDB']} ReplicaSet pod(s) were kept because a PodDisruptionBudget would refuse them: "
    if a["moves"] is not None:
        return text + (f"--surge would move {a['moves']} pod(s) replacement first, scaling each Deployment up by one "
                       "until the new pod is Ready, so no ready count drops")
    return text + ("--surge may move a Deployment's pods replacement first, no ready count dropping "
                   f"(explain pod {name} -n {namespace} says whether)")
