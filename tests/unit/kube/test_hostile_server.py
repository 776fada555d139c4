"""A broken or hostile API server: 2xx answers that are cut short, HTML or not an object, and error messages with
newlines, terminal escapes or 2 MB of text. Each ends as one printable `error:` line (and the report's `error`),
never a traceback; nothing is evicted. The transport is replaced here; tests/integration/test_hostile_server_live.py
puts the fault proxy in front of a real kube-apiserver."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from kubectl_desched import app
from kubectl_desched.app import loading as _loading  # noqa: F401  (app imports its parts on first use)
from kubectl_desched.cli import main as cli
from kubectl_desched.errors import DeschedError
from kubectl_desched.kube import access, live
from kubectl_desched.kube.config import Connection
from kubectl_desched.sanitize import LINE_LIMIT, SERVER_TEXT_LIMIT, one_line, shown
from tests import builders as b

NODES, PODS, PDBS = "/api/v1/nodes", "/api/v1/pods", "/apis/policy/v1/poddisruptionbudgets"
NODE_METRICS = "/apis/metrics.k8s.io/v1beta1/nodes"
HTML = b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
TAINT = {"key": "maintenance", "value": "soon", "effect": "NoSchedule"}

# The bodies a broken proxy or server sends with a 200, and how the error line names the problem.
BROKEN_BODIES: list[tuple[str, bytes, str]] = [
    ("cut-short", b'{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"na', "cut short after"),
    ("html", HTML, "bytes of HTML or XML starting '<!DOCTYPE html>"),
    ("empty-array", b"[]", "was not a JSON object but an array"),
    ("not-utf8", b"\xff\xfe\xfa\x00garbage", "was not JSON"),
    ("items-not-a-list", b'{"kind":"PodList","items":{"a":1}}', "was not a list: its items are an object"),
    ("bad-continue", b'{"metadata":{"continue":7},"items":[]}', "its metadata.continue is a number"),
]
FORGED = "denied\nerror: everything is fine, all pods evicted\r\x1b[2J\x1b]0;owned\x07\x9b31m\u202egnp.exe"


class FakeAPI:
    """Serves nodes, pods (all on a tainted node, so RemovePodsViolatingNodeTaints proposes them), PDBs, node
    metrics and access reviews in one page each; `broken` maps a path to the raw body sent instead, with 200."""

    def __init__(self, broken: dict[str, bytes] | None = None, errors: dict[str, ApiException] | None = None) -> None:
        self.lists: dict[str, list[dict[str, Any]]] = {
            NODES: [b.node("n1", taints=[TAINT]), b.node("n2")],
            PODS: [b.pod(f"web-{i}", "n1", namespace="shop") for i in range(2)],
            PDBS: [], NODE_METRICS: [b.node_metrics("n1", "1"), b.node_metrics("n2", "1")],
        }
        self.broken = broken or {}
        self.errors = errors or {}
        self.calls: list[tuple[str, str]] = []

    def __call__(self, conn: Any, method: str, path: str, *, query: Any = None, body: Any = None,
                 timeout: Any = None, accept: str = "", head: Any = None) -> bytes:
        self.calls.append((method, path))
        if path in self.errors:
            raise self.errors[path]
        if path in self.broken:
            return self.broken[path]
        if method == "POST" and path == access.SSAR_PATH:
            return json.dumps({**body, "status": {"allowed": True}}).encode()
        if method != "GET":
            raise AssertionError(f"{method} {path} must not be sent")
        if path.startswith(NODES + "/"):
            name = path.rsplit("/", 1)[1]
            return json.dumps(next(n for n in self.lists[NODES] if n["metadata"]["name"] == name)).encode()
        list_path = PDBS if path.endswith("/poddisruptionbudgets") else path
        items = self.lists[list_path]
        field = dict(query or []).get("fieldSelector", "")
        if field.startswith("spec.nodeName="):
            items = [i for i in items if i["spec"]["nodeName"] == field.split("=", 1)[1]]
        return json.dumps({"metadata": {"resourceVersion": "9"}, "items": items}).encode()

    def sent(self, method: str) -> list[str]:
        return [p for m, p in self.calls if m == method]


def _conn() -> Connection:
    return Connection(api=None, server="https://example:6443", context="ctx", namespace="shop")  # type: ignore[arg-type]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeAPI:
    server = FakeAPI()
    monkeypatch.setattr(live, "request_raw", server)
    monkeypatch.setattr(app.loading, "connect", lambda _opts: _conn())
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    return server


def run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """cli.main() in process, as the console script runs it: its exit code, stdout and stderr."""
    monkeypatch.setattr(sys, "argv", ["kubectl-desched", *args])
    with pytest.raises(SystemExit) as done:
        cli.main()
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def assert_one_error_line(err: str, *fragments: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "\x1b" not in err and "\x9b" not in err and "\u202e" not in err and "\r" not in err
    return lines[0]


DESCHEDULE = ["deschedule", "--plugin", "RemovePodsViolatingNodeTaints", "-n", "shop"]


# ---------------------------------------------------------------- the sanitizer itself

@pytest.mark.parametrize(("raw", "clean"), [
    ("plain text stays", "plain text stays"),
    ("two\nlines", "two\\nlines"),
    ("cr\rlf\r\n", "cr\\rlf"),  # the trailing line break is stripped, the inner ones shown
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("csi\x9b2J", "csi\\x9b2J"),
    ("bell\x07 del\x7f nul\x00", "bell\\x07 del\\x7f nul\\x00"),
    ("bidi \u202eevil", "bidi \\u202eevil"),
    ("sep\u2028line\u2029para\x85end", "sep\\u2028line\\u2029para\\x85end"),
    ("tab\there", "tab\\there"),
    ("unicode ünïcödé ✓ stays", "unicode ünïcödé ✓ stays"),
])
def test_one_line_escapes_what_a_terminal_acts_on(raw: str, clean: str) -> None:
    assert one_line(raw) == clean
    assert len(one_line(raw).splitlines()) <= 1


def test_one_line_cuts_a_long_text_with_a_marker() -> None:
    text = one_line("x" * 2_000_000)
    assert text.startswith("x" * SERVER_TEXT_LIMIT)
    assert text.endswith("... [cut: 2,000,000 characters in all]")
    assert len(text) < SERVER_TEXT_LIMIT + 50
    escaped = one_line("\x1b" * 1000, 20)  # escapes count toward the limit and are never cut in half
    assert escaped.startswith("\\x1b" * 5 + "...")


def test_shown_quotes_a_typed_value_short() -> None:
    assert shown("9" * 400).startswith("'" + "9" * 60 + "... [cut: 400 characters")
    assert shown("a'b\n") == "'a\\'b'"


# ---------------------------------------------------------------- server error messages

def _status(code: int, message: str) -> ApiException:
    e = ApiException(status=code, reason="Internal Server Error")
    e.body = json.dumps({"kind": "Status", "status": "Failure", "message": message, "code": code})
    return e


@pytest.mark.parametrize("message", [FORGED, "x" * 2_000_000, "\n\n\n", "ok\x00\x00"])
def test_api_message_is_one_printable_bounded_line(message: str) -> None:
    text = live.api_message(_status(500, message))
    assert "\n" not in text and "\r" not in text and "\x1b" not in text and "\x00" not in text
    assert len(text) <= SERVER_TEXT_LIMIT + 50
    err = live.describe_api_error(_status(500, message), "reading the cluster", "https://x")
    assert len(str(err).splitlines()) == 1


def test_reason_phrase_and_transport_errors_are_sanitized_too() -> None:
    e = ApiException(status=502, reason="Bad\nGateway\x1b[2J")
    assert live.api_message(e) == "Bad\\nGateway\\x1b[2J"
    lost = urllib3.exceptions.MaxRetryError(None, "/", urllib3.exceptions.ProtocolError("reset\nerror: forged"))
    assert "\n" not in str(live.describe_api_error(lost, "reading", "https://x"))
    odd = live.describe_api_error(ValueError("a\x1b]0;title\x07b" * 100), "reading", "https://x")
    assert "\x1b" not in str(odd) and len(str(odd)) < 300


@pytest.mark.parametrize("path", [NODES, PODS, PDBS])
def test_error_status_with_a_forged_line_is_one_error_line(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], fake: FakeAPI,
                                                           path: str) -> None:
    fake.errors[path] = _status(500, FORGED)
    code, _out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--yes", "--report", "r.json")
    assert code == 1
    line = assert_one_error_line(err, "reading the cluster: denied\\nerror: everything is fine", "(500)")
    assert "everything is fine" not in err.replace(line, "")
    report = json.loads(Path("r.json").read_text())
    assert report["error"] == line.removeprefix("error: ")
    assert fake.sent("POST") == []


def test_a_2mb_error_message_is_cut(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                    fake: FakeAPI) -> None:
    fake.errors[PODS] = _status(500, "\x1b[41m" + "A" * 2_000_000)
    code, _out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--yes")
    assert code == 1
    line = assert_one_error_line(err, "\\x1b[41mAAAA", "[cut: 2,000,005 characters in all]")
    assert len(line) < SERVER_TEXT_LIMIT + 120


def test_the_final_guard_catches_any_error_text(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def boom(**_kw: Any) -> None:
        raise DeschedError("from a file: line one\nerror: forged\x1b[2J" + "z" * 5000)

    monkeypatch.setattr(cli, "cli", type("C", (), {"main": staticmethod(boom)}))
    code, _out, err = run_main(monkeypatch, capsys, "version")
    assert code == 1
    line = assert_one_error_line(err, "line one\\nerror: forged\\x1b[2J", "[cut:")
    assert len(line) < LINE_LIMIT + 60


# ---------------------------------------------------------------- 2xx answers that are not JSON

@pytest.mark.parametrize(("name", "body", "fragment"), BROKEN_BODIES, ids=[c[0] for c in BROKEN_BODIES])
def test_decode_json_names_the_request_and_the_problem(name: str, body: bytes, fragment: str) -> None:
    with pytest.raises(live.NotJSON) as err:
        live.list_page(body, PODS)
    assert str(err.value).startswith(f"the answer to GET {PODS} ")
    assert fragment in str(err.value)
    assert len(str(err.value).splitlines()) == 1
    # a lost answer to every caller that handles a dropped connection, and still a JSONDecodeError
    assert isinstance(err.value, urllib3.exceptions.HTTPError) and isinstance(err.value, json.JSONDecodeError)


@pytest.mark.parametrize("path", [NODES, PODS, PDBS, NODE_METRICS])
@pytest.mark.parametrize(("name", "body", "fragment"), BROKEN_BODIES[:3], ids=[c[0] for c in BROKEN_BODIES[:3]])
def test_a_broken_list_is_one_error_line_and_in_the_report(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], fake: FakeAPI,
                                                           path: str, name: str, body: bytes, fragment: str) -> None:
    fake.broken[path] = body
    extra = ["--plugin", "LowNodeUtilization", "--use-metrics"] if path == NODE_METRICS else []
    args = ["balance", "-n", "shop", *extra] if extra else DESCHEDULE
    code, _out, err = run_main(monkeypatch, capsys, *args, "--yes", "--report", "r.json")
    assert code == 1
    line = assert_one_error_line(err, f"reading the cluster: the answer to GET {path} ", fragment)
    report = json.loads(Path("r.json").read_text())
    assert report["error"] == line.removeprefix("error: ") and report["evictions"] == []
    assert fake.sent("POST") == []


@pytest.mark.parametrize("path", [f"{NODES}/n1", PODS, "/apis/policy/v1/namespaces/shop/poddisruptionbudgets"])
@pytest.mark.parametrize(("name", "body", "fragment"), BROKEN_BODIES[:2], ids=[c[0] for c in BROKEN_BODIES[:2]])
def test_explain_node_quick_read_of_a_broken_answer(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], fake: FakeAPI,
                                                    path: str, name: str, body: bytes, fragment: str) -> None:
    fake.broken[path] = body
    # -n shop: one namespace, read on its own (the cluster-wide LIST beside the pods has not come whole by then,
    # as on a real server; this one answers at once)
    monkeypatch.setattr(live._Beside, "done_without_error", lambda self: False)
    code, _out, err = run_main(monkeypatch, capsys, "explain", "node", "n1", "-n", "shop", "--plugin",
                               "RemovePodsViolatingNodeTaints")
    assert code == 1
    assert_one_error_line(err, f"reading node n1: the answer to GET {path} ", fragment)
    assert NODES not in [p for _m, p in fake.calls]  # it was the quick read


@pytest.mark.parametrize(("body", "fragment"), [
    *((body, fragment) for _n, body, fragment in BROKEN_BODIES[:3]),
    (b'{"kind":"SelfSubjectAccessReview","status":"yes"}', "was not a SelfSubjectAccessReview: its status is a string"),
    (b'{"kind":"SelfSubjectAccessReview"}', "its status is null"),
])
def test_a_broken_access_review_stops_before_the_prompt(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], fake: FakeAPI,
                                                        body: bytes, fragment: str) -> None:
    fake.broken[access.SSAR_PATH] = body
    code, _out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--yes", "--report", "r.json")
    assert code == 1
    line = assert_one_error_line(
        err, f"checking permissions (SelfSubjectAccessReview): the answer to POST {access.SSAR_PATH} ", fragment)
    report = json.loads(Path("r.json").read_text())
    assert report["error"] == line.removeprefix("error: ")
    assert report["confirmation"] is None and report["evictions"] == []
    assert fake.sent("POST") == [access.SSAR_PATH] * len(fake.sent("POST"))  # no eviction was sent


def test_allowed_must_be_true_not_truthy(fake: FakeAPI) -> None:
    fake.broken[access.SSAR_PATH] = b'{"status": {"allowed": "yes"}}'
    assert access.allowed(_conn(), access.Permission("create", "pods", subresource="eviction")) is False


def test_read_cluster_wraps_a_broken_page_in_one_line(fake: FakeAPI) -> None:
    fake.broken[PODS] = HTML
    with pytest.raises(DeschedError) as err:
        live.read_cluster(_conn())
    assert str(err.value).startswith(f"reading the cluster: the answer to GET {PODS} was not JSON (")


# ---------------------------------------------------------------- answers without end, over a real socket

Hostile = Callable[[http.server.BaseHTTPRequestHandler], None]


class _Handler(http.server.BaseHTTPRequestHandler):
    """FakeAPI's answers over HTTP; a path in the server's `hostile` map is answered by that writer instead."""

    protocol_version = "HTTP/1.1"
    server: _Served

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def _answer(self, method: str) -> None:
        url = urlsplit(self.path)
        hostile = self.server.hostile.get(url.path)
        if hostile is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client stopped reading, rightly
                hostile(self)
            return
        size = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(size)) if size else None
        data = self.server.fake(None, method, url.path, query=parse_qsl(url.query), body=body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


class _Served(http.server.ThreadingHTTPServer):
    daemon_threads = True  # a writer without end stops when the client leaves; nothing waits for it

    def __init__(self, fake: FakeAPI, hostile: dict[str, Hostile]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake, self.hostile = fake, hostile


@pytest.fixture
def http_fake() -> Iterator[_Served]:
    served = _Served(FakeAPI(), {})
    thread = threading.Thread(target=served.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield served
    served.shutdown()
    served.server_close()


def _node_list_without_end(chunked: bool) -> Hostile:
    """A 200 NodeList that never ends: with Transfer-Encoding chunked, or with a Content-Length of 1 TB."""
    def write(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header(*(("Transfer-Encoding", "chunked") if chunked else ("Content-Length", str(10 ** 12))))
        h.end_headers()
        piece = b'{"kind":"NodeList","metadata":{"resourceVersion":"9"},"items":['
        item = json.dumps(b.node("n9")).encode() + b","
        while True:
            piece += item * (65536 // len(item))
            h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            piece = b""
    return write


# The child reads with a lower limit, so the test is quick and its bound on memory tight; the real limit is the
# same code with another number (checked below). At its exit it writes its peak RSS (VmHWM: the peak since exec;
# ru_maxrss would count the pytest process it was forked from).
_CHILD = """
import atexit, os, re, sys
from kubectl_desched.kube import live
live.ANSWER_LIMIT = 16 << 20
def peak():
    with open("/proc/self/status") as f, open("peak", "w") as out:
        out.write(re.search(r"VmHWM:\\s*(\\d+) kB", f.read()).group(1))
atexit.register(peak)
from kubectl_desched.cli.main import main
main()
"""
_KILL_ABOVE = 1 << 30  # an unbounded read would take the machine's memory: stop it well before


def _run_measured(args: list[str], tmp_path: Path) -> tuple[int, str, str, int]:
    """The CLI in a child process: its exit code, stdout, stderr and peak RSS in bytes; killed if it grows past
    _KILL_ABOVE or runs 20 s."""
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path), "NO_COLOR": "1"}
    out, err = (tmp_path / "out").open("w+"), (tmp_path / "err").open("w+")
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, *args], stdout=out, stderr=err, env=env, cwd=tmp_path)
    start = time.monotonic()
    while proc.poll() is None:
        rss = int(Path(f"/proc/{proc.pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        if rss > _KILL_ABOVE or time.monotonic() - start > 20:
            proc.kill()
            proc.wait()
            pytest.fail(f"the read was not bounded: {rss >> 20} MiB after {time.monotonic() - start:.1f} s")
        time.sleep(0.05)
    out.seek(0)
    err.seek(0)
    return proc.returncode, out.read(), err.read(), int((tmp_path / "peak").read_text()) << 10


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads the child's memory from /proc")
@pytest.mark.parametrize("chunked", [True, False], ids=["endless-chunked", "content-length-1TB"])
def test_an_answer_without_end_is_read_to_the_limit_and_no_further(http_fake: _Served, tmp_path: Path,
                                                                    chunked: bool) -> None:
    http_fake.hostile[NODES] = _node_list_without_end(chunked)
    server = f"http://127.0.0.1:{http_fake.server_address[1]}"
    code, out, err, peak = _run_measured([*DESCHEDULE, "-s", server, "--token", "t0ken-abc"], tmp_path)
    assert code == 1, err
    assert err.splitlines() == [f"error: reading the cluster: the answer to GET {NODES} is larger than the 16 MiB "
                                "one answer may have"]
    assert out == ""
    assert peak < 160 << 20, f"peak RSS {peak >> 20} MiB"  # some 60 MiB of interpreter and client, twice 16 MiB


def test_the_answer_limit_is_generous_and_follows_the_chunk_size() -> None:
    assert live.answer_limit(_conn()) == 256 << 20  # the default --chunk-size of 500
    assert live.answer_limit(Connection(None, "", "", "", chunk_size=5000)) == 2560 << 20  # type: ignore[arg-type]
    assert live.answer_limit(Connection(None, "", "", "", chunk_size=0)) == 8 << 30  # type: ignore[arg-type]
