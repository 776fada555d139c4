"""A loopback HTTPS proxy between kubectl-desched and the real kube-apiserver that breaks chosen requests.

It terminates TLS with its own throw-away certificate (the tool's kubeconfig points at the proxy and trusts
that certificate) and re-originates each request to the apiserver, because injecting an HTTP 500 needs to see
HTTP: a plain TCP relay could only cut connections. The bearer token passes through untouched.

A rule decides, per request, one of:
  pass        forward and relay the answer
  500         answer 500 without forwarding (the server never saw it)
  drop        close the connection without forwarding (never saw it)
  drop-after  forward (the server applies it), then close without answering: a lost response
  hang-after  forward, then hold the answer past the client's timeout and close: a timed-out response
  truncate    forward, then relay the answer with its status but only the first half of its body (and a
              Content-Length that matches): a 2xx whose JSON is cut short
  Canned(...) answer with this status, content type and body without forwarding (the server never saw it):
              an HTML page from a proxy with a 200, an error Status whose message is hostile
  html-after  forward, then answer the server's status with an HTML page as the body (a proxy's error page)
  cut-after   forward, then answer the server's status with the first half of its body (a complete HTTP
              message whose JSON is cut short)
  404         answer 404 "page not found" as text without forwarding (a proxy that does not know the path)
  stall-after forward, then send the answer's status, headers and first half of its body, and the rest never:
              the connection stays open, silent, for `hang` seconds (a server that stops mid-answer)
A rule may block (e.g. to line up concurrent requests); it runs outside the proxy's lock.
Every request is logged with its action and the upstream status, so a test can prove what reached the server.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass(frozen=True)
class Canned:
    """An answer the proxy makes up instead of forwarding."""

    status: int
    body: bytes
    content_type: str = "application/json"

    @classmethod
    def html(cls, status: int = 200) -> Canned:
        return cls(status, b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
                           b"<body><center>nginx</center></body></html>", "text/html")

    @classmethod
    def status_message(cls, code: int, message: str) -> Canned:
        """A Kubernetes error Status saying `message`."""
        return cls(code, json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                     "message": message, "code": code}).encode())


Rule = Callable[[str, str, int], str | Canned]  # (method, path, nth time this method+path was seen) -> action


@dataclass
class Seen:
    method: str
    path: str
    action: str
    upstream: int | None  # the apiserver's status; None if it never saw the request


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (openssl: the standard library cannot make one)."""
    cert, key = directory / "proxy.crt", directory / "proxy.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


class FaultProxy:
    def __init__(self, upstream: str, upstream_ca: Path, work_dir: Path, rule: Rule, hang: float = 4.0) -> None:
        self.upstream = urlsplit(upstream)
        self.upstream_ssl = ssl.create_default_context(cafile=str(upstream_ca))
        self.rule = rule
        self.hang = hang
        self.cert, key = self_signed(work_dir)
        self.log: list[Seen] = []
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}
        server_ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_ssl.load_cert_chain(self.cert, key)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.socket = server_ssl.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def kubeconfig(self, admin_kubeconfig: Path, out: Path) -> Path:
        """The admin kubeconfig with its server swapped for the proxy, trusting the proxy's certificate."""
        config = json.loads(admin_kubeconfig.read_text())
        for c in config["clusters"]:
            c["cluster"] = {"server": self.url, "certificate-authority": str(self.cert)}
        out.write_text(json.dumps(config))
        return out

    def seen(self, method: str | None = None, suffix: str = "") -> list[Seen]:
        with self._lock:
            return [s for s in self.log if (method is None or s.method == method) and s.path.endswith(suffix)]

    def wait_until_seen(self, method: str, suffix: str, proc: subprocess.Popen[Any], timeout: float = 60) -> None:
        """Until a `method` request for a path ending in `suffix` has reached the proxy; fails if `proc` ends first."""
        deadline = time.monotonic() + timeout
        while not self.seen(method, suffix):
            if proc.poll() is not None:
                raise AssertionError(f"exit {proc.returncode} before {method} ...{suffix}: {proc.communicate()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {method} ...{suffix} within {timeout} s")
            time.sleep(0.05)

    def _decide(self, method: str, path: str) -> str | Canned:
        with self._lock:
            key = (method, path)
            self._counts[key] = self._counts.get(key, 0) + 1
            nth = self._counts[key]
        return self.rule(method, path, nth)

    def _record(self, s: Seen) -> None:
        with self._lock:
            self.log.append(s)

    def _forward(self, method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any, bytes]:
        conn = http.client.HTTPSConnection(self.upstream.hostname or "127.0.0.1", self.upstream.port,
                                           context=self.upstream_ssl, timeout=30)
        try:
            conn.request(method, target, body=body or None, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path
                action = proxy._decide(self.command, path)
                if isinstance(action, Canned):
                    proxy._record(Seen(self.command, path, f"canned-{action.status}", None))
                    self._send(action.status, [("Content-Type", action.content_type)], action.body)
                    return
                if action in ("drop", "500", "404"):
                    proxy._record(Seen(self.command, path, action, None))
                    if action == "drop":
                        self.close_connection = True
                        return
                    if action == "404":
                        self._answer(404, "text/plain; charset=utf-8", b"404 page not found\n")
                        return
                    payload = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                          "message": "injected by the fault proxy", "code": 500}).encode()
                    self._answer(500, "application/json", payload)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
                status, resp_headers, data = proxy._forward(self.command, self.path, headers, body)
                proxy._record(Seen(self.command, path, action, status))
                if action in ("drop-after", "hang-after"):
                    if action == "hang-after":
                        time.sleep(proxy.hang)
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if action == "html-after":
                    self._answer(status, "text/html", b"<html><head><title>502</title></head><body>"
                                                      b"<h1>Bad Gateway</h1></body></html>")
                    return
                if action == "stall-after":
                    self._send(status, resp_headers, data, upto=len(data) // 2)
                    self.wfile.flush()
                    time.sleep(proxy.hang)
                    self.close_connection = True
                    return
                if action in ("truncate", "cut-after"):
                    data = data[:len(data) // 2]
                self._send(status, resp_headers, data)

            def _send(self, status: int, headers: list[tuple[str, str]], data: bytes, upto: int | None = None) -> None:
                """The answer with its full Content-Length; only its first `upto` bytes when given."""
                self.send_response(status)
                for k, v in headers:
                    if k.lower() not in HOP_HEADERS:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data if upto is None else data[:upto])

            def _answer(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        return Handler
