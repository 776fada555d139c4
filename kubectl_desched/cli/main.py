"""`kubectl desched`: parse the option groups, build the policy, hand over to app, render what it returns.
Errors end as one line on stderr."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from kubectl_desched import __version__, app
from kubectl_desched.cli import completers
from kubectl_desched.cli.checks import name, pod_reference
from kubectl_desched.cli.groups import acting, cluster_access, options, output, scope
from kubectl_desched.cli.help import command
from kubectl_desched.cli.plugin_flags import PluginFlags, PluginGroup, build_policy, default_plugins, registry
from kubectl_desched.errors import DeschedError, UsageError
from kubectl_desched.interrupts import Interrupted, leave
from kubectl_desched.model.names import dns1123_subdomain_problem
from kubectl_desched.sanitize import LINE_LIMIT, one_line

if TYPE_CHECKING:
    from kubectl_desched.app.options import ActOptions, ClusterAccess, OutputOptions, ScopeOptions


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
def cli() -> None:
    """Interactive descheduling: preview which pods the descheduler's plugins would move and why,
    then evict them through the Eviction API after you confirm."""


@command(cli, examples=[
    ("Preview LowNodeUtilization in every namespace, then choose which pods to evict", "kubectl desched balance -A"),
    ("Plan only, with other thresholds", "kubectl desched balance -A --dry-run --thresholds cpu=30 "
                                         "--target-thresholds cpu=70"),
    ("Empty under-utilized nodes before scaling down", "kubectl desched balance -A --plugin HighNodeUtilization"),
    ("Evict without asking, two at a time", "kubectl desched balance -n shop --yes --max-in-flight 2")])
@cluster_access
@scope
@PluginGroup(("balance",))
@acting
@output
def balance(access: ClusterAccess, scope: ScopeOptions, flags: PluginFlags, acting: ActOptions,
            output: OutputOptions) -> None:
    """Run Balance plugins (LowNodeUtilization unless --plugin or --policy says otherwise)."""
    plugins = registry(click.get_current_context())
    policy = build_policy(plugins, flags, "balance", default_plugins(plugins, "balance"), only_point=True)
    sys.exit(app.plan_and_act(options(access, scope, output, acting), policy,
                              point="balance" if flags.policy_file else None))


@command(cli, examples=[
    ("Preview the in-tree Deschedule plugins in namespace shop", "kubectl desched deschedule -n shop"),
    ("Pods older than a week, at most 5", "kubectl desched deschedule -A --plugin PodLifeTime --max-pod-lifetime "
                                          "168h --max-pods 5"),
    ("Send the evictions as a server dry run: checks PDBs and RBAC, changes nothing",
     "kubectl desched deschedule -A --dry-run=server --yes")])
@cluster_access
@scope
@PluginGroup(("deschedule",))
@acting
@output
def deschedule(access: ClusterAccess, scope: ScopeOptions, flags: PluginFlags, acting: ActOptions,
               output: OutputOptions) -> None:
    """Run Deschedule plugins (the in-tree ones unless --plugin or --policy says otherwise)."""
    plugins = registry(click.get_current_context())
    policy = build_policy(plugins, flags, "deschedule", default_plugins(plugins, "deschedule"), only_point=True)
    sys.exit(app.plan_and_act(options(access, scope, output, acting), policy,
                              point="deschedule" if flags.policy_file else None))


@command(cli, "run", examples=[
    ("A descheduler policy, once", "kubectl desched run --policy policy.yaml"),
    ("A koord-descheduler configuration with one field changed", "kubectl desched run --policy koord.yaml "
     "--policy-patch '[{\"op\": \"replace\", \"path\": \"/profiles/0/name\", \"value\": \"x\"}]'")])
@cluster_access
@scope
@PluginGroup(())
@acting
@output
def run_policy(access: ClusterAccess, scope: ScopeOptions, flags: PluginFlags, acting: ActOptions,
               output: OutputOptions) -> None:
    """Run a whole policy once: every profile's Deschedule plugins, then its Balance plugins."""
    if not flags.policy_file:
        raise UsageError("run needs --policy FILE (balance and deschedule run plugins from flags)")
    policy = build_policy(registry(click.get_current_context()), flags, "balance", [])
    sys.exit(app.plan_and_act(options(access, scope, output, acting), policy))


@command(cli, "apply", examples=[
    ("Review a plan, then apply exactly it", "kubectl desched balance -A -o json > plan.json\n"
                                            "kubectl desched apply -f plan.json"),
    ("In a pipeline: refuse the whole plan if any pod changed since", "kubectl desched apply -f plan.json --yes "
                                                                      "--strict --report applied.json"),
    ("Check a snapshot's plan against the snapshot (nothing is evicted)",
     "kubectl desched apply -f plan.json --from-file examples/demo-cluster.yaml")])
@click.option("-f", "--filename", "plan_file", required=True, metavar="PLAN", shell_complete=completers.files,
              help="The plan document (balance, deschedule or run with -o json or -o yaml); - for stdin.")
@click.option("--max-age", default="1h", show_default=True, metavar="DURATION",
              help="Refuse a plan made longer ago than this.")
@click.option("--strict", is_flag=True, help="Refuse the whole plan when any candidate is stale or refused, "
                                             "instead of leaving those out.")
@cluster_access
@acting
@output
def apply_plan(plan_file: str, max_age: str, strict: bool, access: ClusterAccess, acting: ActOptions,
               output: OutputOptions) -> None:
    """Apply a reviewed plan: check it against the cluster now (same cluster, age, each pod unchanged, budgets
    and estimate again), leave out what went stale, then confirm and evict as balance does."""
    from kubectl_desched.app.apply import apply_plan as apply
    from kubectl_desched.app.options import ScopeOptions
    from kubectl_desched.cli.checks import duration, file_name

    plan_file = file_name("-f/--filename", plan_file) or plan_file
    age = duration("--max-age", max_age) or 0.0
    if age <= 0:
        raise UsageError("--max-age: must be more than 0 (a plan is checked against the cluster as it is now)")
    if acting.rounds != 1:
        raise UsageError("--rounds does not apply to apply: a plan document is one round (make a new plan instead)")
    plugins = registry(click.get_current_context())

    def relocates(name: str) -> bool:
        return name in plugins and bool(getattr(plugins.get(name).factory, "relocates", False))

    sys.exit(apply(options(access, ScopeOptions(), output, acting), plan_file, max_age=age, strict=strict,
                   relocates=relocates))


@cli.command("report")
@click.argument("report_file", metavar="FILE", shell_complete=completers.files)
def show_report(report_file: str) -> None:
    """Print a --report file as tables: per pod planned, evicted or why not, estimated and actual landing; the
    nodes' utilization before and after."""
    from kubectl_desched.app.report_view import show

    sys.exit(show(report_file))


EXPLAIN_PLUGINS = PluginGroup(("deschedule", "balance"))


@cli.group()
def explain() -> None:
    """Explain the verdicts on a node's pods, or on one pod."""


@command(explain, "pod", examples=[("Why is this pod kept or evicted?", "kubectl desched explain pod -n shop web-1"),
                                   ("Name it as kubectl does", "kubectl desched explain pod shop/web-1")])
@click.argument("pod_name", metavar="POD", shell_complete=completers.pods)
@cluster_access
@scope
@EXPLAIN_PLUGINS
@output
def explain_pod(pod_name: str, access: ClusterAccess, scope: ScopeOptions, flags: PluginFlags,
                output: OutputOptions) -> None:
    """The pod against every filter and enabled plugin, and where its replacement would likely land."""
    namespace, pod_name = pod_reference(pod_name, scope.namespaces)
    if namespace is not None:
        scope = replace(scope, namespaces=(namespace,))
    plugins = registry(click.get_current_context())
    policy = build_policy(plugins, flags, "balance", default_plugins(plugins, "explain"))
    sys.exit(app.explain_pod(options(access, scope, output), policy, pod_name))


@command(explain, "node", examples=[
    ("The node's class and every pod's verdict, reading only that node", "kubectl desched explain node worker-a1"),
    ("The same against other thresholds, reading the whole cluster",
     "kubectl desched explain node worker-a1 -A --full --thresholds cpu=30")])
@click.argument("node_name", metavar="NODE", shell_complete=completers.nodes)
@cluster_access
@scope
@EXPLAIN_PLUGINS
@output
@click.option("--full", is_flag=True,
              help="Read the whole cluster and evaluate every plugin; by default only this node and its pods are "
                   "read, and plugins that need the other nodes are estimated or listed as not evaluated.")
def explain_node(node_name: str, full: bool, access: ClusterAccess, scope: ScopeOptions, flags: PluginFlags,
                 output: OutputOptions) -> None:
    """The node's utilization against the thresholds, its class, and every pod on it with its verdict (in every
    namespace unless -n narrows them)."""
    name("NODE", node_name, dns1123_subdomain_problem)
    plugins = registry(click.get_current_context())
    policy = build_policy(plugins, flags, "balance", default_plugins(plugins, "explain"))
    sys.exit(app.explain_node(options(access, scope, output), policy, node_name, full=full))


@cli.command()
@click.option("-o", "--output", type=click.Choice(["table", "wide", "json"]), default="table", show_default=True,
              help="wide adds each plugin's description.")
def plugins(output: str) -> None:
    """List in-tree and out-of-tree plugins with their extension points and args (with their defaults from flags,
    and a policy's where those differ)."""
    from kubectl_desched.ui import plugins_table as pluginstable

    found = registry(click.get_current_context())
    rows = pluginstable.rows(found)
    if output == "json":
        click.echo(json.dumps({"plugins": rows, "broken": found.broken}, indent=2))
        return
    click.echo(pluginstable.table(rows, wide=output == "wide"))


@cli.command()
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text")
def version(output: str) -> None:
    """Print the version."""
    if output == "json":
        click.echo(json.dumps({"version": __version__, "python": sys.version.split()[0]}))
    else:
        click.echo(f"kubectl-desched v{__version__} (python {sys.version.split()[0]})")


@cli.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion_script(shell: str) -> None:
    """Print the completion script for the standalone kubectl-desched (kubectl desched completes through
    kubectl_complete-desched on PATH). E.g. source <(kubectl-desched completion bash)."""
    from kubectl_desched.cli.completion import script
    click.echo(script(cli, shell))


def error_line(message: object) -> str:
    """The last guard before the terminal: whatever a message quotes (a server's words, a value typed, a file's
    content) it stays one printable line of bounded length, so it cannot forge a second `error:` line."""
    return f"error: {one_line(message, LINE_LIMIT)}"


def click_message(e: click.ClickException) -> str:
    """A bad flag value said as every other flag error is, `--flag: why` (click's own is `Invalid value for
    '--flag': why`)."""
    if (isinstance(e, click.BadParameter) and not isinstance(e, click.MissingParameter)
            and isinstance(e.param, click.Option) and e.param.opts):
        return f"{'/'.join(e.param.opts)}: {e.message}"
    return e.format_message()


def main() -> None:
    """Entry point: every failure becomes one line on stderr and an exit code (2 for usage)."""
    if sys.argv[1:2] == ["__complete"]:  # cobra's completion request, as kubectl_complete-desched makes it
        from kubectl_desched.cli.completion import kubectl_main
        kubectl_main(cli)
        return
    try:
        cli.main(prog_name="kubectl desched", standalone_mode=False, complete_var=completers.COMPLETE_VAR)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted: nothing further was evicted", err=True)
        sys.exit(app.EXIT_NOT_CONFIRMED)
    except click.exceptions.NoArgsIsHelpError as e:  # `kubectl desched` alone: its help, as kubectl prints its own
        click.echo(e.ctx.get_help() if e.ctx else cli.get_help(click.Context(cli)))
        sys.exit(0)
    except click.ClickException as e:
        click.echo(error_line(click_message(e)), err=True)
        sys.exit(2 if isinstance(e, click.UsageError) else e.exit_code)
    except DeschedError as e:  # a read that failed may leave pages on their way: leave() does not wait for them
        click.echo(error_line(e), err=True)
        leave(e.exit_code)
    except KeyboardInterrupt:
        click.echo("\ninterrupted: nothing further was evicted", err=True)
        leave(app.EXIT_INTERRUPTED)
    except Interrupted as e:  # Ctrl-C, SIGTERM or SIGHUP while planning or at the prompt: 128+N
        said = "interrupted" if e.name == "Ctrl-C" else f"interrupted by {e.name}"
        click.echo(f"\n{said}: nothing further was evicted", err=True)
        leave(e.exit_code)
    except BrokenPipeError:
        sys.exit(1)
