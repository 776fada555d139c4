"""No credential the tool holds or was given is shown: a password or token in the server's URL is masked wherever
the URL is shown (errors, the Source line, the report, the -v log), as kubectl's client masks it. Over a real
socket (the fake API of kube/test_hostile_server.py) and the real kubeconfig loader."""

from __future__ import annotations

import base64
import http.server
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubectl_desched.kube import httplog
from kubectl_desched.sanitize import mask_url, one_line
from tests.unit.kube.test_hostile_server import (
    DESCHEDULE,
    NODES,
    PODS,
    Hostile,
    _Served,
    assert_one_error_line,
    run_main,
)
from tests.unit.kube.test_hostile_server import http_fake as http_fake  # a fixture

PASSWORD = "pa55-W0RD-in-url"
QUERY_TOKEN = "q-T0KEN-in-url"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    yield
    httplog.set_verbosity(0)  # -v is process-wide


def kubeconfig(path: Path, server: str, user: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", "namespace": "shop"}}],
        "users": [{"name": "u", "user": user}],
    }))
    return path


@pytest.mark.parametrize(("url", "shown"), [
    ("https://admin:PW@127.0.0.1:1", "https://admin:***@127.0.0.1:1"),
    ("https://admin:p@ss@host/api?limit=5", "https://admin:***@host/api?limit=5"),  # to the last @, as Go parses
    ("https://host/?access_token=abc&limit=5", "https://host/?access_token=***&limit=5"),
    ('url="https://h/x?X-Amz-Signature=abc&X-Amz-Credential=k" took 3ms',
     'url="https://h/x?X-Amz-Signature=***&X-Amz-Credential=***" took 3ms'),
    ("https://h/?token=a;password=b#sig=c", "https://h/?token=***;password=***#sig=c"),
    ("at https://h/?access_token=abc: connection refused", "at https://h/?access_token=***: connection refused"),
    ("https://h/?token=a:b", "https://h/?token=***"),
    ("https://admin@host:6443", "https://admin@host:6443"),  # a user name alone is no secret, as in kubectl
    ("https://host:6443/api/v1/pods?limit=500&continue=eyJ2", "https://host:6443/api/v1/pods?limit=500&continue=eyJ2"),
    ("-l app=web,token=x", "-l app=web,token=x"),  # not a URL's query
])
def test_mask_url(url: str, shown: str) -> None:
    assert mask_url(url) == shown
    assert mask_url(shown) == shown  # masking what is masked changes nothing
    assert one_line(url) == shown  # every line made of server or error text


@pytest.mark.parametrize(("server", "shown"), [
    (f"https://admin:{PASSWORD}@127.0.0.1:1", "https://admin:***@127.0.0.1:1"),
    (f"https://127.0.0.1:1/?access_token={QUERY_TOKEN}", "https://127.0.0.1:1/?access_token=***"),
])
def test_an_unreachable_server_is_named_without_its_credentials(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                                server: str, shown: str) -> None:
    config = kubeconfig(tmp_path / "config", server, {"token": "t0ken-abcdef"})
    code, out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--kubeconfig", str(config), "-v", "9",
                         "--report", "r.json")
    assert code == 1
    line = assert_one_error_line(err, f"cannot reach the API server at {shown}: connection refused")
    everything = out + err + Path("r.json").read_text()
    assert PASSWORD not in everything and QUERY_TOKEN not in everything, everything
    assert line.startswith("error: reading the cluster: ")


@pytest.mark.parametrize("output", [[], ["-o", "json"]])
def test_the_source_line_the_report_and_the_log_mask_the_url(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str],
                                                             http_fake: _Served, output: list[str]) -> None:
    server = f"http://admin:{PASSWORD}@127.0.0.1:{http_fake.server_address[1]}"
    code, out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "-s", server, "--token", "t0ken-abcdef", "-v", "9",
                         "--report", "r.json", "--dry-run=client", *output)
    assert code == 0, err
    report = Path("r.json").read_text()
    assert PASSWORD not in out + err + report
    shown = f"http://admin:***@127.0.0.1:{http_fake.server_address[1]}"
    assert json.loads(report)["cluster"]["server"] == shown
    assert f'url="{shown}/api/v1/nodes?limit=500"' in err  # the -v log names it too, masked
    if not output:
        assert f"Source:  cluster {shown} (context {shown})" in out


# ---------------------------------------------------------------- a server that echoes the caller's credentials

TOKEN = "t0ken-echoed-by-the-server"
BASIC_PASSWORD = "basic-Pa55word"


def _echo_credentials(status: int) -> Hostile:
    """A Status answer whose message quotes the request's Authorization header, its credential and, for basic auth,
    what it decodes to: the worst a server (or a proxy in front of it) can do with what it was sent."""
    def write(h: http.server.BaseHTTPRequestHandler) -> None:
        scheme, _, credential = (h.headers.get("Authorization") or "").partition(" ")
        decoded = base64.b64decode(credential).decode() if scheme == "Basic" else ""
        body = json.dumps({"kind": "Status", "status": "Failure", "code": status, "message":
                           f"denied: {scheme} {credential} ({decoded}) is not welcome\nraw={credential}"}).encode()
        h.rfile.read(int(h.headers.get("Content-Length") or 0))
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return write


def _serve(data: dict[str, object]) -> Hostile:
    def write(h: http.server.BaseHTTPRequestHandler) -> None:
        body = json.dumps(data).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return write


def _user(kind: str, tmp_path: Path) -> dict[str, object]:
    """A kubeconfig user whose credential is TOKEN (or BASIC_PASSWORD), the way `kind` says."""
    if kind == "token":
        return {"token": TOKEN}
    if kind == "token-file":
        (tmp_path / "token").write_text(TOKEN + "\n")  # as `echo $TOKEN >token` writes it
        return {"tokenFile": str(tmp_path / "token")}
    if kind == "exec":
        plugin = tmp_path / "plugin.sh"
        plugin.write_text("#!/bin/sh\necho '" + json.dumps({
            "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
            "status": {"token": TOKEN}}) + "'\n")
        plugin.chmod(0o755)
        return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}
    assert kind == "basic"
    return {"username": "admin", "password": BASIC_PASSWORD}


def _assert_nothing_held_is_shown(*texts: str) -> None:
    basic = base64.b64encode(f"admin:{BASIC_PASSWORD}".encode()).decode()
    for secret in (TOKEN, BASIC_PASSWORD, basic):
        for text in texts:
            assert secret not in text, text


@pytest.mark.parametrize("status", [403, 500])
@pytest.mark.parametrize("kind", ["token", "token-file", "exec", "basic"])
def test_a_credential_the_server_echoes_is_shown_nowhere(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         http_fake: _Served, kind: str, status: int) -> None:
    http_fake.hostile[NODES] = _echo_credentials(status)
    server = f"http://127.0.0.1:{http_fake.server_address[1]}"
    config = kubeconfig(tmp_path / "config", server, _user(kind, tmp_path))
    code, out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--kubeconfig", str(config), "-v", "9",
                              "--report", "r.json")
    assert code == 1
    line = assert_one_error_line(err, "reading the cluster: ", "<redacted>", "is not welcome")
    report = Path("r.json").read_text()
    assert json.loads(report)["error"] == line.removeprefix("error: ")
    assert '"Response Body" body="{"kind": "Status"' in err  # -v 9 logged the answer
    _assert_nothing_held_is_shown(out, err, report)


def test_an_eviction_refused_with_the_token_in_its_message(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str],
                                                           http_fake: _Served) -> None:
    for pod in http_fake.fake.lists[PODS]:
        path = f"/api/v1/namespaces/shop/pods/{pod['metadata']['name']}"
        http_fake.hostile[path] = _serve(pod)
        http_fake.hostile[f"{path}/eviction"] = _echo_credentials(403)
    server = f"http://127.0.0.1:{http_fake.server_address[1]}"
    code, out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "-s", server, "--token", TOKEN, "--yes",
                              "--report", "r.json", "-v", "9")
    report = Path("r.json").read_text()
    assert code != 0 and "is not welcome" in out + err, out + err
    assert [e["result"] for e in json.loads(report)["evictions"]] == ["forbidden", "forbidden"]
    _assert_nothing_held_is_shown(out, err, report)
    assert "<redacted>" in json.loads(report)["arguments"]  # --token's value


def test_client_key_material_is_held(tmp_path: Path) -> None:
    from kubectl_desched.kube.config import KubeOptions, connect

    key = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(f"{'K' * 60}{i:04d}" for i in range(3)) + \
        "\n-----END PRIVATE KEY-----\n"
    cert = "-----BEGIN CERTIFICATE-----\nQ0VSVA==\n-----END CERTIFICATE-----\n"
    config = kubeconfig(tmp_path / "config", "https://127.0.0.1:1", {
        "client-key-data": base64.b64encode(key.encode()).decode(),
        "client-certificate-data": base64.b64encode(cert.encode()).decode()})
    connect(KubeOptions(kubeconfig=str(config)))
    echoed = f"bad key {'K' * 60}0001 and data {base64.b64encode(key.encode()).decode()}"
    assert one_line(echoed) == "bad key <redacted> and data <redacted>"


def test_each_token_an_exec_plugin_answers_is_held(tmp_path: Path) -> None:
    from kubectl_desched.kube.config import KubeOptions, connect

    plugin = tmp_path / "plugin.py"  # a new token each run, expired at once: every request runs it again
    plugin.write_text(f"#!{sys.executable}\n" + textwrap.dedent("""
        import json, pathlib
        count = pathlib.Path("count")
        n = int(count.read_text()) + 1 if count.exists() else 1
        count.write_text(str(n))
        print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                          "status": {"token": f"exec-token-{n}", "expirationTimestamp": "2000-01-01T00:00:00Z"}}))
        """))
    plugin.chmod(0o755)
    config = kubeconfig(tmp_path / "config", "https://127.0.0.1:1", {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}})
    conn = connect(KubeOptions(kubeconfig=str(config)))
    assert one_line("echo exec-token-1") == "echo <redacted>"
    assert one_line("echo exec-token-2") == "echo exec-token-2"  # not answered yet
    for _request in range(2):  # as each request asks the client for its token
        conn.api.configuration.get_api_key_with_prefix("BearerToken")
    assert one_line("echo exec-token-2 exec-token-3") == "echo <redacted> <redacted>"
