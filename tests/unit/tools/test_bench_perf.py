"""The parts of bench/perf.py and bench/linkproxy.py a wrong figure would come from: the relay passes bytes through
unchanged and really holds them back to its bandwidth, and the floor client finds the continue token in both
encodings (else it would read one page and call that the floor). The figures come from running the benchmark."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests import builders

BENCH = Path(__file__).resolve().parents[3] / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


linkproxy = _load("linkproxy")
perf = _load("perf")


def _proto(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def test_protobuf_continue_token() -> None:
    list_meta = _proto(2, b"12345") + _proto(3, b"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ") + b"\x20\x96\x01"  # + a varint
    pod_list = _proto(1, list_meta) + _proto(2, b"x" * 300) * 3
    answer = b"k8s\x00" + _proto(1, _proto(1, b"v1") + _proto(2, b"PodList")) + _proto(2, pod_list)
    assert perf.protobuf_continue(answer) == "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"
    assert perf.protobuf_continue(answer[:80]) == "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"  # its first bytes say it
    last_page = b"k8s\x00" + _proto(1, b"") + _proto(2, _proto(1, _proto(2, b"12345")))
    assert perf.protobuf_continue(last_page) == ""
    with pytest.raises(ValueError):
        perf.protobuf_continue(b'{"kind":"PodList"}')


def test_json_continue_token() -> None:
    head = (b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"abc_-=",'
            b'"remainingItemCount":5},"items":[{"metadata":{"name":"p","continue":"no"}}')
    assert perf.json_continue(head) == "abc_-="
    assert perf.json_continue(b'{"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[]}') == ""


def test_link_schedules_at_its_rate_and_delay() -> None:
    link = linkproxy.Link(8e6, 0.010)  # 1 MB/s, 10 ms one way
    first = link.schedule(100_000)
    second = link.schedule(100_000)
    assert second - first == pytest.approx(0.1)  # back to back: the second waits for the first to be sent
    assert first - time.monotonic() == pytest.approx(0.11, abs=0.01)


def test_only_loopback_addresses() -> None:
    assert linkproxy.loopback_address("127.0.0.1:6443") == ("127.0.0.1", 6443)
    assert linkproxy.loopback_address("[::1]:1") == ("::1", 1)
    with pytest.raises(argparse.ArgumentTypeError):
        linkproxy.loopback_address("10.0.0.1:6443")


async def _through_the_proxy(mbit: float, up: bytes, down: bytes) -> tuple[bytes, bytes, float]:
    """An upstream that answers `down` to whatever it received, a proxy in front, one client: what each end got
    and how long the client waited for the answer."""
    got_up = bytearray()

    async def upstream(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        got_up.extend(await r.readexactly(len(up)))
        w.write(down)
        await w.drain()
        w.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = await asyncio.start_server(
        lambda r, w: None, "127.0.0.1", 0)  # a free port for the proxy, handed over below
    proxy_port = proxy.sockets[0].getsockname()[1]
    proxy.close()
    await proxy.wait_closed()
    task = asyncio.create_task(linkproxy.serve(("127.0.0.1", proxy_port), ("127.0.0.1", port),
                                               linkproxy.Link(mbit * 1e6, 0.001), linkproxy.Link(mbit * 1e6, 0.001),
                                               1 << 20))
    for _ in range(100):
        try:
            r, w = await asyncio.open_connection("127.0.0.1", proxy_port)
            break
        except OSError:
            await asyncio.sleep(0.02)
    began = time.monotonic()
    w.write(up)
    await w.drain()
    answer = await r.readexactly(len(down))
    took = time.monotonic() - began
    w.close()
    task.cancel()
    server.close()
    return bytes(got_up), answer, took


def test_the_relay_passes_bytes_unchanged_and_holds_them_to_its_bandwidth() -> None:
    up, down = os.urandom(300_000), os.urandom(1_250_000)
    got_up, got_down, took = asyncio.run(_through_the_proxy(50.0, up, down))
    assert got_up == up and got_down == down
    assert took >= (len(up) + len(down)) * 8 / 50e6 * 0.5  # at 50 Mbit/s: 1.55 MB take 0.25 s; up and down overlap


def _pod_page(pods: list[dict], cont: str) -> bytes:
    return json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {"continue": cont}, "items": pods}).encode()


def test_decode_figure_decodes_every_page_and_keeps_every_pod() -> None:
    """The decode rows time the tool's own page parser over every page: a page it cannot take typed (a null
    where a list belongs) is still read, the slow way, and counted."""
    from kubectl_desched.kube.live import typed_page

    first = [builders.pod(f"a{i}", "n1") for i in range(30)]
    slow = builders.pod("b0", "n2")
    slow["spec"]["tolerations"] = None
    pages = [_pod_page(first, "next"), _pod_page([slow, builders.pod("b1", "n2")], "")]
    seen: list[int] = []

    def parse(data: bytes, path: str) -> tuple[list[Any], str]:
        items, cont = typed_page("Pod")(data, path)
        seen.append(len(items))
        return items, cont

    wall, cpu, objects = perf.decode_cpu(pages, parse)
    assert (seen, objects) == ([30, 2], 32)
    assert wall > 0 and cpu > 0
    with pytest.raises(ValueError):  # a page that is no list is not timed as if it were
        perf.decode_cpu([b'{"kind":"PodList","items":{}}'], typed_page("Pod"))


def _fake_python(tmp_path: Path, stderr: str, code: int) -> Path:
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nprintf '%s' '{stderr}' >&2\nexit {code}\n")
    script.chmod(0o755)
    return script


def test_decode_samples_are_the_alone_and_beside_figures(tmp_path: Path) -> None:
    line = ('@decode {"pages": 3, "objects": 1500, "bytes": 9, "alone": {"seconds": 6.5, "cpu": 6.25}, '
            '"beside": {"seconds": 10.5, "cpu": 10.25}}')
    found = perf.decode_samples(_fake_python(tmp_path, line + "\n", 0), tmp_path / "kubeconfig")
    assert {k: (s.seconds, s.cpu, s.info) for k, s in found.items()} == {
        perf.DECODE_ALONE: (6.5, 6.25, {"pages": 3, "objects": 1500}),
        perf.DECODE_BESIDE: (10.5, 10.25, {"pages": 3, "objects": 1500})}
    assert all(s.rss > 0 for s in found.values())  # the timer's: the process's peak
    with pytest.raises(RuntimeError, match="exited 1"):
        perf.decode_samples(_fake_python(tmp_path, line + "\n", 1), tmp_path / "kubeconfig")
    with pytest.raises(RuntimeError, match="exited 0"):  # no figure printed: no row
        perf.decode_samples(_fake_python(tmp_path, "nothing\n", 0), tmp_path / "kubeconfig")


def test_plans_of_the_two_reads_are_compared_but_for_when_and_how_they_were_made(tmp_path: Path) -> None:
    def plan(name: str, made: str, arguments: list[str], candidates: list[str]) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({"identity": {"madeAt": made, "arguments": arguments, "server": "s"},
                                    "candidates": [{"pod": c} for c in candidates]}))
        return path

    a = plan("a", "t1", ["balance"], ["p1", "p2"])
    assert perf.same_document(a, plan("b", "t2", ["balance", "--protobuf"], ["p1", "p2"])) == \
        "identical plans of 2 candidates"
    assert perf.same_document(a, plan("c", "t1", ["balance"], ["p2", "p1"])) == "DIFFERENT: 2 and 2 candidates"


def test_the_live_and_snapshot_plans_are_not_comparable_where_their_schedulers_differ(tmp_path: Path) -> None:
    """The generated kubelets run an older minor than the bench API server: the two estimates then follow two
    schedulers (BalancedAllocation changed in 1.36), and the bench says so beside DIFFERENT."""
    def plan(name: str, candidates: list[str]) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({"candidates": [{"namespace": "ns", "pod": c, "reason": "r"} for c in candidates]}))
        return path

    live, snap = plan("live", ["p1", "p2"]), plan("snap", ["p1", "p3"])
    assert perf.same_plan(live, plan("same", ["p1", "p2"]), "v1.36.3", "v1.34.1") == "same 2 candidates"
    assert perf.same_plan(live, snap, "v1.36.3", "v1.36.0") == "DIFFERENT: 2 live, 2 from the snapshot"
    assert perf.same_plan(live, snap, "v1.36.3", "v1.34.1") == (
        "DIFFERENT: 2 live, 2 from the snapshot (not comparable: the live estimate follows the API server's "
        "v1.36.3, the snapshot's its kubelets' v1.34.1)")
    assert perf.same_plan(live, snap, "", "v1.34.1").endswith("from the snapshot")  # no version: nothing to say


def test_the_client_floor_gets_the_node_with_the_kubeconfig_s_credentials(tmp_path: Path) -> None:
    """explain node's floor: the kubernetes client, the kubeconfig read its way, one GET of the node. It must
    really ask (with the credentials) and fail on an answer that is not the node."""
    import http.server
    import subprocess
    import threading

    seen: list[tuple[str, str | None]] = []

    class Server(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Authorization")))
            found = self.path == "/api/v1/nodes/n1"
            body = json.dumps({"kind": "Node", "metadata": {"name": "n1"}} if found else {}).encode()
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_a: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
            "users": [{"name": "u", "user": {"token": "t0k"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        run = [sys.executable, "-P", "-c", perf.CLIENT_ONE_GET]
        assert subprocess.run([*run, "n1"], env=env, capture_output=True).returncode == 0
        assert seen == [("/api/v1/nodes/n1", "Bearer t0k")]
        assert subprocess.run([*run, "gone"], env=env, capture_output=True).returncode != 0
    finally:
        server.shutdown()
        server.server_close()
