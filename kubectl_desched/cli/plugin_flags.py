"""The plugins group: --policy, --plugin, --args, the eviction limits, and every flag the installed plugins
declare (framework/flags.py), built when a command runs; then the policy those flags describe."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from kubectl_desched.cli import checks, completers
from kubectl_desched.cli.help import EVICTOR_FILTERS, PLUGINS, option
from kubectl_desched.errors import ConfigError, UsageError
from kubectl_desched.framework.flags import Flag, Integer, Switch
from kubectl_desched.sanitize import LINE_LIMIT, one_line

if TYPE_CHECKING:  # imported where used: `version`, `--help` and completion start without the policy modules
    from kubectl_desched.framework.policy_decoder import Policy
    from kubectl_desched.framework.registry import PluginSpec, Registry

DEFAULT_EVICTOR = "DefaultEvictor"
LIMITS = {"max_pods_per_node": "maxNoOfPodsToEvictPerNode", "max_pods_per_namespace": "maxNoOfPodsToEvictPerNamespace",
          "max_pods": "maxNoOfPodsToEvictTotal"}
COMMAND_FOR_POINT = {"deschedule": "deschedule", "balance": "balance"}


@dataclass(frozen=True)
class PluginFlags:
    """The plugins group, parsed: a policy file, or the plugins to run from flags."""

    policy_file: str | None = None
    policy_patch: str | None = None
    plugins: tuple[str, ...] = ()
    plugin_args: tuple[str, ...] = ()  # --args as given: parsed when the policy is built
    values: Mapping[str, Any] = field(default_factory=dict)  # plugin flag name -> value, the given ones only
    limits: Mapping[str, int] = field(default_factory=dict)  # policy field -> value, the given ones only
    per_workload: int | None = None
    respect_pdbs: bool = True
    keep_futile: bool = False
    cordon: bool = False
    surge: bool = False


def registry(ctx: click.Context) -> Registry:
    """The installed plugins, loaded once per run; a broken out-of-tree plugin is one warning line."""
    found = ctx.meta.get("kubectl_desched.registry")
    if found is None:
        from kubectl_desched.plugins import full_registry

        found = ctx.meta["kubectl_desched.registry"] = full_registry()
        for line in found.broken:
            click.echo(f"warning: {one_line(line, LINE_LIMIT)}", err=True)
    return found


@dataclass
class _Shared:
    """One command-line flag and the plugins that declare it."""

    flag: Flag
    uses: list[tuple[PluginSpec, Flag]]

    def click_option(self) -> click.Option:
        heading = EVICTOR_FILTERS if all("filter" in s.points for s, _ in self.uses) else PLUGINS
        by_text: dict[str, list[str]] = {}
        for spec, flag in self.uses:
            default = spec.default_text(flag)
            text = flag.help.rstrip(".") + (f" [default: {default}]" if default else "")
            by_text.setdefault(text, []).append(spec.name)
        help_text = "; ".join(f"{', '.join(names)}: {text}" for text, names in by_text.items()) + "."
        value = self.flag.value
        kind: dict[str, Any] = {"is_flag": True} if isinstance(value, Switch) else {"metavar": value.metavar}
        if isinstance(value, Integer):
            kind["type"] = checks.Count(value.low, value.high, value.note)
        return option(heading, self.flag.name, self.flag.dest, help=help_text, **kind)


def _plugin_options(ctx: click.Context, points: tuple[str, ...], taken: set[str], *,
                    quiet: bool = False) -> list[click.Option]:
    """The flags the plugins of these extension points declare, one option per flag name. A flag that another
    option already has, or that a second plugin declares with another kind of value, is left out with a warning."""
    shared: dict[str, _Shared] = {}
    for spec in sorted(registry(ctx), key=lambda s: (not s.cli.by_default, s.name)):  # the usual plugin's first
        if not set(spec.points) & set(points):
            continue
        for flag in spec.cli.flags:
            known = shared.get(flag.name)
            if flag.name in taken or flag.dest in taken:
                if not quiet:
                    click.echo(f"warning: plugin {spec.name}: flag {flag.name} is taken by another option; left out",
                               err=True)
            elif known and known.flag.value != flag.value:
                if not quiet:
                    click.echo(f"warning: plugin {spec.name}: flag {flag.name} takes another kind of value than "
                               f"{known.uses[0][0].name}'s; left out", err=True)
            elif known:
                known.uses.append((spec, flag))
            else:
                shared[flag.name] = _Shared(flag, [(spec, flag)])
    return [s.click_option() for s in shared.values()]


POLICY = [
    option(PLUGINS, "--policy", "policy_file", metavar="FILE", shell_complete=completers.files,
           help="A DeschedulerPolicy or Koordinator DeschedulerConfiguration (descheduler/v1alpha2)."),
    option(PLUGINS, "--policy-patch", metavar="PATCH",
           help="RFC 6902 JSON Patch applied to the policy first (inline, or @FILE)."),
]
FROM_FLAGS = [
    option(PLUGINS, "--plugin", "plugins", multiple=True, metavar="NAME", shell_complete=completers.plugin_names,
           help="Plugin to run (repeatable)."),
    option(PLUGINS, "--args", "plugin_args", multiple=True, metavar="PLUGIN=JSON",
           help='Args for a plugin as JSON or YAML, e.g. LowNodeUtilization=\'{"numberOfNodes": 1}\'.'),
]
LIMIT_OPTIONS = [
    option(EVICTOR_FILTERS, "--max-pods-per-node", type=checks.COUNT, metavar="N", help="maxNoOfPodsToEvictPerNode."),
    option(EVICTOR_FILTERS, "--max-pods-per-namespace", type=checks.COUNT, metavar="N",
           help="maxNoOfPodsToEvictPerNamespace."),
    option(EVICTOR_FILTERS, "--max-pods", type=checks.COUNT, metavar="N", help="maxNoOfPodsToEvictTotal."),
    option(EVICTOR_FILTERS, "--max-per-workload", type=checks.COUNT, metavar="N",
           help="At most N pods of one controller (ReplicaSet, StatefulSet, ...)."),
    option(EVICTOR_FILTERS, "--respect-pdbs/--no-respect-pdbs", default=True, show_default=True,
           help="Keep a pod its PodDisruptionBudget would refuse and plan the next one, as upstream's real run "
                "does; --no-respect-pdbs plans as upstream's dry run (PDBs ignored, a warning instead)."),
    option(EVICTOR_FILTERS, "--keep-futile", is_flag=True, default=False,
           help="Plan a pod even when its replacement would likely land back on its node, swap with another pod of "
                "its workload, land where the plugin would pick it again or stay Pending (upstream's choice; "
                "a warning instead). By default such a pod is kept and the plugin tries its next one."),
    option(EVICTOR_FILTERS, "--cordon", is_flag=True, default=False,
           help="Cordon the nodes a plugin empties (HighNodeUtilization's under-utilized nodes) before the first "
                "eviction, so no replacement lands back on them; nodes left empty stay cordoned, the others are "
                "uncordoned once the moves are done or on any failure or Ctrl-C."),
    option(EVICTOR_FILTERS, "--surge", is_flag=True, default=False,
           help="Move a Deployment's pod that its PodDisruptionBudget refuses, or that is its workload's only pod, "
                "replacement first: mark it with the lowest pod-deletion-cost, scale the Deployment up by one, "
                "wait for the new pod to be Ready, scale back. Replicas are restored on every failure or Ctrl-C."),
]


class PluginGroup:
    """The plugins group of a command whose --plugin runs plugins of these extension points ((): `run`, which runs
    a policy only). Its plugin flags come from the registry when the command runs, so the command must be a
    help.Command: the group leaves it `extra_params`. The callback gets a PluginFlags as `flags`."""

    def __init__(self, points: tuple[str, ...]) -> None:
        self.points = points
        self.static = [*POLICY, *(FROM_FLAGS if points else []), *LIMIT_OPTIONS]

    def extra(self, ctx: click.Context) -> list[click.Option]:
        cached = ctx.meta.setdefault("kubectl_desched.plugin_options", {})
        if self.points not in cached:
            taken = {n for p in ctx.command.params for n in (*p.opts, *p.secondary_opts, p.name or "")}
            # `run` (no points) takes every plugin's flags, hidden, only to say whose flag one is beside --policy
            points = self.points or ("deschedule", "balance")
            found = _plugin_options(ctx, (*points, "filter", "preEvictionFilter"), taken, quiet=not self.points)
            for o in found:
                o.hidden = not self.points
            cached[self.points] = found
        return cached[self.points]

    def parse(self, ctx: click.Context, params: dict[str, Any]) -> PluginFlags:
        """Takes the group's values out of a command's params (plugin flags: the given ones) and parses them."""
        own = {o.name: params.pop(o.name) for o in self.static if o.name is not None}
        given = {}
        for o in self.extra(ctx):
            value = params.pop(o.name or "")
            if value is not None and value is not False:
                given[o.opts[0]] = value
        return PluginFlags(own["policy_file"], own["policy_patch"], tuple(own.get("plugins") or ()),
                           tuple(own.get("plugin_args") or ()), given,
                           {LIMITS[k]: own[k] for k in LIMITS if own[k] is not None},
                           own["max_per_workload"], own["respect_pdbs"], own["keep_futile"], own["cordon"],
                           own["surge"])

    def __call__(self, f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def callback(*args: Any, **kw: Any) -> Any:
            flags = self.parse(click.get_current_context(), kw)  # first: it takes its values out of kw
            return f(*args, **kw, flags=flags)

        callback.__dict__.setdefault("__click_params__", []).extend(reversed(self.static))
        callback.__dict__["extra_params"] = self.extra
        return callback


def default_plugins(registry: Registry, command: str) -> list[str]:
    """What a command runs when no --plugin is named, as the plugins declare: `explain` its Deschedule plugins
    first, then its Balance plugins, as a profile runs them."""
    if command == "explain":
        specs = [s for s in registry if s.cli.explain]
        return [s.name for s in sorted(specs, key=lambda s: "deschedule" not in s.points)]
    return [s.name for s in registry.with_points(command) if s.cli.by_default]


def build_policy(registry: Registry, flags: PluginFlags, point: str, default: list[str], *,
                 only_point: bool = False) -> Policy:
    """--policy (with --policy-patch), or the one-profile policy the plugin flags describe. With only_point
    (the balance and deschedule commands) a --plugin must have that extension point: `balance --plugin
    PodLifeTime` names the command that runs it instead of quietly running a Deschedule plugin."""
    from kubectl_desched.app.policy_files import load_policy, patch_text
    from kubectl_desched.framework.policy_decoder import apply_patch, decode_policy, policy_from_plugins

    if flags.policy_file:
        given = [*(["--plugin"] if flags.plugins else []), *(["--args"] if flags.plugin_args else [])]
        if given:
            raise UsageError(f"{given[0]} does not combine with --policy; use --policy-patch")
        policy = load_policy(flags.policy_file, registry, flags.policy_patch)
        if flags.values:
            raise UsageError(_flag_beside_policy(registry, next(iter(flags.values)), policy, flags.policy_file))
        policy.limits.per_node = flags.limits.get("maxNoOfPodsToEvictPerNode", policy.limits.per_node)
        policy.limits.per_namespace = flags.limits.get("maxNoOfPodsToEvictPerNamespace", policy.limits.per_namespace)
        policy.limits.total = flags.limits.get("maxNoOfPodsToEvictTotal", policy.limits.total)
        _tool_limits(policy, flags)
        return policy
    names = list(flags.plugins or default)
    for flag_name in flags.values:
        owners = _owners(registry, flag_name)
        if owners and not any(s.name in names or s.name == DEFAULT_EVICTOR for s, _ in owners):
            add = " or ".join(f"--plugin {s.name}" for s, _ in owners)
            which = "which is not enabled" if len(owners) == 1 else "none of which is enabled"
            raise UsageError(f"{flag_name} is a flag of {_plugin_names(owners)}, {which}: add {add}")
    extra = checks.plugin_args(flags.plugin_args)
    for name in extra:
        if name not in names and name != DEFAULT_EVICTOR:
            raise UsageError(f"--args {name}: the plugin is not enabled (add --plugin {name})")
    plugins = []
    for name in names:
        if name not in registry and not registry.is_broken(name):
            # Only what this command's --plugin runs: the filters and the other command's plugins are refused.
            points = (point,) if only_point else ("deschedule", "balance")
            raise UsageError(f"unknown plugin {name!r}; --plugin takes: "
                             f"{', '.join(s.name for s in registry if set(points) & set(s.points))}")
        spec = registry.get(name)
        use = point if point in spec.points else next((p for p in ("deschedule", "balance") if p in spec.points), None)
        if use is None:
            raise UsageError(f"--plugin {name}: a {'/'.join(spec.points)} plugin cannot be run by this command")
        if only_point and use != point:
            raise UsageError(f"{name} is a {use.capitalize()} plugin: run it with "
                             f"`kubectl desched {COMMAND_FOR_POINT[use]} --plugin {name}`")
        plugins.append((spec, use, spec.cli.args(flags.values, extra.get(name, {}))))
    evictor = registry.get(DEFAULT_EVICTOR)
    evictor_args = evictor.cli.args(flags.values, extra.get(DEFAULT_EVICTOR, {}))
    raw = policy_from_plugins([(s.name, use, args) for s, use, args in plugins], evictor_args, flags.limits)
    if flags.policy_patch:
        policy = decode_policy(apply_patch(raw, patch_text(flags.policy_patch)), registry, "flags with --policy-patch")
    else:
        said = [w for spec, _use, args in [(evictor, "filter", evictor_args), *plugins]
                for w in _check_args(spec, args, extra.get(spec.name, {}), flags.values)]
        try:
            policy = decode_policy(raw, registry, "flags")
        except ConfigError as e:
            raise UsageError(f"{e.path}: {e.message}" if e.path else e.message) from None
        # Said as the --args or flag the user wrote, not as a path in a policy the user never saw.
        policy.warnings = [*said, *(w for w in policy.warnings if not w.startswith("flags: profiles[0].pluginConfig["))]
    policy.from_file = False
    _tool_limits(policy, flags)
    return policy


def _owners(registry: Registry, flag_name: str) -> list[tuple[PluginSpec, Flag]]:
    return [(s, f) for s in registry for f in s.cli.flags if f.name == flag_name]


def _plugin_names(owners: list[tuple[PluginSpec, Flag]]) -> str:
    names = [s.name for s, _ in owners]
    return f"plugin {names[0]}" if len(names) == 1 else f"plugins {', '.join(names[:-1])} and {names[-1]}"


def _flag_beside_policy(registry: Registry, flag_name: str, policy: Policy, file: str) -> str:
    """A plugin flag given with --policy: whose flag it is, and whether the policy runs that plugin, so the user
    knows where the value belongs instead of reading a bare refusal."""
    owners = _owners(registry, flag_name)
    enabled = {u.spec.name for p in policy.profiles
               for u in (*p.deschedule, *p.balance, *p.filters, *p.pre_eviction_filters)}
    for spec, flag in owners:
        if spec.name in enabled:
            return (f"{flag_name} is a flag of plugin {spec.name}, which {file} enables: set {flag.path} in its args "
                    "there, or with --policy-patch")
    if len(owners) > 1:
        return f"{flag_name} is a flag of {_plugin_names(owners)}, none of which {file} enables"
    return f"{flag_name} is a flag of {_plugin_names(owners)}, which {file} does not enable"


def _tool_limits(policy: Policy, flags: PluginFlags) -> None:
    """The limits this tool adds to the policy's: they have no policy field upstream, only flags."""
    policy.limits.per_workload = flags.per_workload
    policy.limits.respect_pdbs = flags.respect_pdbs
    policy.limits.keep_futile = flags.keep_futile
    policy.limits.cordon = flags.cordon
    policy.limits.surge = flags.surge
    if flags.cordon and not policy.emptying_plugins():
        raise UsageError("--cordon applies to plugins that empty nodes (HighNodeUtilization), and none runs")


def _check_args(spec: PluginSpec, args: dict[str, Any], given: dict[str, Any], values: Mapping[str, Any]) -> list[str]:
    """Args from flags that do not decode are the error of the flag that set them, as the plugin declares; the
    warnings (an unknown or deprecated field) are said the same way."""
    from kubectl_desched.framework.args import decode_args

    if spec.args_type is None:
        return []
    warnings: list[str] = []
    try:
        decode_args(spec.args_type, args, "", warnings)
    except ConfigError as e:
        raise UsageError(spec.cli.flag_error(spec.name, e, given, values)) from None
    return [spec.cli.flag_error(spec.name, ConfigError(*w.split(": ", 1)), given, values, warning=True)
            for w in warnings]
