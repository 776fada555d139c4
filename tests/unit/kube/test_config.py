"""Kubeconfig loading with kubectl's rules (kube/config.py). Only files are read; nothing connects."""

from __future__ import annotations

import os
import stat
import sys
import textwrap
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from kubectl_desched.errors import DeschedError, UsageError
from kubectl_desched.kube import config as kube_config
from kubectl_desched.kube.config import Connection, KubeOptions, connect, context_namespace


def _kubeconfig(path: Path, *, current: str | None = None, clusters: dict[str, str] | None = None,
                contexts: dict[str, dict[str, str]] | None = None,
                users: dict[str, dict[str, Any]] | None = None) -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": s, "insecure-skip-tls-verify": True}}
                     for n, s in (clusters or {}).items()],
        "contexts": [{"name": n, "context": c} for n, c in (contexts or {}).items()],
        "users": [{"name": n, "user": u} for n, u in (users or {}).items()],
    }
    if current is not None:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc))
    return path


def _host(conn: Connection) -> str:
    return urlparse(conn.api.configuration.host).hostname or ""


def _token(conn: Connection) -> str | None:
    cfg = conn.api.configuration
    value = cfg.api_key.get("BearerToken") or cfg.api_key.get("authorization")
    if not value:
        return None
    scheme, _, token = value.partition(" ")
    assert scheme.lower() == "bearer"
    return token


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No real ~/.kube/config, no real service account, no KUBECONFIG from the environment."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    monkeypatch.setattr(kube_config, "_SA_DIR", str(tmp_path / "no-service-account"))


@pytest.fixture
def two_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    first = _kubeconfig(
        tmp_path / "first.yaml", current="ctx-a",
        clusters={"cl-a": "https://a.example:6443"},
        contexts={"ctx-a": {"cluster": "cl-a", "user": "u-a", "namespace": "team-a"},
                  "ctx-b": {"cluster": "cl-b", "user": "u-b"},
                  "ctx-mixed": {"cluster": "cl-b", "user": "u-a", "namespace": "mixed"}},
        users={"u-a": {"token": "token-a"}},
    )
    second = _kubeconfig(
        tmp_path / "second.yaml", current="ctx-b",
        clusters={"cl-b": "https://b.example:6443", "cl-a": "https://shadowed.example:6443"},
        contexts={"ctx-a": {"cluster": "cl-b", "user": "u-b", "namespace": "shadowed"}},
        users={"u-b": {"token": "token-b"}, "u-a": {"token": "shadowed-token"}},
    )
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(tmp_path / "missing.yaml"), str(second)]))
    return first, second


def test_first_files_current_context_wins(two_files: tuple[Path, Path]) -> None:
    conn = connect(KubeOptions())
    assert conn.context == "ctx-a"
    assert _host(conn) == "a.example"  # cl-a from the first file, not the second file's cl-a
    assert _token(conn) == "token-a"
    assert conn.namespace == "team-a"
    assert context_namespace(KubeOptions()) == "team-a"


def test_entries_are_merged_across_files(two_files: tuple[Path, Path]) -> None:
    conn = connect(KubeOptions(context="ctx-b"))  # context in file 1, cluster and user in file 2
    assert (conn.context, _host(conn), _token(conn), conn.namespace) == ("ctx-b", "b.example", "token-b", "default")
    conn = connect(KubeOptions(context="ctx-mixed"))
    assert (_host(conn), _token(conn), conn.namespace) == ("b.example", "token-a", "mixed")


def test_current_context_from_a_later_file_when_the_first_sets_none(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    first = _kubeconfig(tmp_path / "1.yaml", clusters={"c": "https://one.example"})
    second = _kubeconfig(tmp_path / "2.yaml", current="ctx", contexts={"ctx": {"cluster": "c", "namespace": "ns2"}})
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(second)]))
    conn = connect(KubeOptions())
    assert (conn.context, _host(conn), conn.namespace) == ("ctx", "one.example", "ns2")


def test_cluster_and_user_overrides(two_files: tuple[Path, Path]) -> None:
    conn = connect(KubeOptions(cluster="cl-b"))
    assert (conn.context, _host(conn), _token(conn), conn.namespace) == ("ctx-a", "b.example", "token-a", "team-a")
    conn = connect(KubeOptions(user="u-b"))
    assert (_host(conn), _token(conn)) == ("a.example", "token-b")
    conn = connect(KubeOptions(context="ctx-b", cluster="cl-a", user="u-a"))
    assert (_host(conn), _token(conn)) == ("a.example", "token-a")


def test_namespace_flag_overrides_the_context(two_files: tuple[Path, Path]) -> None:
    assert connect(KubeOptions(namespace="override")).namespace == "override"
    assert context_namespace(KubeOptions(namespace="override")) == "override"
    assert context_namespace(KubeOptions(context="ctx-b")) == "default"


def test_kubeconfig_flag_reads_only_that_file(tmp_path: Path, two_files: tuple[Path, Path]) -> None:
    only = _kubeconfig(tmp_path / "only.yaml", current="solo",
                       clusters={"c": "https://solo.example:443"},
                       contexts={"solo": {"cluster": "c", "user": "u", "namespace": "solo-ns"}},
                       users={"u": {"token": "solo-token"}})
    conn = connect(KubeOptions(kubeconfig=str(only)))
    assert (conn.context, _host(conn), _token(conn), conn.namespace) == ("solo", "solo.example", "solo-token",
                                                                          "solo-ns")
    with pytest.raises(UsageError, match='context "ctx-a" does not exist'):
        connect(KubeOptions(kubeconfig=str(only), context="ctx-a"))  # KUBECONFIG is not read


def test_home_kube_config_is_the_default(tmp_path: Path) -> None:
    kube_dir = tmp_path / "home" / ".kube"
    kube_dir.mkdir()
    _kubeconfig(kube_dir / "config", current="h", clusters={"c": "https://home.example"},
                contexts={"h": {"cluster": "c", "namespace": "home-ns"}})
    conn = connect(KubeOptions())
    assert (_host(conn), conn.namespace) == ("home.example", "home-ns")
    assert _token(conn) is None  # a context without a user: no credentials


def test_request_timeout(two_files: tuple[Path, Path]) -> None:
    assert connect(KubeOptions()).timeout == (30.0, None)
    assert connect(KubeOptions(request_timeout=5.0)).timeout == (5.0, 5.0)


def test_exec_credential_plugin(tmp_path: Path) -> None:
    script = tmp_path / "get-token"
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": "exec-token-123"}}
    script.write_text(f"#!{sys.executable}\nimport json\nprint(json.dumps({credential!r}))\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    cfg = _kubeconfig(tmp_path / "exec.yaml", current="e", clusters={"c": "https://exec.example"},
                      contexts={"e": {"cluster": "c", "user": "u"}},
                      users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                            "command": str(script), "interactiveMode": "Never"}}})
    conn = connect(KubeOptions(kubeconfig=str(cfg)))
    assert _token(conn) == "exec-token-123"


def test_a_failing_exec_plugin_stops_with_its_reason(tmp_path: Path) -> None:
    """The client only logs the failure and continues without credentials; like kubectl, we stop."""
    cfg = _kubeconfig(tmp_path / "exec.yaml", current="e", clusters={"c": "https://exec.example"},
                      contexts={"e": {"cluster": "c", "user": "u"}},
                      users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                            "command": "/bin/false", "interactiveMode": "Never"}}})
    with pytest.raises(UsageError) as err:
        connect(KubeOptions(kubeconfig=str(cfg)))
    assert str(err.value) == 'kubeconfig user "u": exec credential plugin failed: exec: process returned 1'


def _hanging_plugin(tmp_path: Path) -> tuple[Path, Path]:
    """A kubeconfig whose exec plugin never answers: a shell whose child (it too holds the pipes) sleeps."""
    script = tmp_path / "hangs.sh"
    script.write_text("#!/bin/sh\nsleep 5\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    cfg = _kubeconfig(tmp_path / "exec.yaml", current="e", clusters={"c": "https://exec.example"},
                      contexts={"e": {"cluster": "c", "user": "u"}},
                      users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                            "command": str(script), "interactiveMode": "Never"}}})
    return cfg, script


def test_a_hanging_exec_plugin_is_bounded_by_the_request_timeout(tmp_path: Path) -> None:
    cfg, script = _hanging_plugin(tmp_path)
    start = time.monotonic()
    with pytest.raises(DeschedError) as err:
        connect(KubeOptions(kubeconfig=str(cfg), request_timeout=0.5))
    assert time.monotonic() - start < 3
    assert str(err.value) == f"exec credential plugin {script} did not answer within 0.5s"
    assert not isinstance(err.value, UsageError)  # nothing typed was wrong: exit code 1


def test_a_hanging_exec_plugin_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit.kube.test_hostile_server import assert_one_error_line, run_main

    cfg, script = _hanging_plugin(tmp_path)
    code, _out, err = run_main(monkeypatch, capsys, "deschedule", "--plugin", "RemovePodsViolatingNodeTaints",
                               "--kubeconfig", str(cfg), "--request-timeout", "1s")
    assert code == 1
    assert assert_one_error_line(err) == f"error: exec credential plugin {script} did not answer within 1s"


def test_an_exec_plugin_has_30s_without_request_timeout_or_5m_at_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kube_config._exec_bound(KubeOptions(request_timeout=7)) == 7
    assert kube_config._exec_bound(KubeOptions()) == 30  # pytest's stdout is not a terminal
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # the client then gives the plugin the terminal
    assert kube_config._exec_bound(KubeOptions()) == 300


def _usage_error(opts: KubeOptions, *, namespace_too: bool = True) -> str:
    with pytest.raises(UsageError) as info:
        connect(opts)
    message = str(info.value)
    assert "\n" not in message
    if namespace_too:
        with pytest.raises(UsageError) as info2:
            context_namespace(opts)
        assert str(info2.value) == message
    return message


def test_missing_kubeconfig_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    assert _usage_error(KubeOptions(kubeconfig=str(missing))) == f"kubeconfig {missing}: no such file"


def test_malformed_kubeconfig(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nclusters: [\n  - name: x\n")
    message = _usage_error(KubeOptions(kubeconfig=str(bad)))
    assert message.startswith(f"invalid kubeconfig {bad}:")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("- just\n- a list\n", "invalid kubeconfig"),
        ("apiVersion: v1\nclusters: {a: b}\ncontexts: []\nusers: []\n", "invalid kubeconfig"),
        ("apiVersion: v1\ncurrent-context: x\nclusters: {a: b}\ncontexts: [{name: x, context: {cluster: a}}]\n",
         "invalid kubeconfig"),
        ("apiVersion: v1\nclusters: [a]\ncontexts: []\nusers: []\n", "invalid kubeconfig"),
        ("apiVersion: v1\nclusters: []\ncontexts: [{context: {}}]\nusers: []\n", "invalid kubeconfig"),
        ("", "invalid kubeconfig"),
    ],
)
def test_kubeconfig_that_is_not_a_config(tmp_path: Path, content: str, expected: str) -> None:
    bad = tmp_path / "weird.yaml"
    bad.write_text(content)
    assert _usage_error(KubeOptions(kubeconfig=str(bad))).startswith(expected)


def test_server_that_is_not_a_string(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("apiVersion: v1\ncurrent-context: x\nclusters: [{name: a, cluster: {server: 5}}]\n"
                   "contexts: [{name: x, context: {cluster: a}}]\nusers: []\n")
    message = _usage_error(KubeOptions(kubeconfig=str(cfg)), namespace_too=False)
    assert message == 'cluster "a": server: must be a string'


def _one_cluster(path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "current-context": "x", "clusters": [{"name": "a", "cluster": cluster}],
        "contexts": [{"name": "x", "context": {"cluster": "a", "user": "u"}}], "users": [{"name": "u", "user": user}]}))
    return path


@pytest.mark.parametrize(("server", "why"), [
    ("https://admin:PW@127.0.0.1:99999", "not a URL: Port out of range 0-65535"),
    ("https://admin:PW@127.0.0.1:abc", "not a URL: Port could not be cast to integer value as 'abc'"),
    ("https://admin:PW@[::1", "not a URL: Invalid IPv6 URL"),
    ("ftp://admin:PW@host", "the scheme must be https or http, not 'ftp'"),
    ("https://admin:PW@", "the URL names no host"),
    ("https://admin:PW@ho st", "the host must not contain spaces"),
    ("https://admin:PW@exa%mple", "not a URL: the host or port is not valid"),
    ("https://admin:PW@host/\nX-Evil: 1", "must not contain line breaks or control characters"),
    ("admin:PW@host/prefix", "without https:// or http:// it must be a bare host[:port], as in client-go"),
])
def test_a_malformed_server_is_one_line_naming_the_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], server: str,
                                                           why: str) -> None:
    """urllib3 used to find most of these at the first request: exit 1 with its own words (`LocationParseError:
    Failed to parse: ...`). Now one line when the kubeconfig is read, exit 2 as every kubeconfig mistake, and the
    URL is never quoted (a malformed one may escape the masking of its password)."""
    from tests.unit.kube.test_hostile_server import DESCHEDULE, assert_one_error_line, run_main

    cfg = _one_cluster(tmp_path / "c.yaml", {"server": server, "insecure-skip-tls-verify": True},
                       {"token": "t0ken-abcdef"})
    assert _usage_error(KubeOptions(kubeconfig=str(cfg)), namespace_too=False) == f'cluster "a": server: {why}'
    code, out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--kubeconfig", str(cfg))
    assert_one_error_line(err, f'error: cluster "a": server: {why}')
    assert (code, out) == (2, "")
    assert "PW" not in err


def test_insecure_skip_tls_verify_must_be_a_boolean(tmp_path: Path) -> None:
    """The kubernetes client takes any value for its truth: the string "false" turned verification off."""
    cfg = _one_cluster(tmp_path / "c.yaml", {"server": "https://a.example", "insecure-skip-tls-verify": "false"}, {})
    message = _usage_error(KubeOptions(kubeconfig=str(cfg)), namespace_too=False)
    assert message == 'cluster "a": insecure-skip-tls-verify must be true or false'


SECRET = "s3cret-T0KEN"


@pytest.mark.parametrize(("kind", "bad", "why"), [
    ("token", "\n", "token must not contain line breaks or control characters"),
    ("token", "€", "token must be ASCII text"),
    ("tokenFile", "\n", "the token in its tokenFile must not contain line breaks or control characters"),
    ("tokenFile", "\r\n ", "the token in its tokenFile must not contain line breaks or control characters"),
    ("exec", "\n", "the exec credential plugin's token must not contain line breaks or control characters"),
])
def test_a_token_that_cannot_be_a_header_is_refused_naming_the_user(tmp_path: Path, kind: str, bad: str,
                                                                    why: str) -> None:
    """The HTTP client refused it with a traceback quoting the whole Authorization header, token and all."""
    token = f"{SECRET}{bad}more"
    if kind == "token":
        user: dict[str, Any] = {"token": token}
    elif kind == "tokenFile":
        (tmp_path / "token").write_text(token + "\n")
        user = {"tokenFile": str(tmp_path / "token")}
    else:
        plugin = tmp_path / "plugin.py"
        plugin.write_text(f"#!{sys.executable}\nimport json\nprint(json.dumps({{'apiVersion': "
                          f"'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', 'status': {{'token': "
                          f"{token!r}}}}}))\n")
        plugin.chmod(0o755)
        user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}
    cfg = _one_cluster(tmp_path / "c.yaml", {"server": "https://a.example"}, user)
    message = _usage_error(KubeOptions(kubeconfig=str(cfg)), namespace_too=False)
    assert message == f'user "u": {why}'
    assert SECRET not in message


def test_unknown_context(two_files: tuple[Path, Path]) -> None:
    assert _usage_error(KubeOptions(context="nope")) == 'context "nope" does not exist in the kubeconfig'


def test_unknown_cluster_and_user(two_files: tuple[Path, Path]) -> None:
    message = _usage_error(KubeOptions(cluster="nope"), namespace_too=False)
    assert message == 'cluster "nope" does not exist in the kubeconfig'
    message = _usage_error(KubeOptions(user="nobody"), namespace_too=False)
    assert message == 'user "nobody" does not exist in the kubeconfig'


def test_context_naming_a_missing_cluster(tmp_path: Path) -> None:
    cfg = _kubeconfig(tmp_path / "c.yaml", current="x", contexts={"x": {"cluster": "gone"}})
    message = _usage_error(KubeOptions(kubeconfig=str(cfg)), namespace_too=False)
    assert message == 'cluster "gone" does not exist in the kubeconfig'


def test_no_current_context(tmp_path: Path) -> None:
    cfg = _kubeconfig(tmp_path / "c.yaml", clusters={"c": "https://x.example"}, contexts={"x": {"cluster": "c"}})
    message = _usage_error(KubeOptions(kubeconfig=str(cfg)), namespace_too=False)
    assert "no current-context" in message
    assert context_namespace(KubeOptions(kubeconfig=str(cfg))) == "default"


def test_nothing_found_outside_a_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing.yaml"))
    message = _usage_error(KubeOptions(), namespace_too=False)
    assert message.startswith(f"no kubeconfig found at {tmp_path / 'missing.yaml'}")
    assert context_namespace(KubeOptions()) == "default"


@pytest.fixture
def service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text("sa-token-xyz")
    (sa / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    (sa / "namespace").write_text("kube-tools\n")
    monkeypatch.setattr(kube_config, "_SA_DIR", str(sa))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return sa


def test_in_cluster_fallback(service_account: Path) -> None:
    conn = connect(KubeOptions())
    assert conn.context == "(in-cluster)"
    assert conn.api.configuration.host == "https://10.96.0.1:443"
    assert _token(conn) == "sa-token-xyz"
    assert conn.api.configuration.ssl_ca_cert == str(service_account / "ca.crt")
    assert conn.namespace == "kube-tools"
    assert connect(KubeOptions(namespace="mine")).namespace == "mine"
    assert context_namespace(KubeOptions()) == "kube-tools"


def test_kubeconfig_wins_over_in_cluster(service_account: Path, two_files: tuple[Path, Path]) -> None:
    conn = connect(KubeOptions())
    assert (conn.context, _host(conn)) == ("ctx-a", "a.example")


def test_in_cluster_without_port_is_an_error(service_account: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT")
    with pytest.raises(DeschedError) as info:
        connect(KubeOptions())
    assert str(info.value).startswith("in-cluster configuration:")
    assert "\n" not in str(info.value)



def test_a_refreshed_exec_token_that_cannot_be_a_header_is_refused(tmp_path: Path) -> None:
    """An exec plugin's next token (its first expired at once) is checked as the first was."""
    plugin = tmp_path / "plugin.py"
    plugin.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""
        import json, pathlib
        count = pathlib.Path({str(tmp_path / "count")!r})
        n = int(count.read_text()) + 1 if count.exists() else 1
        count.write_text(str(n))
        print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {{
            "token": "{SECRET}" if n == 1 else "{SECRET}\\nX: y", "expirationTimestamp": "2000-01-01T00:00:00Z"}}}}))
        """))
    plugin.chmod(0o755)
    cfg = _one_cluster(tmp_path / "c.yaml", {"server": "https://a.example"}, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}})
    conn = connect(KubeOptions(kubeconfig=str(cfg)))
    with pytest.raises(UsageError) as info:  # as the client asks for the token before each request
        conn.api.configuration.get_api_key_with_prefix("BearerToken")
    assert str(info.value) == ('user "u": the exec credential plugin\'s token must not contain line breaks or '
                               'control characters')
