"""What --help (and so the generated Commands reference) says a flag defaults to is what a run without the flag
gets. A default click shows itself (show_default) is the option's own value; a default stated in words is checked
here against the code that applies it, and a new one fails until it is added below. Issue 38: --timeout's help
said "TTL plus 1m" while the evictor waited TTL plus 6m15s."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import pytest

from kubectl_desched.cli import groups
from kubectl_desched.cli.main import cli
from kubectl_desched.evictors.migration.evictor import MigrationEvictor
from kubectl_desched.evictors.migration.jobs import JobSettings, JobTrack, profile_settings
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.model.durations import parse_duration
from kubectl_desched.model.objects import pod_from_json
from kubectl_desched.plugins import in_tree_registry
from kubectl_desched.term import bars
from tests import builders as b

REGISTRY_KEY = "kubectl_desched.registry"  # where cli.plugin_flags.registry() keeps the loaded plugins


def commands() -> list[tuple[str, click.Command, click.Context]]:
    """Every command with the context its --help is made in (the in-tree plugins' flags included)."""
    root = click.Context(cli, info_name="kubectl desched")
    root.meta[REGISTRY_KEY] = in_tree_registry()
    found = []

    def walk(group: click.Group, parent: click.Context, path: str) -> None:
        for name in group.list_commands(parent):
            cmd = group.get_command(parent, name)
            assert cmd is not None
            ctx = click.Context(cmd, info_name=name, parent=parent)
            if isinstance(cmd, click.Group):
                walk(cmd, ctx, f"{path} {name}")
            else:
                found.append((f"{path} {name}", cmd, ctx))

    walk(cli, root, "kubectl desched")
    return found


def options() -> dict[str, tuple[click.Option, str]]:
    """Each flag, by its longest name, with its help as --help prints it (click's own [default: ...] included)."""
    out: dict[str, tuple[click.Option, str]] = {}
    for _path, cmd, ctx in commands():
        for param in cmd.get_params(ctx):
            record = param.get_help_record(ctx)
            if isinstance(param, click.Option) and record is not None:
                out.setdefault(max(param.opts, key=len), (param, " ".join(record[1].split())))
    return out


def help_of(flag: str) -> str:
    return options()[flag][1]


def stated(flag: str) -> list[str]:
    return re.findall(r"\[default: ([^\]]+)\]", help_of(flag))


def parsed(group: groups.OptionGroup[Any], *args: str) -> Any:
    """What a command gets from this option group for these arguments (none: every default)."""
    got: dict[str, Any] = {}

    @click.command()
    @group
    def probe(**kw: Any) -> None:
        got.update(kw)

    probe.main(list(args), standalone_mode=False)
    return got[group.param]


def _waits(ttls: list[float]) -> float:
    pod = pod_from_json(b.pod("web-1", "n1", namespace="shop", uid="u-1"))
    ev = MigrationEvictor(None, {"": JobSettings()})  # type: ignore[arg-type]  # no API calls below
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ev.tracks = {i: JobTrack(Candidate(pod, "LowNodeUtilization", "r", "p"), f"j{i}", JobSettings(ttl_seconds=ttl), t0)
                 for i, ttl in enumerate(ttls)}
    return ev.wait_seconds()


def check_timeout() -> None:
    eviction, migration = stated("--timeout")
    assert parse_duration(eviction) == parsed(groups.acting).timeout
    m = re.fullmatch(r"their TTL plus (\S+); (\S+) without a TTL", migration)
    assert m, migration
    assert parsed(groups.acting, "--evictor", "migration").migration.timeout is None  # the jobs' TTLs decide
    assert _waits([300.0, 600.0]) == 600 + parse_duration(m.group(1))
    assert _waits([600.0, 0.0]) == parse_duration(m.group(2))


def check_migration_ttl() -> None:
    (text,) = stated("--migration-ttl")
    given = parsed(groups.acting, "--evictor", "migration").migration
    m = re.fullmatch(r"the policy's defaultJobTTL, else (\S+)", text)
    assert m and given.ttl is None, text
    assert profile_settings([], given.mode, given.ttl)[""].ttl_seconds == parse_duration(m.group(1))


def check_migration_mode() -> None:
    (text,) = stated("--migration-mode")
    given = parsed(groups.acting, "--evictor", "migration").migration
    m = re.fullmatch(r"the policy's MigrationController defaultJobMode, else (\S+)", text)
    assert m and given.mode is None, text
    assert profile_settings([], given.mode, given.ttl)[""].mode == m.group(1)


def check_grace_period() -> None:
    assert "-1: the pod's own (the default)" in help_of("--grace-period")
    assert parsed(groups.acting).grace_period is parsed(groups.acting, "--grace-period", "-1").grace_period is None


def check_max_pod_lifetime() -> None:
    m = re.fullmatch(r"PodLifeTime: .* \[default: (\w+) pods older than (\S+)\]\.", help_of("--max-pod-lifetime"))
    assert m, help_of("--max-pod-lifetime")
    args = in_tree_registry().get("PodLifeTime").cli.args({}, {})
    assert args["states"] == [m.group(1)] and args["maxPodLifeTimeSeconds"] == parse_duration(m.group(2))


def check_bars() -> None:
    """Unasked, the bars are drawn on a terminal and as wide as it is, never into a pipe or a file."""
    (text,) = stated("--bars")
    assert text == "on a terminal, where the table still fits its width", text
    assert parsed(groups.output).bars is None

    class Stream:
        def __init__(self, tty: bool) -> None:
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    assert bars.room(None, Stream(False)) is None
    assert bars.room(None, Stream(True)) == shutil.get_terminal_size().columns


def shown(group: groups.OptionGroup[Any], attribute: str, read: Callable[[str], Any] = str) -> Callable[[str], None]:
    """A click-shown default: the value the group hands on is the one --help shows."""
    def check(flag: str) -> None:
        (text,) = stated(flag)
        assert read(text) == getattr(parsed(group), attribute), flag
    return check


def kubeconfig_order() -> None:
    assert "(default: $KUBECONFIG, then ~/.kube/config)" in help_of("--kubeconfig")  # the kubernetes client's order


# Every flag whose help says "default" in its own words, and what checks it (tests/unit/cli and the live tests
# cover the rest: the namespace default, the landing wait, --full, --keep-futile).
def check_prometheus_query() -> None:
    from kubectl_desched.plugins.upstream.lownodeutilization import CLI

    given = {"metricsUtilization": {"source": "Prometheus", "prometheus": {"query": "q"}}}
    assert CLI.defaults(given) == {"thresholds": {"MetricResource": 20.0},  # type: ignore[operator]
                                   "targetThresholds": {"MetricResource": 50.0}}


def check_prometheus_url() -> None:
    from kubectl_desched.app.loading import prometheus_target
    from kubectl_desched.app.options import Options
    from kubectl_desched.framework.policy import PrometheusProvider
    from kubectl_desched.framework.policy_decoder import decode_policy, policy_from_plugins

    policy = decode_policy(policy_from_plugins([("RemoveFailedPods", "deschedule", {})], {}, {}),
                           in_tree_registry(), "policy.yaml")
    policy.prometheus = PrometheusProvider("http://10.0.0.9:9090")
    assert prometheus_target(Options(), policy).url == "http://10.0.0.9:9090"


STATED: dict[str, Callable[[], None] | str] = {
    "--prometheus-query": check_prometheus_query,
    "--prometheus-url": check_prometheus_url,
    "--prometheus-ca-file": "the system's trust store: urllib3's default when no CA file is given",
    "--timeout": check_timeout,
    "--migration-ttl": check_migration_ttl,
    "--migration-mode": check_migration_mode,
    "--grace-period": check_grace_period,
    "--max-pod-lifetime": check_max_pod_lifetime,
    "--kubeconfig": kubeconfig_order,
    "--namespace": "the context's namespace: tests/unit/cli/test_startup_imports.py reads it from a kubeconfig",
    "--no-wait-landing": "a switch: says what the run does without it",
    "--keep-futile": "a switch: says what the run does without it",
    "--bars": check_bars,
    "--full": "a switch: says what explain does without it",
}
SHOWN = {
    "--chunk-size": shown(groups.cluster_access, "chunk_size", int),
    "--max-in-flight": shown(groups.acting, "max_in_flight", int),
    "--rounds": shown(groups.acting, "rounds", int),
    "--dry-run": shown(groups.acting, "dry_run"),
    "--evictor": shown(groups.acting, "evictor"),
}


@pytest.mark.parametrize("flag", sorted(name for name, check in STATED.items() if callable(check)))
def test_a_default_stated_in_words_is_the_one_the_code_uses(flag: str) -> None:
    check = STATED[flag]
    assert callable(check)
    check()


@pytest.mark.parametrize("flag", sorted(SHOWN))
def test_a_shown_default_is_what_the_command_gets(flag: str) -> None:
    SHOWN[flag](flag)


def test_every_default_in_words_is_checked_here() -> None:
    """A flag's own help that mentions a default (not the [default: X] click adds from the value, nor a plugin
    flag's, which plugin_flags works out from the plugin's args) must be listed in STATED."""
    derived = {f.name for spec in in_tree_registry() for f in spec.cli.flags if f.default_help is None}
    unlisted = []
    for flag, (option, _text) in options().items():
        words = option.help or ""
        if flag in derived:
            words = re.sub(r"\[default: [^\]]+\]", "", words)
        if re.search(r"\bdefault\b", words, re.IGNORECASE) and flag not in STATED:
            unlisted.append(flag)
    assert not unlisted, f"add a check to STATED for: {', '.join(unlisted)}"


# The guide's flag tables state defaults too: each row's default cell, read as the code's value.
ROOT = Path(__file__).resolve().parents[3]


def table_defaults(page: str, column: int) -> dict[str, str]:
    """{flag: its default cell} of every table row on the page whose first cell is a `--flag`."""
    out = {}
    for line in (ROOT / page).read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        m = re.match(r"`(--[\w-]+)", cells[0]) if len(cells) > column else None
        if m:
            out[m.group(1)] = cells[column]
    return out


def _duration(cell: str) -> float:
    return parse_duration(cell.strip("`"))


def _migration_timeout(cell: str) -> None:
    m = re.search(r"the longest TTL plus (\S+) .*; (\S+) when a TTL is 0", cell)
    assert m, cell
    assert _waits([300.0, 600.0]) == 600 + parse_duration(m.group(1))
    assert _waits([0.0]) == parse_duration(m.group(2))


def _migration(attribute: str, pattern: str, read: Callable[[str], Any]) -> Callable[[str], None]:
    def check(cell: str) -> None:
        m = re.search(pattern, cell)
        given = parsed(groups.acting, "--evictor", "migration").migration
        assert m, cell
        assert getattr(profile_settings([], given.mode, given.ttl)[""], attribute) == read(m.group(1))
    return check


def _acting(attribute: str, read: Callable[[str], Any]) -> Callable[[str], None]:
    def check(cell: str) -> None:
        assert read(cell) == getattr(parsed(groups.acting), attribute), cell
    return check


def _says(words: str, holds: Callable[[], bool]) -> Callable[[str], None]:
    """A cell in words: these words, and the code does what they say."""
    def check(cell: str) -> None:
        assert cell == words and holds(), cell
    return check


def _count(cell: str) -> int:
    return int(cell.strip("`"))


def _acting_is(attribute: str, value: Any) -> Callable[[], bool]:
    return lambda: getattr(parsed(groups.acting), attribute) == value


DOCUMENTED: dict[tuple[str, int], dict[str, Callable[[str], None]]] = {
    ("docs/guide/evicting-safely.md", 1): {
        "--max-in-flight": _acting("max_in_flight", _count),
        "--interval": _acting("interval", _duration),
        "--wait-ready": _says("off", _acting_is("wait_ready", False)),
        "--timeout": _acting("timeout", _duration),
        "--no-wait-landing": _says("off", _acting_is("wait_landing", True)),
        "--rounds": _acting("rounds", _count),
        "--report": _says("none", _acting_is("report", None)),
        "--record-events": _says("off", _acting_is("record_events", False)),
        "--request-timeout": _says("none", lambda: parsed(groups.cluster_access).request_timeout == 0),
    },
    ("docs/guide/pod-migration-jobs.md", 2): {
        "--evictor": _acting("evictor", lambda c: c.split("`")[1]),
        "--migration-mode": _migration("mode", r"else `(\w+)`", str),
        "--migration-ttl": _migration("ttl_seconds", r"else `(\w+)`", parse_duration),
        "--grace-period": _says("the profile's `defaultDeleteOptions`, else none",
                                _acting_is("grace_period", None)),
        "--no-wait": _says("wait", lambda: parsed(groups.acting, "--evictor", "migration").migration.wait),
        "--timeout": _migration_timeout,
        "--dry-run": _says("", lambda: True),  # its two rows say what each value does
    },
}


@pytest.mark.parametrize("page", sorted(DOCUMENTED), ids=lambda p: p[0])
def test_the_guides_flag_tables_state_the_code_defaults(page: tuple[str, int]) -> None:
    rows, checks = table_defaults(*page), DOCUMENTED[page]
    assert set(rows) == set(checks), f"{page[0]}: a table row without a check here, or a check without its row"
    for flag, cell in rows.items():
        checks[flag](cell)


def test_every_flag_table_with_a_default_column_is_checked() -> None:
    pages = set()
    for page in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        for line in page.read_text(encoding="utf-8").splitlines():
            cells = [c.strip().lower() for c in line.strip().split("|")[1:-1]]
            if cells and cells[0] == "flag" and "default" in cells:
                pages.add((str(page.relative_to(ROOT)), cells.index("default")))
    assert pages == set(DOCUMENTED)
