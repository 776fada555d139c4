"""Reading a Prometheus query (kube/prometheus.py) through the CLI, against a fake Prometheus on loopback (plain
http, and https with a self-signed certificate made by openssl) and through the API server's service proxy (the
transport replaced, as test_hostile_server.py does). Every bad answer is one `error:` line, exit 1 (2 for bad
flags or policy), nothing sent to the cluster, no traceback, no token shown."""

from __future__ import annotations

import base64
import contextlib
import http.server
import io
import json
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes.client.exceptions import ApiException

from kubectl_desched import app
from kubectl_desched.app import loading as _loading  # noqa: F401  (app imports its parts on first use)
from kubectl_desched.kube import live
from kubectl_desched.kube.prometheus import Service, Target, parse_target
from kubectl_desched.sanitize import forget_held
from tests import builders as b
from tests.unit.kube.test_hostile_server import _conn, assert_one_error_line, run_main

QUERY = "instance:node_cpu:ratio"
SAMPLES = {"n1": 0.9, "n2": 0.1, "n3": 0.3}
TOKEN = "pr0m-T0KEN-never-shown"
Handler = Callable[[http.server.BaseHTTPRequestHandler], None]


def vector(samples: dict[str, float | str], **more: Any) -> bytes:
    result = [{"metric": {"__name__": QUERY, "instance": k}, "value": [1767225600, str(v)]} for k, v in samples.items()]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}, **more}).encode()


def answer(body: bytes, status: int = 200, content_type: str = "application/json") -> Handler:
    def write(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return write


class FakeProm(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.handler: Handler = answer(vector(SAMPLES))
        self.requests: list[tuple[str, dict[str, list[str]], dict[str, str]]] = []

    @property
    def url(self) -> str:
        scheme = "https" if isinstance(self.socket, ssl.SSLSocket) else "http"
        return f"{scheme}://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: FakeProm

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        self.server.requests.append((parts.path, parse_qs(parts.query), dict(self.headers.items())))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client left
            self.server.handler(self)

    def log_message(self, *_args: Any) -> None:
        pass


def _serve(server: FakeProm) -> Iterator[FakeProm]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def prom() -> Iterator[FakeProm]:
    yield from _serve(FakeProm())


@pytest.fixture
def cert(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("makes the server's certificate with openssl")
    key, crt = tmp_path / "prom.key", tmp_path / "prom.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=prom",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(crt)],
                   check=True, capture_output=True)
    return key, crt


@pytest.fixture
def tls_prom(cert: tuple[Path, Path]) -> Iterator[FakeProm]:
    server = FakeProm()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert[1], cert[0])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    yield from _serve(server)


@pytest.fixture
def snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    b.isolate_from_the_user(tmp_path, monkeypatch)
    forget_held()
    objs = [b.node("n1"), b.node("n2"), b.node("n3")] + [b.pod(f"web-{i}", "n1", namespace="shop") for i in range(4)]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(b.cluster(*objs)))
    return path


def balance(snapshot: Path, *more: str) -> list[str]:
    return ["balance", "--from-file", str(snapshot), "-A", "--no-pager", "--keep-futile",
            "--prometheus-query", QUERY, *more]


def test_a_plan_says_what_it_measured(prom: FakeProm, snapshot: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", prom.url + "/"))
    assert (code, err) == (0, "")
    assert f"Measured: Prometheus {QUERY} at " in out and f"Prometheus at {prom.url}" in out
    assert "node over target: the node's MetricResource 90% > 50%" in out
    header = next(line for line in out.splitlines() if line.startswith("NODE "))
    assert "PROMETHEUS" in header.split()
    assert "Plan: 1 pod to evict" in out  # one per node: the query does not measure pods
    path, query, headers = prom.requests[0]
    assert path == "/api/v1/query" and query["query"] == [QUERY] and float(query["time"][0]) > 0
    assert "Authorization" not in headers


def test_json_and_explain_carry_the_values(prom: FakeProm, snapshot: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", prom.url, "-o", "json"))
    doc = json.loads(out)
    assert code == 0
    [measured] = doc["measurements"]
    assert (measured["query"], measured["values"]) == (QUERY, SAMPLES)
    assert {n["name"]: n["measured"]["percent"] for n in doc["nodes"]} == {"n1": 90, "n2": 10, "n3": 30}
    code, out, _err = run_main(monkeypatch, capsys, "explain", "node", "n1", "--from-file", str(snapshot),
                               "--prometheus-query", QUERY, "--prometheus-url", prom.url)
    assert code == 0 and f"Prometheus {QUERY} at " in out and ": 0.9 (90%)" in out


def test_a_policy_names_the_url_and_a_snapshot_needs_the_flag(prom: FakeProm, snapshot: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(json.dumps({
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
        "metricsProviders": [{"source": "Prometheus", "prometheus": {"url": "http://prometheus.monitoring.svc:9090"}}],
        "profiles": [{"name": "p", "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}},
                      "pluginConfig": [{"name": "LowNodeUtilization", "args": {
                          "thresholds": {"MetricResource": 30}, "targetThresholds": {"MetricResource": 50},
                          "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": QUERY}}}}]}]}))
    code, _out, err = run_main(monkeypatch, capsys, "run", "--policy", str(policy), "--from-file", str(snapshot))
    assert code == 2
    assert_one_error_line(err, "needs a Prometheus server to ask, and a snapshot (--from-file) has none",
                          "--prometheus-url")
    code, out, err = run_main(monkeypatch, capsys, "run", "--policy", str(policy), "--from-file", str(snapshot),
                              "--prometheus-url", prom.url, "--no-pager")
    assert code == 0 and "Plan: 1 pod to evict" in out


BAD_ANSWERS: list[tuple[str, Handler, str]] = [
    ("prometheus-error", answer(json.dumps({"status": "error", "errorType": "bad_data",
                                            "error": "1:9: parse error: unexpected <EOF>"}).encode(), 400),
     "HTTP 400: Prometheus refused the query: bad_data: 1:9: parse error: unexpected <EOF>"),
    ("server-error", answer(json.dumps({"status": "error", "errorType": "timeout",
                                        "error": "query timed out in expression evaluation"}).encode(), 503),
     "HTTP 503: Prometheus refused the query: timeout"),
    ("matrix", answer(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode()),
     "the query's result is a matrix, not the instant vector"),
    ("scalar", answer(json.dumps({"status": "success", "data": {"resultType": "scalar",
                                                                "result": [1, "0.5"]}}).encode()),
     "the query's result is a scalar"),
    ("nan", answer(vector({**SAMPLES, "n2": "NaN"})), "instance 'n2' has the value NaN"),
    ("inf", answer(vector({**SAMPLES, "n2": "+Inf"})), "instance 'n2' has the value +Inf, outside [0, 1]"),
    ("percent", answer(vector({**SAMPLES, "n3": 42})), "instance 'n3' has the value 42, outside [0, 1]"),
    ("negative", answer(vector({**SAMPLES, "n3": -0.1})), "outside [0, 1]"),
    ("duplicate", answer(json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"instance": "n1", "cpu": "0"}, "value": [1, "0.5"]},
        {"metric": {"instance": "n1", "cpu": "1"}, "value": [1, "0.7"]}]}}).encode()),
     "instance 'n1' has two samples: aggregate them"),
    ("no-instance", answer(json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"node": "n1"}, "value": [1, "0.5"]}]}}).encode()),
     "sample 0 (node=n1) has no instance label"),
    ("html", answer(b"<html><body>Bad Gateway</body></html>", 502, "text/html"),
     "HTTP 502: 37 bytes of HTML starting '<html><body>Bad Gateway</body></html>'"),
    ("not-json", answer(b"OK", 200, "text/plain"), "HTTP 200: the answer (2 bytes) was not JSON"),
    ("array", answer(b"[]"), "the answer was an array, not Prometheus's object"),
    ("empty-401", answer(b"", 401, "text/plain"), "HTTP 401 with an empty answer"),
    ("status-missing", answer(b'{"data": {}}'), "the answer's status is missing"),
]


@pytest.mark.parametrize("handler, fragment", [(h, f) for _n, h, f in BAD_ANSWERS],
                         ids=[n for n, _h, _f in BAD_ANSWERS])
def test_a_bad_answer_is_one_line_and_exit_1(handler: Handler, fragment: str, prom: FakeProm, snapshot: Path,
                                             monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                             ) -> None:
    prom.handler = handler
    code, out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", prom.url))
    assert code == 1 and out == ""
    line = assert_one_error_line(err, fragment)
    assert line.startswith(f"error: querying Prometheus at {prom.url}: ")


def test_an_unreachable_server_is_one_line(snapshot: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", f"http://127.0.0.1:{port}"))
    assert code == 1
    assert_one_error_line(err, f"querying Prometheus at http://127.0.0.1:{port}: cannot reach it: connection refused")


def test_a_huge_answer_stops_at_the_bound(prom: FakeProm, snapshot: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from kubectl_desched.kube import prometheus

    monkeypatch.setattr(prometheus, "ANSWER_LIMIT", 1 << 20)

    def endless(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(10 ** 12))
        h.end_headers()
        h.wfile.write(b'{"status":"success","data":{"resultType":"vector","result":[')
        while True:
            h.wfile.write(b'{"metric":{"instance":"nX"},"value":[1,"0.5"]},' * 1000)

    prom.handler = endless
    code, _out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", prom.url))
    assert code == 1
    assert_one_error_line(err, "the answer is larger than the 1 MiB one answer may have")


def test_a_trickling_answer_stops_at_the_deadline(prom: FakeProm, snapshot: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    def trickle(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "1000000")
        h.end_headers()
        for _ in range(100):
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.2)

    prom.handler = trickle
    code, _out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", prom.url,
                                                             "--request-timeout", "1s"))
    assert code == 1
    assert_one_error_line(err, "the answer did not end within 1 s (--request-timeout sets the bound)")


def test_the_token_is_sent_and_never_shown(prom: FakeProm, snapshot: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                           ) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    prom.handler = answer(json.dumps({"status": "error", "errorType": "unauthorized",
                                      "error": f"bad token {TOKEN}"}).encode(), 403)
    code, _out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", prom.url,
                                                             "--prometheus-token-file", str(token_file), "-v", "9"))
    assert prom.requests[0][2]["Authorization"] == f"Bearer {TOKEN}"
    assert code == 1 and TOKEN not in err
    assert_one_error_line(err, "Prometheus refused the query: unauthorized: bad token <redacted>")


def test_tls_with_the_ca_file(tls_prom: FakeProm, cert: tuple[Path, Path], snapshot: Path,
                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", tls_prom.url))
    assert code == 1
    assert_one_error_line(err, "TLS error: certificate verify failed (--prometheus-ca-file names the CA")
    code, out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", tls_prom.url,
                                                            "--prometheus-ca-file", str(cert[1])))
    assert (code, err) == (0, "") and "Plan: 1 pod to evict" in out
    code, out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", tls_prom.url,
                                                            "--prometheus-insecure-skip-tls-verify"))
    assert code == 0
    assert err.splitlines() == ["warning: the Prometheus server's certificate is not verified "
                                "(--prometheus-insecure-skip-tls-verify)"]


@pytest.mark.parametrize("flags, fragment", [
    (["--prometheus-url", "ftp://p:21"], "is not an http:// or https:// URL"),
    (["--prometheus-url", "service/monitoring"], "is not service/NAMESPACE/[https:]NAME[:PORT][/PATH]"),
    (["--prometheus-url", "http://p:99999"], "is not a URL"),
    (["--prometheus-url", "http://p:9090?x=1"], "without a query or fragment"),
    (["--prometheus-url", "service/monitoring/prometheus:9090"], "needs a cluster connection"),
    (["--prometheus-url", "http://p", "--prometheus-token-file", "/nope"], "--prometheus-token-file /nope: no such"),
    (["--prometheus-url", "https://p", "--prometheus-ca-file", "/nope"], "--prometheus-ca-file /nope: no such file"),
    (["--prometheus-url", "https://me:hunter2@p"], "credentials in the URL are not sent"),
], ids=["scheme", "service-shape", "port", "query", "service-from-snapshot", "token-file", "ca-file", "user-info"])
def test_bad_flags_are_exit_2(flags: list[str], fragment: str, snapshot: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_main(monkeypatch, capsys, *balance(snapshot, *flags))
    assert code == 2
    assert_one_error_line(err, fragment)


def test_thresholds_other_than_metric_resource_are_exit_2(prom: FakeProm, snapshot: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_main(monkeypatch, capsys, *balance(snapshot, "--prometheus-url", prom.url,
                                                             "--thresholds", "cpu=20"))
    assert code == 2
    assert_one_error_line(err, "with source Prometheus, thresholds name MetricResource alone")
    assert not prom.requests


@pytest.mark.parametrize("text, target", [
    ("service/monitoring/prometheus-k8s:9090", Service("monitoring", "prometheus-k8s", "", "9090")),
    ("service/monitoring/https:prometheus-k8s:web/prom/", Service("monitoring", "prometheus-k8s", "https", "web",
                                                                  "/prom")),
    ("service/monitoring/prometheus", Service("monitoring", "prometheus")),
    ("http://prometheus.monitoring.svc:9090", Service("monitoring", "prometheus", "http", "9090")),
    ("https://prometheus-k8s.openshift-monitoring.svc.cluster.local:9091",
     Service("openshift-monitoring", "prometheus-k8s", "https", "9091")),
])
def test_service_targets(text: str, target: Service) -> None:
    assert parse_target(text, "--prometheus-url") == Target("--prometheus-url", service=target)


def test_a_service_name_in_cluster_is_asked_directly() -> None:
    assert parse_target("http://prometheus.monitoring.svc:9090", "x", in_cluster=True).url == \
        "http://prometheus.monitoring.svc:9090"


def test_proxy_paths() -> None:
    assert Service("monitoring", "prometheus-k8s", "https", "web", "/prom").proxy_path("/api/v1/query") == \
        "/api/v1/namespaces/monitoring/services/https:prometheus-k8s:web/proxy/prom/api/v1/query"
    assert Service("monitoring", "prometheus", "http", "9090").proxy_path("/api/v1/query") == \
        "/api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/query"


# ---------------------------------------------------------------- through the API server


class FakeAPI:
    """Nodes and pods, the service proxy's answer (`proxy`: a body, or an ApiException), and a Secret."""

    def __init__(self, proxy: bytes | ApiException, secret: dict[str, Any] | None = None) -> None:
        self.proxy, self.secret = proxy, secret
        self.calls: list[tuple[str, str, Any]] = []

    def __call__(self, conn: Any, method: str, path: str, *, query: Any = None, body: Any = None,
                 timeout: Any = None, accept: str = "", head: Any = None, read: Any = None,
                 log_body: bool = True) -> bytes:
        self.calls.append((method, path, query))
        assert method == "GET", f"{method} {path} must not be sent"
        if "/proxy/" in path:
            if isinstance(self.proxy, ApiException):
                raise self.proxy
            # as request_raw does with `read`: the caller's bounded read of the answer's stream
            return read(io.BufferedReader(io.BytesIO(self.proxy))) if read is not None else self.proxy
        if "/secrets/" in path:
            assert not log_body, "a Secret's body must stay out of -v 8"
            if self.secret is None:
                raise ApiException(status=404, reason="Not Found")
            return json.dumps(self.secret).encode()
        items = {"/api/v1/nodes": [b.node("n1"), b.node("n2"), b.node("n3")],
                 "/api/v1/pods": [b.pod(f"web-{i}", "n1", namespace="shop") for i in range(4)]}.get(path, [])
        return json.dumps({"metadata": {"resourceVersion": "9"}, "items": items}).encode()


@pytest.fixture
def live_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[FakeAPI], FakeAPI]:
    b.isolate_from_the_user(tmp_path, monkeypatch)
    forget_held()

    def use(api: FakeAPI) -> FakeAPI:
        monkeypatch.setattr(live, "request_raw", api)
        monkeypatch.setattr(app.loading, "connect", lambda _opts: _conn())
        return api
    return use


LIVE = ["balance", "-A", "--no-pager", "--keep-futile", "--dry-run=client", "--prometheus-query", QUERY]


def test_the_service_proxy_is_asked_with_the_users_connection(live_cluster: Callable[[FakeAPI], FakeAPI],
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    api = live_cluster(FakeAPI(vector(SAMPLES)))
    code, out, err = run_main(monkeypatch, capsys, *LIVE, "--prometheus-url", "service/monitoring/prometheus:9090")
    assert (code, err) == (0, "")
    assert "service monitoring/prometheus:9090 (through the API server)" in out
    [(_m, path, query)] = [c for c in api.calls if "/proxy/" in c[1]]
    assert path == "/api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/query"
    assert dict(query)["query"] == QUERY


def test_a_huge_answer_through_the_proxy_stops_at_the_bound(live_cluster: Callable[[FakeAPI], FakeAPI],
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from kubectl_desched.kube import prometheus

    monkeypatch.setattr(prometheus, "ANSWER_LIMIT", 1 << 20)
    live_cluster(FakeAPI(vector(SAMPLES) + b" " * (2 << 20)))
    code, _out, err = run_main(monkeypatch, capsys, *LIVE, "--prometheus-url", "service/monitoring/prometheus:9090")
    assert code == 1
    assert_one_error_line(err, "the answer is larger than the 1 MiB one answer may have")


def test_an_answer_nested_beyond_the_parser_is_one_line() -> None:
    from kubectl_desched.errors import DeschedError
    from kubectl_desched.kube.prometheus import parse_answer

    with pytest.raises(DeschedError):
        parse_answer(200, b"[" * 100_000, "querying P")


def test_an_api_server_error_without_a_body(live_cluster: Callable[[FakeAPI], FakeAPI],
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    live_cluster(FakeAPI(ApiException(status=503, reason="Service Unavailable")))
    code, _out, err = run_main(monkeypatch, capsys, *LIVE, "--prometheus-url", "service/monitoring/prometheus:9090")
    assert code == 1
    assert_one_error_line(err, "querying service monitoring/prometheus:9090 (through the API server): "
                               "Service Unavailable (503)")


def _api_error(status: int, body: dict[str, Any]) -> ApiException:
    e = ApiException(status=status, reason="x")
    e.body = json.dumps(body)
    return e


@pytest.mark.parametrize("error, fragment", [
    (_api_error(503, {"kind": "Status", "message": 'no endpoints available for service "prometheus"'}),
     'HTTP 503 from the API server: no endpoints available for service "prometheus"'),
    (_api_error(403, {"kind": "Status", "message": 'services "prometheus" is forbidden: User "u" cannot get '
                                                   'resource "services/proxy"'}),
     'cannot get resource "services/proxy"'),
    (_api_error(422, {"status": "error", "errorType": "execution", "error": "many-to-many matching not allowed"}),
     "HTTP 422: Prometheus refused the query: execution: many-to-many matching not allowed"),
], ids=["no-endpoints", "forbidden", "prometheus-error"])
def test_errors_through_the_proxy(error: ApiException, fragment: str, live_cluster: Callable[[FakeAPI], FakeAPI],
                                  monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    live_cluster(FakeAPI(error))
    code, _out, err = run_main(monkeypatch, capsys, *LIVE, "--prometheus-url", "service/monitoring/prometheus:9090")
    assert code == 1
    assert_one_error_line(err, fragment)


def _policy(tmp_path: Path, url: str, secret: bool = True) -> Path:
    prometheus: dict[str, Any] = {"url": url}
    if secret:
        prometheus["authToken"] = {"secretReference": {"namespace": "kube-system", "name": "prom-token"}}
    path = tmp_path / "policy.yaml"
    path.write_text(json.dumps({
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
        "metricsProviders": [{"source": "Prometheus", "prometheus": prometheus}],
        "profiles": [{"name": "p", "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}},
                      "pluginConfig": [{"name": "LowNodeUtilization", "args": {
                          "thresholds": {"MetricResource": 30}, "targetThresholds": {"MetricResource": 50},
                          "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": QUERY}}}}]}]}))
    return path


def test_the_policys_secret_holds_the_token(prom: FakeProm, live_cluster: Callable[[FakeAPI], FakeAPI],
                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    secret = {"kind": "Secret", "data": {"prometheusAuthToken": base64.b64encode(TOKEN.encode()).decode()}}
    api = live_cluster(FakeAPI(b"", secret))
    code, out, err = run_main(monkeypatch, capsys, "run", "--policy", str(_policy(tmp_path, prom.url)),
                              "--dry-run=client", "--no-pager")
    assert (code, err) == (0, "")
    assert ("GET", "/api/v1/namespaces/kube-system/secrets/prom-token", None) in api.calls
    assert prom.requests[0][2]["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in out


def test_a_missing_secret_is_one_line(prom: FakeProm, live_cluster: Callable[[FakeAPI], FakeAPI], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    live_cluster(FakeAPI(b"", None))
    code, _out, err = run_main(monkeypatch, capsys, "run", "--policy", str(_policy(tmp_path, prom.url)),
                               "--dry-run=client")
    assert code == 1
    assert_one_error_line(err, "reading the Prometheus token", "Secret kube-system/prom-token", "does not exist")
    assert not prom.requests


def test_a_policy_url_of_a_service_goes_through_the_proxy_without_the_token(
        live_cluster: Callable[[FakeAPI], FakeAPI], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    api = live_cluster(FakeAPI(vector(SAMPLES)))
    policy = _policy(tmp_path, "https://prometheus-k8s.openshift-monitoring.svc:9091")
    code, _out, err = run_main(monkeypatch, capsys, "run", "--policy", str(policy), "--dry-run=client", "--no-pager")
    assert code == 0
    assert "authToken: not sent" in err and len(err.splitlines()) == 1
    assert any(c[1] == "/api/v1/namespaces/openshift-monitoring/services/https:prometheus-k8s:9091/proxy/api/v1/query"
               for c in api.calls)
    assert not any("/secrets/" in c[1] for c in api.calls)
