"""--as, --as-group, --as-uid become kubectl's impersonation headers on every request, one Impersonate-Group header
line per group, and -v logs the requests as kubectl does: checked against a loopback HTTP server that records what
it received (the live tests prove the real apiserver honours them); the malformed combinations are usage errors."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubectl_desched.errors import UsageError
from kubectl_desched.kube import httplog
from kubectl_desched.kube.config import KubeOptions, connect
from kubectl_desched.kube.live import request_json
from kubectl_desched.kube.overrides import ConnectionFlags
from tests.unit.kube.test_config import _isolated  # noqa: F401  (autouse fixture: no real kubeconfig)


class Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[list[tuple[str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append(list(self.headers.items()))
        body = b'{"kind":"Status","message":"ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Recorder.seen = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    httplog.set_verbosity(0)  # -v is process-wide, as klog's


def get(server: str, **kw: Any) -> list[tuple[str, str]]:
    conn = connect(KubeOptions(flags=ConnectionFlags(server=server, token="tok-secret-123"), **kw))
    assert request_json(conn, "GET", "/version") == {"kind": "Status", "message": "ok"}
    return [(k, v) for k, v in Recorder.seen[-1] if k.startswith("Impersonate-")]


def test_headers_follow_the_flags(server: str) -> None:
    assert get(server) == []
    assert get(server, as_user="system:serviceaccount:team:deployer", as_groups=("team",), as_uid="42") == [
        ("Impersonate-User", "system:serviceaccount:team:deployer"), ("Impersonate-Uid", "42"),
        ("Impersonate-Group", "team")]


def test_each_group_is_its_own_header_line(server: str) -> None:
    assert sorted(get(server, as_user="u", as_groups=("a", "b,c", "d"))) == [
        ("Impersonate-Group", "a"), ("Impersonate-Group", "b,c"), ("Impersonate-Group", "d"), ("Impersonate-User", "u")]


@pytest.mark.parametrize("kw", [{"as_groups": ("g",)}, {"as_uid": "1"}])
def test_groups_or_uid_without_as_are_usage_errors(kw: dict[str, Any], server: str) -> None:
    with pytest.raises(UsageError, match="--as-group and --as-uid require --as"):
        get(server, **kw)


def test_v6_logs_each_request_and_v7_its_headers_without_the_token(server: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    get(server)
    assert capsys.readouterr().err == ""  # -v 0: nothing
    get(server, verbosity=6)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("I")
    assert f'"Response" verb="GET" url="{server}/version" status="200 OK" milliseconds=' in err[0]
    get(server, verbosity=8, as_user="u")
    err = capsys.readouterr().err
    assert 'authorization="bearer <masked>"' in err.lower() and 'Impersonate-User="u"' in err
    assert "tok-secret-123" not in err
    assert '"Response Body" body="{"kind":"Status","message":"ok"}"' in err


def test_a_failed_request_is_logged_with_its_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conn = connect(KubeOptions(flags=ConnectionFlags(server="http://127.0.0.1:9", token="t-0000"), verbosity=6,
                               request_timeout=2))
    with pytest.raises(Exception):  # noqa: B017 (the kind is the client's; the log line is what is checked)
        request_json(conn, "GET", "/version")
    err = capsys.readouterr().err
    assert '"Request failed" verb="GET" url="http://127.0.0.1:9/version"' in err
    httplog.set_verbosity(0)


@pytest.mark.parametrize(("kw", "message"), [
    ({"as_user": "alice\nX-Evil: 1"}, "--as: must not contain line breaks or control characters"),
    ({"as_user": "alice\r\n X-Evil: 1"}, "--as: must not contain line breaks or control characters"),  # folded
    ({"as_user": "a", "as_groups": ("ok", "g\r\nX: y")}, "--as-group: must not contain line breaks or control "
                                                          "characters"),
    ({"as_user": "a", "as_uid": "u\rx"}, "--as-uid: must not contain line breaks or control characters"),
    ({"as_user": "a\x00"}, "--as: must not contain line breaks or control characters"),
])
def test_a_value_that_would_break_the_header_is_refused_before_anything_is_sent(server: str, kw: dict[str, Any],
                                                                                 message: str) -> None:
    """A line break used to end in http.client's ValueError traceback, and `\\r\\n ` (a folded header line) went out
    to the server inside the Impersonate-User header."""
    with pytest.raises(UsageError) as info:
        get(server, **kw)
    assert str(info.value) == message
    assert Recorder.seen == []


def test_a_bad_impersonation_flag_is_a_usage_error_line(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str], server: str) -> None:
    from tests.unit.kube.test_hostile_server import DESCHEDULE, assert_one_error_line, run_main

    code, out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "-s", server, "--as", "alice\nX-Evil: 1")
    assert_one_error_line(err, "error: --as: must not contain line breaks or control characters")
    assert (code, out, Recorder.seen) == (2, "", [])


def test_names_beyond_ascii_go_out_as_utf8_as_kubectl_sends_them(server: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Characters outside latin-1 ended in a UnicodeEncodeError traceback; latin-1 ones went out as latin-1 bytes,
    a name the apiserver (which reads UTF-8) does not know. A tab is allowed, as Go's client allows it."""
    headers = get(server, as_user="jürgen", as_groups=("用户", "a\tb"), verbosity=7)
    # http.server reads header bytes as latin-1: encoding back gives the bytes that were sent
    assert [(k, v.encode("latin-1").decode()) for k, v in headers] == [
        ("Impersonate-User", "jürgen"), ("Impersonate-Group", "用户"), ("Impersonate-Group", "a\tb")]
    err = capsys.readouterr().err
    assert 'Impersonate-User="jürgen"' in err and 'Impersonate-Group="用户"' in err  # the -v 7 log, as kubectl's
