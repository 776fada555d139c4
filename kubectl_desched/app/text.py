"""What the commands print as text: warnings and errors on stderr, the plan, the results' summary line."""

from __future__ import annotations

from collections.abc import Callable

import click

from kubectl_desched.app.options import OutputOptions
from kubectl_desched.evictors.base import EvictionResult
from kubectl_desched.framework.placement import Placement
from kubectl_desched.framework.plan import EvictionPlan
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.sanitize import LINE_LIMIT, one_line
from kubectl_desched.term.color import Painter
from kubectl_desched.ui.emptying import emptying_docs, emptying_lines
from kubectl_desched.ui.measurements import measured_lines
from kubectl_desched.ui.node_bars import bar_view
from kubectl_desched.ui.plan_view import (
    candidates_table,
    node_rows,
    nodes_heading,
    nodes_table,
    plan_summary,
)

SNAPSHOT_ONLY = "The state comes from a file: nothing can be evicted. Run against the cluster to evict."


def warn(message: str) -> None:
    click.echo(f"warning: {one_line(message, LINE_LIMIT)}", err=True)


def error(message: object) -> None:
    """An `error:` line that does not end the run (a plan error); one printable line whatever it quotes."""
    click.echo(f"error: {one_line(message, LINE_LIMIT)}", err=True)


# Module-level stand-ins that import on first call (and that tests can replace).


def live_line(line: str | None, say: Callable[[str], None]) -> None:
    if line is not None:
        say(line)


def results_summary(results: list[EvictionResult], interrupted: bool = False, by: str | None = None) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    line = f"{len(results)} confirmed: " + ", ".join(f"{v} {k}" for k, v in counts.items())
    if interrupted:
        said = "interrupted" if by in (None, "Ctrl-C") else f"interrupted by {by}"
        line = f"{said}: {_what_is_known(results)}. " + line
    return line


def _what_is_known(results: list[EvictionResult]) -> str:
    """After an interrupt, what each pod is known to be: "possibly" only where no answer says."""
    known = {"evicted": 0, "moved replacement first": 0, "possibly evicted (no answer)": 0,
             "still migrating (Koordinator carries on)": 0, "not evicted": 0, "not attempted": 0}
    for r in results:
        if r.surge and r.gone:
            known["moved replacement first"] += 1
        elif r.outcome in ("evicted", "succeeded"):
            known["evicted"] += 1
        elif r.outcome == "unknown":  # in flight when abandoned, or its answer lost
            known["possibly evicted (no answer)"] += 1
        elif r.disruptive:  # a PodMigrationJob created and not finished
            known["still migrating (Koordinator carries on)"] += 1
        elif r.outcome == "interrupted" and not r.attempts:
            known["not attempted"] += 1
        else:
            known["not evicted"] += 1
    return ", ".join(f"{n} {what}" for what, n in known.items() if n) or "nothing confirmed"


def plan_text(plan: EvictionPlan, policy: Policy, source: str, scope: str, nodes: list, paint: Painter, wide: bool,
               placement: Placement | None = None, view: OutputOptions | None = None,
               advice: list[str] | None = None) -> str:
    view = view or OutputOptions()
    plugins = ", ".join(dict.fromkeys(policy.plugin_names())) or "none"
    out = [paint(plan_summary(plan), None, bold=True),
           f"Source:  {source}", f"Scope:   {scope}", f"Plugins: {plugins}  ({policy.source})",
           *measured_lines(plan.cluster), ""]
    if plan.candidates:
        out.append(paint(f"{len(plan.candidates)} candidate pod(s):", None, bold=True))
        out.append(candidates_table(plan, wide=wide, placement=placement, headers=not view.no_headers,
                                    labels=view.show_labels, sort_key=view.sort_by))
    else:
        out.append(paint("No pods to evict.", None, bold=True))
    out += [f"  {plugin}: {message}" for plugin, message in plan.messages]
    out.append("")
    rows = node_rows(plan, nodes, placement)
    table, hidden = nodes_table(rows, paint, all_nodes=wide, headers=not view.no_headers,
                                bars=bar_view(view.bars, plan.targets, nodes))
    out += [paint(nodes_heading(rows), None, bold=True), table]
    if hidden:
        out.append(f"({hidden} other node(s) appropriately utilized and unchanged; -o wide lists all)")
    if placement is not None:
        out.append("After the evictions the scheduler places the replacements: LAND and the after-columns are an "
                   "estimate (-o wide: DESTINATION).")
        out += [paint(f"warning: {w}", "yellow") for row in rows for w in row.get("warnings", ())]
    out += emptying_lines(emptying_docs(plan))
    if advice:
        out.append(paint("What would help:", None, bold=True))
        out += [f"  {line}" for line in advice]
    return "\n".join(out)
