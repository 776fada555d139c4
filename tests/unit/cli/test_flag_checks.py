"""Flags refused when they are parsed: one `error:` line, exit 2, no traceback, before anything is read from the
cluster, asked or sent. The cluster is a fake that fails the test if it is touched at all."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubectl_desched import app
from kubectl_desched.app import loading as _loading  # noqa: F401  (app imports its parts on first use)
from kubectl_desched.cli import main as cli
from kubectl_desched.cli.checks import Count, pod_reference
from kubectl_desched.cli.groups import acting
from kubectl_desched.errors import UsageError
from kubectl_desched.kube import live
from kubectl_desched.model.durations import MAX_DURATION_SECONDS
from kubectl_desched.plugins import full_registry
from tests import builders as b

BIG = "9" * 400
INT32_MAX = 2**31 - 1


@pytest.fixture
def untouched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """No cluster may be contacted: connect and every request are recorded (and fail)."""
    touched: list[str] = []

    def connect(_opts: Any) -> Any:
        touched.append("connect")
        raise AssertionError("the cluster was contacted")

    def request(*_a: Any, **_k: Any) -> Any:
        touched.append("request")
        raise AssertionError("a request was sent")

    monkeypatch.setattr(app.loading, "connect", connect)
    monkeypatch.setattr(live, "request_raw", request)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    objs = [b.node("n1"), b.node("n2"), *(b.pod(f"web-{i}", "n1", cpu="1", namespace="shop") for i in range(4))]
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(b.cluster(*objs)))
    return touched


def main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["kubectl-desched", *args])
    with pytest.raises(SystemExit) as done:
        cli.main()
    out, err = capsys.readouterr()
    assert "[a]ll" not in out + err  # never got as far as the prompt
    return int(done.value.code or 0), err


def refused(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], touched: list[str],
            args: list[str], fragment: str) -> str:
    code, err = main(monkeypatch, capsys, args)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert fragment in lines[0], lines[0]
    assert code == 2, err
    assert touched == []
    return lines[0]


# --yes everywhere: were the flag accepted, nothing would stop the run before it evicts.
EVICT = ["--yes"]
CASES: list[tuple[list[str], str]] = [
    # names: namespaces are DNS-1123 labels, nodes DNS-1123 subdomains; no empty names in a list
    (["balance", "-n", "Bad_NS!"], "-n/--namespace: 'Bad_NS!' must be a DNS-1123 label"),
    (["balance", "-n", "shop,Bad_NS!"], "-n/--namespace: 'Bad_NS!' must be a DNS-1123 label"),
    (["balance", "-n", ""], "-n/--namespace: empty name in ''"),
    (["balance", "-n", "shop,"], "-n/--namespace: empty name in 'shop,'"),
    (["balance", "-n", "a" * 64], "must be at most 63 characters"),
    (["balance", "-A", "--exclude-namespace", "../../etc"], "--exclude-namespace: '../../etc' must be a DNS-1123"),
    (["balance", "-A", "--exclude-namespace", "kube-system,,x"], "--exclude-namespace: empty name in"),
    (["balance", "-A", "--nodes", ",,,"], "--nodes: empty name in ',,,'"),
    (["balance", "-A", "--nodes", "Node_1"], "--nodes: 'Node_1' must be a DNS-1123 subdomain"),
    (["balance", "-A", "--nodes", "n1," + "a" * 254], "must be at most 253 characters"),
    (["explain", "node", "Bad!"], "NODE: 'Bad!' must be a DNS-1123 subdomain"),
    (["explain", "pod", "web_0", "-n", "shop"], "POD: 'web_0' must be a DNS-1123 subdomain"),
    (["explain", "pod", "web-0", "-n", "Shop"], "-n/--namespace: 'Shop' must be a DNS-1123 label"),
    # label selectors, as the API server parses and validates them
    (["balance", "-A", "--node-selector", "a!=b,,"], "--node-selector: empty term in label selector 'a!=b,,'"),
    (["balance", "-A", "-l", "app=web,"], "-l/--selector: empty term in label selector"),
    (["balance", "-A", "-l", ",app=web"], "-l/--selector: empty term in label selector"),
    (["balance", "-A", "-l", "k" * 300 + "=v"], "invalid label key 'kkkk"),
    (["balance", "-A", "-l", "k" * 300], "the name part must be at most 63 characters"),
    (["balance", "-A", "-l", "x" * 254 + "/k=v"], "the prefix before '/' must be at most 253 characters"),
    (["balance", "-A", "-l", "Ex.com/k=v"], "the prefix before '/' must be a DNS-1123 subdomain"),
    (["balance", "-A", "--node-selector", "/k=v"], "the prefix before '/' must not be empty"),
    (["balance", "-A", "-l", "a/b/c"], "a label key has at most one '/'"),
    (["balance", "-A", "-l", "app=" + "v" * 64], "invalid label value 'vvv"),
    (["balance", "-A", "-l", "app in (web,-bad)"], "invalid label value '-bad'"),
    (["balance", "-A", "-l", "!app in (web)"], "invalid label selector term"),
    # files
    (["balance", "-A", "--report", ""], "--report: the file name must not be empty"),
    (["balance", "-A", "--report", "  "], "--report: the file name must not be empty"),
    (["balance", "--from-file", "-", "--from-file", "-", "-A"], "--from-file -: standard input can be read only once"),
    (["balance", "--from-file", "", "-A"], "--from-file: the file name must not be empty"),
    # a plugin under the command that does not run its extension point
    (["balance", "-A", "--plugin", "PodLifeTime"],
     "PodLifeTime is a Deschedule plugin: run it with `kubectl desched deschedule --plugin PodLifeTime`"),
    (["deschedule", "-A", "--plugin", "LowNodeUtilization"],
     "LowNodeUtilization is a Balance plugin: run it with `kubectl desched balance --plugin LowNodeUtilization`"),
    (["balance", "-A", "--plugin", "LowNodeUtilization", "--plugin", "RemoveFailedPods"],
     "RemoveFailedPods is a Deschedule plugin"),
    # grace period: -1 is kubectl's "the pod's own"; other negatives were made 1 second by the API server
    (["balance", "-A", "--grace-period", "-5"], "--grace-period: must be from -1 to 315360000"),
    (["balance", "-A", "--grace-period", "-2"], "(-1: the pod's own), not '-2'"),
    (["balance", "-A", "--grace-period", BIG], "--grace-period: must be from"),
    (["balance", "-A", "--thresholds", "cpu=nan"], "--thresholds: expected RESOURCE=PERCENT"),
    (["balance", "-A", "--target-thresholds", "cpu=inf"], "--target-thresholds: expected RESOURCE=PERCENT"),
]

DURATIONS: list[tuple[list[str], str]] = [
    (["balance", "-A"], "--request-timeout"),
    (["balance", "-A"], "--interval"),
    (["balance", "-A"], "--timeout"),
    (["balance", "-A", "--evictor", "migration"], "--migration-ttl"),
    (["balance", "-A"], "--min-pod-age"),
    (["deschedule", "-A"], "--max-pod-lifetime"),
    (["explain", "node", "n1"], "--request-timeout"),
    (["explain", "node", "n1"], "--max-pod-lifetime"),
]
for base, flag in DURATIONS:
    CASES += [
        ([*base, flag, BIG], f"{flag}: '999999"),
        ([*base, flag, "1" * 400 + "h"], f"{flag}: '111111"),
        ([*base, flag, "87601h"], f"{flag}: '87601h' must be from 0 to 87600h (10 years)"),
        ([*base, flag, ""], f"{flag}: '' is not a duration: use a number of seconds"),
        ([*base, flag, "-5s"], f"{flag}: '-5s' must be from 0 to 87600h"),
        ([*base, flag, "2d"], f"{flag}: '2d' is not a duration"),  # Go's durations have no d, nor have ours
    ]

# (command, flag, lowest, highest): counts are int32 fields upstream; --max-in-flight threads are bounded lower
COUNTS: list[tuple[str, str, int, int]] = [
    ("balance", "--max-in-flight", 1, 1000),
    ("balance", "--max-pods", 0, INT32_MAX),
    ("balance", "--max-pods-per-node", 0, INT32_MAX),
    ("balance", "--max-pods-per-namespace", 0, INT32_MAX),
    ("balance", "--number-of-nodes", 0, INT32_MAX),
    ("balance", "--node-eviction-limit", 0, INT32_MAX),
    ("balance", "--priority-threshold", -INT32_MAX - 1, INT32_MAX),
    ("balance", "--min-replicas", 0, INT32_MAX),
    ("deschedule", "--pod-restart-threshold", 1, INT32_MAX),
]
for command, flag, low, high in COUNTS:
    CASES += [
        ([command, "-A", flag, BIG], f"{flag}: must be from {low} to {high}, not '9999"),
        ([command, "-A", flag, "-" + BIG], f"{flag}: must be from {low} to {high}"),
        ([command, "-A", flag, "9" * 5000], f"{flag}: must be from"),  # past Python's int() digit limit
        ([command, "-A", flag, str(high + 1)], f"must be from {low} to {high}, not '{high + 1}'"),
        ([command, "-A", flag, str(low - 1)], f"must be from {low} to {high}, not '{low - 1}'"),
        ([command, "-A", flag, "1.5"], f"{flag}: '1.5' is not an integer"),
    ]


@pytest.mark.parametrize(("args", "fragment"), CASES, ids=[" ".join(a)[:80] for a, _ in CASES])
def test_refused_at_parse_time(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                               untouched: list[str], args: list[str], fragment: str) -> None:
    extra = EVICT if args[0] != "explain" else []
    line = refused(monkeypatch, capsys, untouched, [*args, *extra], fragment)
    assert len(line) < 400  # a 400- or 5000-digit value is not echoed whole


@pytest.mark.parametrize(("args", "fragment"), CASES[:12], ids=[" ".join(a)[:80] for a, _ in CASES[:12]])
def test_cli_runner_sees_a_usage_error(untouched: list[str], args: list[str], fragment: str) -> None:
    result = CliRunner().invoke(cli.cli, args, input="a\n")
    assert result.exit_code != 0 and untouched == []
    message = str(result.exception) if result.exception and not isinstance(result.exception, SystemExit) \
        else result.output
    assert fragment in message


def _only(point: str) -> list[str]:
    return sorted(s.name for s in full_registry() if s.origin == "in-tree" and point in s.points
                  and not {"deschedule", "balance"} <= set(s.points))


@pytest.mark.parametrize("name", _only("deschedule"))
def test_every_deschedule_plugin_is_refused_by_balance(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str], untouched: list[str],
                                                       name: str) -> None:
    refused(monkeypatch, capsys, untouched, ["balance", "-A", "--yes", "--plugin", name],
            f"{name} is a Deschedule plugin: run it with `kubectl desched deschedule --plugin {name}`")


@pytest.mark.parametrize("name", _only("balance"))
def test_every_balance_plugin_is_refused_by_deschedule(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str], untouched: list[str],
                                                       name: str) -> None:
    refused(monkeypatch, capsys, untouched, ["deschedule", "-A", "--yes", "--plugin", name],
            f"{name} is a Balance plugin: run it with `kubectl desched balance --plugin {name}`")


def test_explain_runs_plugins_of_either_point(untouched: list[str]) -> None:
    result = CliRunner().invoke(cli.cli, ["explain", "node", "n1", "--from-file", "snap.yaml", "-A", "--plugin",
                                          "PodLifeTime", "--plugin", "LowNodeUtilization"])
    assert result.exit_code == 0, result.output
    assert "PodLifeTime" in result.output and "LowNodeUtilization" in result.output


# ---------------------------------------------------------------- what is still accepted

@pytest.mark.parametrize("args", [
    ["-n", "shop", "--nodes", "n1,n2"],
    ["-n", " shop , default "],  # spaces around names, as before
    ["-l", "app in (),app=,!gone,example.com/tier notin (a,,b)"],  # what the API server accepts
    ["-l", "  "],  # blank: everything, as in Kubernetes
    ["--node-selector", f"{'p' * 253}/{'k' * 63}!={'v' * 63}"],  # != : it must match a node (a node without it)
    ["--grace-period", "-1", "--max-in-flight", "1000", "--max-pods", str(INT32_MAX)],
    ["--interval", "87600h", "--timeout", "0", "--request-timeout", "315360000"],
    ["--min-pod-age", "1.5h", "--priority-threshold", str(-INT32_MAX - 1)],
])
def test_boundary_values_are_accepted(untouched: list[str], args: list[str]) -> None:
    result = CliRunner().invoke(cli.cli, ["balance", "--from-file", "snap.yaml", *args, "-o", "json"])
    assert result.exit_code == 0, result.output


def test_grace_period_minus_one_sends_none_and_zero_is_kept(untouched: list[str]) -> None:
    def opts(*args: str) -> Any:
        ctx = cli.balance.make_context("balance", [*args])
        return acting.parse(dict(ctx.params))

    assert opts("--grace-period", "-1").grace_period is None
    assert opts("--grace-period", "0").grace_period == 0
    assert opts("--grace-period", "30").grace_period == 30
    assert opts().grace_period is None
    assert opts("--interval", "87600h").interval == MAX_DURATION_SECONDS


# ---------------------------------------------------------------- the parsers behind the flags

def test_selector_values_follow_the_api_server() -> None:
    from kubectl_desched.model.label_selectors import parse_selector

    empty_in = parse_selector("tier in ()")  # the API server reads "()" as the empty value
    assert empty_in({"tier": ""}) and not empty_in({"tier": "web"}) and not empty_in({})
    with_empty = parse_selector("tier in (a,,b)")
    assert with_empty({"tier": ""}) and with_empty({"tier": "b"}) and not with_empty({"tier": "c"})
    for bad in ("a=b,,", "a=b, ,c=d", "a" * 64, "-a=b", "a=b-"):
        with pytest.raises(ValueError):
            parse_selector(bad)


@pytest.mark.parametrize(("raw", "message"), [
    (10**400, "must be at most 87600h (10 years)"),
    (1e308 * 10, "must be at most 87600h (10 years)"),
    ("9" * 400 + "s", "must be at most 87600h (10 years)"),
    ("soon", "must be a duration such as 5m, not 'soon'"),
])
def test_policy_durations_are_bounded_too(raw: Any, message: str) -> None:
    from kubectl_desched.errors import ConfigError
    from kubectl_desched.framework.args import Duration

    with pytest.raises(ConfigError) as err:
        Duration.from_raw(raw, "args.minPodAge")
    assert message in str(err.value) and len(str(err.value)) < 200
    assert Duration.from_raw("87600h", "x").seconds == MAX_DURATION_SECONDS
    assert Duration.from_raw(-60, "x").seconds == -60  # the sign is the plugin's to check


# ---------------------------------------------------------------- random input: loads or one clean error

ALPHABET = "abcAZ09-_./=!,() \t\n\x1b\x00\u202e\u2028µsmhn+e" + "9" * 5


def _random_texts(seed: int, count: int = 3000) -> list[str]:
    import random

    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, rng.choice((4, 12, 80, 600)))))
            for _ in range(count)]


def test_random_selectors_parse_or_raise_value_error() -> None:
    from kubectl_desched.model.label_selectors import parse_selector

    for text in _random_texts(11):
        try:
            parse_selector(text)({"a": "b"})
        except ValueError as e:
            assert len(str(e).splitlines()) == 1 and len(str(e)) < 400


def test_random_durations_are_bounded_or_a_usage_error() -> None:
    from kubectl_desched.errors import UsageError
    from kubectl_desched.model.durations import parse_duration

    for text in _random_texts(12):
        try:
            seconds = parse_duration(text, "--timeout")
        except UsageError as e:
            assert len(str(e).splitlines()) == 1 and len(str(e)) < 300
        else:
            assert 0 <= seconds <= MAX_DURATION_SECONDS


def test_random_counts_are_in_range_or_a_usage_error() -> None:
    import click

    count = Count(0, INT32_MAX)
    for text in _random_texts(13):
        try:
            assert 0 <= count.convert(text, None, None) <= INT32_MAX
        except click.BadParameter as e:
            assert len(e.format_message().splitlines()) == 1 and len(e.format_message()) < 300


def test_random_text_is_one_bounded_printable_line() -> None:
    import unicodedata

    from kubectl_desched.sanitize import one_line

    for text in _random_texts(14):
        line = one_line(text, 100)
        assert len(line.splitlines()) <= 1 and len(line) <= 100 + 40
        assert not any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in line)


@pytest.mark.parametrize(("given", "namespaces", "expected"), [
    ("web-1", (), (None, "web-1")),
    ("pod/web-1", ("shop",), (None, "web-1")),
    ("pods/web-1", (), (None, "web-1")),
    ("po/web-1", (), (None, "web-1")),
    ("shop/web-1", (), ("shop", "web-1")),
    ("shop/web-1", ("shop",), ("shop", "web-1")),
])
def test_pod_reference_takes_kubectls_forms(given: str, namespaces: tuple[str, ...],
                                            expected: tuple[str | None, str]) -> None:
    assert pod_reference(given, namespaces) == expected


@pytest.mark.parametrize(("given", "namespaces", "message"), [
    ("shop/web-1", ("other",), "POD: 'shop/web-1' names namespace shop, but -n says other"),
    ("pod/", (), "POD: empty name in 'pod/'"),
    ("Shop/web-1", (), "POD: 'Shop' must be a DNS-1123 label"),
    ("shop/a/b", (), "POD: 'a/b' must be"),
])
def test_pod_reference_refuses_what_kubectl_would(given: str, namespaces: tuple[str, ...], message: str) -> None:
    with pytest.raises(UsageError) as e:
        pod_reference(given, namespaces)
    assert str(e.value).startswith(message)


def test_explain_pod_by_namespace_slash_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    demo = str(Path(__file__).resolve().parents[3] / "examples" / "demo-cluster.yaml")
    for ref in ("shop/web-xlr4bj9pj5-299xd", "pod/web-xlr4bj9pj5-299xd"):
        extra = [] if ref.startswith("shop/") else ["-n", "shop"]
        result = CliRunner().invoke(cli.cli, ["explain", "pod", ref, *extra, "--from-file", demo, "-o", "json"])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert (doc["namespace"], doc["pod"]) == ("shop", "web-xlr4bj9pj5-299xd")


# One shape for a bad flag value, whatever kind of value it is: `error: FLAG: why`.
ONE_SHAPE: list[tuple[list[str], str]] = [
    (["balance", "-A", "--timeout", "soon"], "--timeout"),  # a duration
    (["balance", "-A", "--timeout", "-5m"], "--timeout"),  # a duration out of range
    (["balance", "-A", "--evictor", "migration", "--migration-ttl", "0.4ns"], "--migration-ttl"),
    (["balance", "-A", "--max-pods", "-1"], "--max-pods"),  # a count, checked by click's type
    (["balance", "-A", "--max-pods", "x"], "--max-pods"),
    (["balance", "-A", "-v", "11"], "-v/--v"),
    (["balance", "-A", "--evictor", "bogus"], "--evictor"),  # a choice
    (["balance", "-A", "--thresholds", "cpu"], "--thresholds"),  # a plugin's Percentages
    (["deschedule", "-A", "--max-pod-lifetime", "2d"], "--max-pod-lifetime"),  # a plugin's Seconds
    (["balance", "-A", "--now", "yesterday"], "--now"),
    (["balance", "-n", "Bad_NS!"], "-n/--namespace"),
]


@pytest.mark.parametrize(("args", "flag"), ONE_SHAPE, ids=[" ".join(a)[:80] for a, _ in ONE_SHAPE])
def test_a_bad_flag_value_is_said_in_one_shape(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                               untouched: list[str], args: list[str], flag: str) -> None:
    line = refused(monkeypatch, capsys, untouched, [*args, *EVICT], f"error: {flag}: ")
    assert line.startswith(f"error: {flag}: ") and "nvalid" not in line.split(": ")[1], line
