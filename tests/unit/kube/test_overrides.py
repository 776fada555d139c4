"""kubectl's connection flags laid over the kubeconfig with client-go's rules, checked on the client configuration
the kubernetes client builds from them (tests/integration/test_connection_flags_live.py runs them against the real
apiserver)."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_desched.errors import UsageError
from kubectl_desched.kube import overrides
from kubectl_desched.kube.config import Connection, KubeOptions, connect
from kubectl_desched.kube.overrides import ConnectionFlags
from tests.unit.kube.test_config import _isolated, _kubeconfig, _one_cluster, _token  # noqa: F401  (the fixture, too)

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_server_replaces_the_clusters_and_drops_its_tls_server_name() -> None:
    entry = {"server": "https://a:6443", "tls-server-name": "a.internal", "certificate-authority-data": "Q0E="}
    assert overrides.cluster(entry, ConnectionFlags(server="https://b:6443")) == {
        "server": "https://b:6443", "certificate-authority-data": "Q0E="}
    assert overrides.cluster(entry, ConnectionFlags(server="https://b:6443", tls_server_name="b.internal"))[
        "tls-server-name"] == "b.internal"
    assert overrides.cluster(entry, ConnectionFlags(tls_server_name="c"))["server"] == "https://a:6443"


def test_either_tls_flag_decides_verification_alone(tmp_path: Path) -> None:
    entry = {"server": "https://a", "certificate-authority-data": "Q0E=", "insecure-skip-tls-verify": False}
    assert overrides.cluster(entry, ConnectionFlags(insecure_skip_tls_verify=True)) == {
        "server": "https://a", "insecure-skip-tls-verify": True}
    os.chdir(tmp_path)  # a relative path is the working directory's, not the kubeconfig's
    assert overrides.cluster({"server": "https://a", "insecure-skip-tls-verify": True},
                             ConnectionFlags(certificate_authority="ca.crt")) == {
        "server": "https://a", "certificate-authority": str(tmp_path / "ca.crt")}


def test_token_wins_over_every_other_user_credential_but_the_client_certificate() -> None:
    entry = {"tokenFile": "/t", "exec": {"command": "x"}, "auth-provider": {"name": "oidc"}, "username": "u",
             "password": "p", "client-certificate-data": "Q0VSVA==", "client-key-data": "S0VZ"}
    assert overrides.user(entry, ConnectionFlags(token="abc")) == {
        "token": "abc", "client-certificate-data": "Q0VSVA==", "client-key-data": "S0VZ"}
    assert overrides.user(entry, ConnectionFlags(client_certificate="/c.pem", client_key="/k.pem")) == {
        **{k: v for k, v in entry.items() if not k.startswith("client-")},
        "client-certificate": "/c.pem", "client-key": "/k.pem"}


@pytest.mark.parametrize("flags, message", [
    (ConnectionFlags(server=" "), "-s/--server must not be empty"),
    (ConnectionFlags(token=""), "--token must not be empty"),
    (ConnectionFlags(certificate_authority="/nope/ca.crt"), "--certificate-authority /nope/ca.crt: no such file"),
    (ConnectionFlags(client_key="/nope/k.pem"), "--client-key /nope/k.pem: no such file"),
])
def test_flag_mistakes_are_one_line_each(flags: ConnectionFlags, message: str) -> None:
    with pytest.raises(UsageError) as info:
        flags.check()
    assert str(info.value) == message


def test_ca_with_insecure_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text(CA)
    with pytest.raises(UsageError, match="cannot be used together"):
        ConnectionFlags(certificate_authority=str(tmp_path / "ca.crt"), insecure_skip_tls_verify=True).check()


def test_flags_over_a_kubeconfig_reach_the_client_configuration(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "config", current="c", clusters={"k": "https://a.example:6443"},
                     contexts={"c": {"cluster": "k", "user": "u", "namespace": "team"}},
                     users={"u": {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "false"}}})
    for name in ("ca.crt", "client.crt", "client.key"):
        (tmp_path / name).write_text(CA)
    flags = ConnectionFlags(server="https://b.example:7443", token="flag-token-123",
                            certificate_authority=str(tmp_path / "ca.crt"),
                            client_certificate=str(tmp_path / "client.crt"), client_key=str(tmp_path / "client.key"),
                            tls_server_name="api.b.example")
    conn = connect(KubeOptions(kubeconfig=str(kc), flags=flags))
    cfg = conn.api.configuration
    assert (cfg.host, cfg.tls_server_name, cfg.verify_ssl) == ("https://b.example:7443", "api.b.example", True)
    assert (cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file) == tuple(
        str(tmp_path / n) for n in ("ca.crt", "client.crt", "client.key"))
    assert _token(conn) == "flag-token-123"  # the failing exec plugin never ran: the token replaced it
    assert (conn.context, conn.namespace) == ("c", "team")
    insecure = connect(KubeOptions(kubeconfig=str(kc), flags=ConnectionFlags(token="t1234",
                                                                           insecure_skip_tls_verify=True)))
    assert (insecure.api.configuration.verify_ssl, insecure.api.configuration.host) == (False,
                                                                                       "https://a.example:6443")


def test_no_kubeconfig_is_needed_when_the_flags_name_the_server() -> None:
    conn = connect(KubeOptions(flags=ConnectionFlags(server="https://10.0.0.1:6443", token="only-flags-token")))
    assert (conn.api.configuration.host, _token(conn), conn.namespace) == ("https://10.0.0.1:6443",
                                                                          "only-flags-token", "default")
    assert conn.context == "https://10.0.0.1:6443"
    with pytest.raises(UsageError, match="no kubeconfig found"):
        connect(KubeOptions(flags=ConnectionFlags(token="only-flags-token")))



def test_field_selectors_parse_as_kubectl_and_match_a_snapshot() -> None:
    from kubectl_desched.model import field_selectors as fieldselectors
    from tests import builders as b

    assert fieldselectors.parse(r"status.phase=Running,spec.nodeName!=n1,metadata.name==a\,b") == [
        fieldselectors.Requirement("status.phase", True, "Running"),
        fieldselectors.Requirement("spec.nodeName", False, "n1"),
        fieldselectors.Requirement("metadata.name", True, "a,b")]
    state = b.state([b.node("n1"), b.node("n2"), b.pod("a", "n1"), b.pod("b", "n2"),
                     b.with_status(b.pod("c", "n2"), phase="Pending")])
    match = fieldselectors.local_matcher("spec.nodeName!=n1,status.phase=Running")
    assert sorted(p.name for p in state.pods if match(p)) == ["b"]
    for bad in ("", "a", "=x", "a!x"):
        with pytest.raises(ValueError):
            fieldselectors.parse(bad)


def test_field_selector_narrows_the_candidates_not_the_nodes_counts(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml
    from click.testing import CliRunner

    from kubectl_desched.cli.main import cli
    from tests import builders as b

    failed = [b.with_status(b.pod(name, node), phase="Failed") for name, node in (("a", "n1"), ("b", "n2"),
                                                                                 ("c", "n2"))]
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(b.cluster(b.node("n1"), b.node("n2"), *failed)))
    monkeypatch.chdir(tmp_path)  # HOME and KUBECONFIG are isolated by the autouse fixture
    args = ["deschedule", "--plugin", "RemoveFailedPods", "--from-file", "snap.yaml", "-A", "-o", "name"]
    assert CliRunner().invoke(cli, args).output.split() == ["pod/a", "pod/b", "pod/c"]
    narrowed = CliRunner().invoke(cli, [*args, "--field-selector", "spec.nodeName=n2,metadata.name!=c"])
    assert narrowed.exit_code == 0 and narrowed.output.split() == ["pod/b"]
    why = CliRunner().invoke(cli, ["explain", "pod", "default/a", "--from-file", "snap.yaml", "--plugin",
                                   "RemoveFailedPods", "--field-selector", "spec.nodeName=n2"])
    assert "fields do not match --field-selector spec.nodeName=n2" in why.output, why.output


def test_a_field_selector_the_server_refuses_is_a_usage_error(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The API server answers 400 for a field it does not support: that is the flag's value (exit 2, as the
    snapshot's refusal); any other failure of the same read stays a failure of the cluster (exit 1)."""
    import json

    from kubernetes.client.exceptions import ApiException

    from kubectl_desched.kube import live
    from tests.unit.kube.test_hostile_server import DESCHEDULE, FakeAPI, run_main

    api = FakeAPI()
    monkeypatch.setattr("kubectl_desched.app.loading.connect", lambda _opts: Connection(
        api=None, server="https://example:6443", context="ctx", namespace="shop"))  # type: ignore[arg-type]

    def answer(status: int) -> None:
        def serve(conn: Any, method: str, path: str, *, query: Any = None, **kw: Any) -> bytes:
            if dict(query or []).get("fieldSelector") == "spec.foo=bar":
                e = ApiException(status=status, reason="x")
                e.body = json.dumps({"kind": "Status", "code": status, "message": 'Unable to find "/v1, Resource=pods" '
                                     'that match label selector "", field selector "spec.foo=bar": field label not '
                                     'supported: spec.foo'})
                raise e
            return api(conn, method, path, query=query, **kw)
        monkeypatch.setattr(live, "request_raw", serve)

    answer(400)
    code, _out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--field-selector", "spec.foo=bar")
    assert code == 2 and err.startswith("error: reading the pods that match --field-selector: ") and \
        err.rstrip().endswith("field label not supported: spec.foo (400)") and err.count("\n") == 1, err
    answer(500)
    code, _out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--field-selector", "spec.foo=bar")
    assert code == 1 and err.rstrip().endswith("(500)"), err


def test_compression_is_asked_for_unless_the_flag_or_the_cluster_turns_it_off(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "config", current="c", clusters={"k": "https://a.example:6443"},
                     contexts={"c": {"cluster": "k", "user": "u"}}, users={"u": {"token": "t1234"}})
    assert connect(KubeOptions(kubeconfig=str(kc))).compress  # client-go's default: gzip
    assert not connect(KubeOptions(kubeconfig=str(kc), flags=ConnectionFlags(disable_compression=True))).compress
    doc = yaml.safe_load(kc.read_text())
    doc["clusters"][0]["cluster"]["disable-compression"] = True
    kc.write_text(yaml.safe_dump(doc))
    assert not connect(KubeOptions(kubeconfig=str(kc))).compress
    # as client-go merges it, the flag only turns compression off: without it the cluster's setting stays
    assert not connect(KubeOptions(kubeconfig=str(kc), flags=ConnectionFlags(token="x1234"))).compress
    doc["clusters"][0]["cluster"]["disable-compression"] = "yes"
    kc.write_text(yaml.safe_dump(doc))
    with pytest.raises(UsageError, match=r'^cluster "k": disable-compression must be true or false$'):
        connect(KubeOptions(kubeconfig=str(kc)))


def test_a_read_asks_for_gzip_only_when_compression_is_on(tmp_path: Path) -> None:
    from kubectl_desched.kube.live import request_raw

    kc = _kubeconfig(tmp_path / "config", current="c", clusters={"k": "https://a.example:6443"},
                     contexts={"c": {"cluster": "k", "user": "u"}}, users={"u": {"token": "t1234"}})
    asked: list[str | None] = []

    class Answer:  # the client's answer, as a transport that reads it whole leaves it
        status = 200
        data = b"{}"

    for disable in (False, True):
        conn = connect(KubeOptions(kubeconfig=str(kc), flags=ConnectionFlags(disable_compression=disable)))

        def call_api(method: str, url: str, header_params: dict[str, str] | None = None, **kw: object) -> Answer:
            asked.append((header_params or {}).get("Accept-Encoding"))
            return Answer()

        conn.api.call_api = call_api  # type: ignore[method-assign]  # no server here: the live test has the real one
        assert request_raw(conn, "GET", "/api/v1/pods") == b"{}"
    assert asked == ["gzip", None]


def test_a_page_names_its_first_bytes_before_the_rest_is_read(tmp_path: Path) -> None:
    import gzip
    import io
    import json

    import urllib3

    from kubectl_desched.kube.live import PEEK, request_raw

    kc = _kubeconfig(tmp_path / "config", current="c", clusters={"k": "https://a.example:6443"},
                     contexts={"c": {"cluster": "k", "user": "u"}}, users={"u": {"token": "t1234"}})
    conn = connect(KubeOptions(kubeconfig=str(kc)))
    body = json.dumps({"metadata": {"continue": "abc"}, "items": [{"n": i} for i in range(20_000)]}).encode()
    wire = io.BytesIO(gzip.compress(body))
    sent = len(wire.getvalue())  # urllib3 closes it once read to its end

    class Answer:  # the client's answer: urllib3's response, unread, as the client leaves it
        status = 200
        data = None
        response = urllib3.HTTPResponse(body=wire, headers={"Content-Encoding": "gzip"}, status=200,
                                        preload_content=False)

    conn.api.call_api = lambda *_a, **_k: Answer()  # type: ignore[method-assign]  # the live tests have a server
    heads: list[tuple[bytes, int]] = []
    assert request_raw(conn, "GET", "/api/v1/pods", head=lambda first: heads.append((first, wire.tell()))) == body
    assert heads == [(body[:PEEK], heads[0][1])]  # once, inflated
    assert heads[0][1] < sent // 4  # the rest was still unread


@pytest.mark.skipif(shutil.which("openssl") is None, reason="makes its server's certificate with openssl")
def test_an_unverified_server_is_one_warning_line_not_urllib3s_block(tmp_path: Path) -> None:
    """urllib3 warns in a block of lines (the warning, then `warnings.warn(` and its source line) at each new host;
    the tool says it once, in one line. In a child process: pytest would catch the warning itself."""
    from tests.unit.kube.test_hostile_server import DESCHEDULE, FakeAPI, _Served

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=fake",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    served = _Served(FakeAPI(), {})
    served.socket = tls.wrap_socket(served.socket, server_side=True)
    threading.Thread(target=served.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path), "NO_COLOR": "1"}
        run = subprocess.run([sys.executable, "-m", "kubectl_desched", *DESCHEDULE, "--insecure-skip-tls-verify",
                              "-s", f"https://127.0.0.1:{served.server_address[1]}", "--token", "t0ken-abc",
                              "--dry-run=client"], capture_output=True, text=True, env=env, timeout=60)
    finally:
        served.shutdown()
        served.server_close()
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines() == ["warning: the server's certificate is not verified (insecure-skip-tls-verify)"]
    assert "Plan: 2 pods to evict" in run.stdout


# ---------------------------------------------------------------- a server address without a scheme

SECRET = "bare-h0st-T0KEN"


class FirstBytes:
    """A TCP listener that keeps what each connection sends first, then closes it: whatever the client speaks, TLS
    or plain HTTP, what reached the wire is here."""

    def __init__(self) -> None:
        import socket

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            with conn:
                conn.settimeout(5)
                try:
                    self.received.append(conn.recv(65536))
                except OSError:
                    self.received.append(b"")


@pytest.fixture
def first_bytes() -> Iterator[FirstBytes]:
    listener = FirstBytes()
    yield listener
    listener.sock.close()


@pytest.mark.parametrize("from_flag", [True, False], ids=["-s", "kubeconfig"])
def test_a_bare_host_with_tls_settings_is_spoken_to_in_tls_only(tmp_path: Path, first_bytes: FirstBytes,
                                                                from_flag: bool) -> None:
    """The reviewer's case: `-s 127.0.0.1:PORT` over a kubeconfig with insecure-skip-tls-verify sent plain HTTP,
    the Authorization header in it. client-go makes a bare host https when there are TLS settings: so do we, and
    what reaches the listener is a TLS ClientHello, never the token."""
    from kubectl_desched.kube.live import request_json

    bare = f"127.0.0.1:{first_bytes.port}"
    config = _one_cluster(tmp_path / "config", {"server": "https://unused.example:1" if from_flag else bare,
                                                "insecure-skip-tls-verify": True}, {"token": SECRET})
    conn = connect(KubeOptions(kubeconfig=str(config), request_timeout=5,
                               flags=ConnectionFlags(server=bare if from_flag else None)))
    assert conn.api.configuration.host == f"https://{bare}"
    with pytest.raises(Exception):  # noqa: B017 (the listener speaks no TLS: what it received is what is checked)
        request_json(conn, "GET", "/api/v1/nodes")
    assert first_bytes.received
    for data in first_bytes.received:
        assert data.startswith(b"\x16\x03"), data[:80]  # a TLS handshake record
        assert SECRET.encode() not in data and b"uthorization" not in data


@pytest.mark.parametrize(("cluster", "user"), [
    ({"certificate-authority-data": "Q0E="}, {"token": SECRET}),
    ({}, {"client-certificate-data": "Q0VSVA==", "client-key-data": "S0VZ"}),
    ({"insecure-skip-tls-verify": True}, {}),
], ids=["ca", "client-certificate", "insecure"])
def test_a_bare_host_is_https_when_there_are_tls_settings(tmp_path: Path, cluster: dict[str, Any],
                                                          user: dict[str, Any]) -> None:
    config = _one_cluster(tmp_path / "config", {"server": "api.example:6443", **cluster}, user)
    cfg = connect(KubeOptions(kubeconfig=str(config))).api.configuration
    assert cfg.host == "https://api.example:6443"
    if "certificate-authority-data" in cluster:
        assert cfg.ssl_ca_cert  # the client loads a CA only for an https server
    if "client-certificate-data" in user:
        assert cfg.cert_file and cfg.key_file


def test_a_bare_host_without_tls_settings_is_http_only_without_credentials(tmp_path: Path) -> None:
    """client-go's http for a bare host without TLS settings holds when nothing secret would go in clear."""
    cfg = connect(KubeOptions(flags=ConnectionFlags(server="127.0.0.1:8080"))).api.configuration
    assert cfg.host == "http://127.0.0.1:8080"
    explicit = connect(KubeOptions(flags=ConnectionFlags(server="http://127.0.0.1:8080", token=SECRET)))
    assert explicit.api.configuration.host == "http://127.0.0.1:8080"  # written so: the user's choice, as kubectl


@pytest.mark.parametrize("user", [{"token": SECRET}, {"username": "admin", "password": SECRET},
                                  {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "false"}}],
                         ids=["token", "basic", "exec"])
@pytest.mark.parametrize("from_flag", [True, False], ids=["-s", "kubeconfig"])
def test_a_bare_host_without_tls_settings_is_refused_with_a_credential(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        first_bytes: FirstBytes, user: dict[str, Any], from_flag: bool) -> None:
    """client-go would send the credential over plain http; we refuse before anything is sent (the exec plugin is
    not even run), exit 2, and say what to write."""
    from tests.unit.kube.test_hostile_server import DESCHEDULE, assert_one_error_line, run_main

    bare = f"127.0.0.1:{first_bytes.port}"
    config = _one_cluster(tmp_path / "config", {"server": "https://unused.example:1" if from_flag else bare}, user)
    code, out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--kubeconfig", str(config),
                              *(["-s", bare] if from_flag else []))
    where = "-s/--server" if from_flag else 'cluster "a": server'
    line = assert_one_error_line(err, f"error: {where}: no https:// and no TLS settings, so it would be plain http")
    assert line.endswith("write https://, or http:// if you mean it")
    assert (code, out) == (2, "")
    assert SECRET not in err
    assert first_bytes.received == []


@pytest.mark.parametrize(("server", "message"), [
    ("api:6443/prefix", "without https:// or http:// it must be a bare host[:port], as in client-go"),
    ("https://exa%mple:6443", "not a URL: the host or port is not valid"),
    ("https://api:6443/p\ra", "must not contain line breaks or control characters"),
])
def test_server_flag_mistakes_found_with_client_gos_rules(server: str, message: str) -> None:
    from kubectl_desched.cli import checks

    with pytest.raises(UsageError) as info:
        checks.server_url(server)
    assert str(info.value) == f"-s/--server: {message}"


@pytest.mark.parametrize(("token", "message"), [
    ("abc\ndef", "--token: must not contain line breaks or control characters"),
    ("abc\r\n def", "--token: must not contain line breaks or control characters"),  # a folded header line
    ("abc\x00def", "--token: must not contain line breaks or control characters"),
    ("tök€n", "--token: must be ASCII text"),
])
def test_a_token_flag_that_cannot_be_a_header_is_refused(token: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        ConnectionFlags(token=token).check()
    assert str(info.value) == message
    ConnectionFlags(token="abc-def\n").check()  # a line end is trimmed, as from a token file


def test_request_raw_reads_with_the_callers_bound_and_can_keep_a_body_out_of_the_log(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    import urllib3

    from kubectl_desched.kube import httplog
    from kubectl_desched.kube.live import request_raw

    kc = _kubeconfig(tmp_path / "config", current="c", clusters={"k": "https://a.example:6443"},
                     contexts={"c": {"cluster": "k", "user": "u"}}, users={"u": {"token": "t1234"}})
    conn = connect(KubeOptions(kubeconfig=str(kc)))
    body = b'{"data": {"prometheusAuthToken": "c2VjcmV0LXRva2Vu"}}'

    class Answer:
        status = 200
        data = None
        response = urllib3.HTTPResponse(body=io.BytesIO(body), status=200, preload_content=False)

    conn.api.call_api = lambda *_a, **_k: Answer()  # type: ignore[method-assign]
    read: list[int] = []
    httplog.set_verbosity(8)
    try:
        got = request_raw(conn, "GET", "/api/v1/namespaces/x/secrets/y", log_body=False,
                          read=lambda stream: read.append(1) or stream.read())
    finally:
        httplog.set_verbosity(0)
    assert got == body and read == [1]
    err = capsys.readouterr().err
    assert "c2VjcmV0LXRva2Vu" not in err and "[not shown: it may hold a secret]" in err
