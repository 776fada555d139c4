"""A broken or hostile server in front of the real kube-apiserver (the fault proxy): 2xx answers cut short or
HTML for the LISTs, `explain node`'s quick read and the access review, and error Statuses whose message has
newlines, terminal escapes or 2 MB. Each run ends with one printable `error:` line and exit 1 (the report's
`error` says the same), no traceback, and no eviction reaches the server."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from desched import desched, desched_env
from faultproxy import Canned, FaultProxy

pytestmark = pytest.mark.integration

TAINT = {"key": "maintenance", "value": "soon", "effect": "NoSchedule"}
SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
FORGED = "denied\nerror: all pods were evicted, nothing to see\r\x1b[2J\x1b]0;owned\x07\u202ereversed"
BIG = "\x1b[41m" + "A" * 2_000_000


def tainted(cluster: Any, ns: str, pods: list[str]) -> tuple[str, list[str]]:
    """A tainted node with these pods; the deschedule arguments that propose them all (with --yes)."""
    node = f"{ns}-n"
    cluster.create_node(node, taints=[TAINT])
    cluster.create_node(f"{ns}-spare")  # where the replacements land: without one no move would change anything
    for p in pods:
        cluster.create_pod(ns, p, node, labels={"app": "web"}, owner_name="web-rs")
    return node, ["deschedule", "--plugin", "RemovePodsViolatingNodeTaints", "-n", ns, "--nodes", node, "--yes"]


def run_through(cluster: Any, tmp_path: Path, rule: Any, *args: str) -> tuple[Any, FaultProxy]:
    with FaultProxy(cluster.server, cluster.ca_file, tmp_path, rule) as proxy:
        kubeconfig = proxy.kubeconfig(cluster.kubeconfig_for(), tmp_path / "via-proxy.kubeconfig")
        proc = desched(kubeconfig, *args, "--request-timeout", "10s")
    return proc, proxy


def one_error_line(proc: Any, *fragments: str) -> str:
    everything = proc.stdout + proc.stderr
    assert "Traceback" not in everything, proc.stderr
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e\u2028\u2029]", everything), "raw control characters"
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert all(len(line) < 1200 for line in everything.splitlines())
    return lines[0]


def when(method: str, path: str | tuple[str, ...], action: Any) -> Any:
    """Break every request for exactly this method and path (or these paths); let the rest through."""
    paths = (path,) if isinstance(path, str) else path
    return lambda m, p, _nth: action if m == method and p in paths else "pass"


def assert_nothing_evicted(cluster: Any, ns: str, pods: list[str], proxy: FaultProxy) -> None:
    assert proxy.seen("POST", "/eviction") == []
    assert all(not cluster.get_pod(ns, p)["metadata"].get("deletionTimestamp") for p in pods)


@pytest.mark.parametrize(("path", "action", "fragment"), [
    ("/api/v1/pods", "truncate", "was not JSON (cut short after"),
    ("/api/v1/pods", Canned.html(), "was not JSON (106 bytes of HTML or XML starting '<!DOCTYPE html>"),
    ("/api/v1/nodes", "truncate", "was not JSON (cut short after"),
    ("/api/v1/nodes", Canned.html(), "bytes of HTML or XML"),
    ("/apis/policy/v1/poddisruptionbudgets", "truncate", "was not JSON (cut short after"),
    ("/apis/policy/v1/poddisruptionbudgets", Canned.html(), "bytes of HTML or XML"),
    ("/api/v1/pods", Canned(200, b"[]"), "was not a JSON object but an array"),
], ids=["pods-cut", "pods-html", "nodes-cut", "nodes-html", "pdbs-cut", "pdbs-html", "pods-array"])
def test_a_broken_list_answer_is_one_error_line_and_the_report_says_it(
        cluster: Any, namespace: str, tmp_path: Path, path: str, action: Any, fragment: str) -> None:
    pods = ["web-0", "web-1"]
    _node, args = tainted(cluster, namespace, pods)
    report = tmp_path / "r.json"
    proc, proxy = run_through(cluster, tmp_path, when("GET", path, action), *args, "--report", str(report))
    assert proc.returncode == 1, proc.stderr
    line = one_error_line(proc, f"error: reading the cluster: the answer to GET {path} ", fragment)
    doc = json.loads(report.read_text())
    assert doc["error"] == line.removeprefix("error: ")
    assert doc["evictions"] == [] and doc["confirmation"] is None
    assert_nothing_evicted(cluster, namespace, pods, proxy)


def test_an_extra_kind_list_that_is_html_is_one_error_line(cluster: Any, namespace: str, tmp_path: Path) -> None:
    # No metrics-server here: the proxy answers the metrics LIST itself, as a broken aggregated API might.
    nodes = "/apis/metrics.k8s.io/v1beta1/nodes"
    node, _args = tainted(cluster, namespace, ["web-0"])
    proc, proxy = run_through(cluster, tmp_path, when("GET", nodes, Canned.html()), "balance", "-n", namespace,
                              "--nodes", node, "--use-metrics", "--yes")
    assert proc.returncode == 1, proc.stderr
    one_error_line(proc, f"reading the cluster: the answer to GET {nodes} was not JSON", "HTML")
    assert proxy.seen("POST", "/eviction") == []


@pytest.mark.parametrize("part", ["node", "pods", "pdbs"])
@pytest.mark.parametrize("action", ["truncate", Canned.html()], ids=["truncate", "html"])
def test_explain_node_quick_read_of_a_broken_answer(cluster: Any, namespace: str, tmp_path: Path, part: str,
                                                     action: Any) -> None:
    node, _args = tainted(cluster, namespace, ["web-0"])
    path = {"node": f"/api/v1/nodes/{node}", "pods": "/api/v1/pods",
            "pdbs": f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"}[part]
    # the cluster-wide PDB LIST read beside the pods is broken too: so that -n's one namespace is read on its own
    broken = (path, "/apis/policy/v1/poddisruptionbudgets") if part == "pdbs" else (path,)
    proc, _proxy = run_through(cluster, tmp_path, when("GET", broken, action), "explain", "node", node,
                               "--plugin", "RemovePodsViolatingNodeTaints", "-n", namespace)
    assert proc.returncode == 1, proc.stderr
    one_error_line(proc, f"error: reading node {node}: the answer to GET {path} was not JSON")


@pytest.mark.parametrize("action", ["truncate", Canned.html(201), Canned(201, b'{"status": "yes"}')],
                         ids=["truncate", "html", "status-not-an-object"])
def test_a_broken_access_review_stops_before_anything_is_evicted(cluster: Any, namespace: str, tmp_path: Path,
                                                                  action: Any) -> None:
    pods = ["web-0", "web-1"]
    _node, args = tainted(cluster, namespace, pods)
    report = tmp_path / "r.json"
    proc, proxy = run_through(cluster, tmp_path, when("POST", SSAR, action), *args, "--report", str(report))
    assert proc.returncode == 1, proc.stderr
    line = one_error_line(proc, "error: checking permissions (SelfSubjectAccessReview): the answer to POST "
                                f"{SSAR} was not")
    doc = json.loads(report.read_text())
    assert doc["error"] == line.removeprefix("error: ") and doc["evictions"] == []
    assert_nothing_evicted(cluster, namespace, pods, proxy)


@pytest.mark.parametrize(("message", "shown"), [
    (FORGED, "denied\\nerror: all pods were evicted, nothing to see\\r\\x1b[2J\\x1b]0;owned\\x07\\u202ereversed"),
    (BIG, "\\x1b[41mAAAA"),
], ids=["forged-line-and-escapes", "2mb"])
@pytest.mark.parametrize("path", ["/api/v1/nodes", "/api/v1/pods"])
def test_a_hostile_error_message_is_one_printable_short_line(cluster: Any, namespace: str, tmp_path: Path,
                                                             message: str, shown: str, path: str) -> None:
    pods = ["web-0"]
    _node, args = tainted(cluster, namespace, pods)
    report = tmp_path / "r.json"
    proc, proxy = run_through(cluster, tmp_path, when("GET", path, Canned.status_message(500, message)), *args,
                              "--report", str(report))
    assert proc.returncode == 1, proc.stderr
    line = one_error_line(proc, "error: reading the cluster: ", shown, "(500)")
    if message is BIG:
        assert "[cut: 2,000,005 characters in all]" in line and len(line) < 600
    assert json.loads(report.read_text())["error"] == line.removeprefix("error: ")
    assert_nothing_evicted(cluster, namespace, pods, proxy)


def test_a_hostile_message_on_an_eviction_stays_in_its_row(cluster: Any, namespace: str, tmp_path: Path) -> None:
    """The eviction's own error (here a 403, which is not retried) reaches the live line, the results table and
    the report through the same sanitizer."""
    pods = ["web-0"]
    _node, args = tainted(cluster, namespace, pods)
    report = tmp_path / "r.json"
    proc, proxy = run_through(cluster, tmp_path,
                              lambda m, p, _n: Canned.status_message(403, FORGED) if p.endswith("/eviction")
                              else "pass", *args, "--report", str(report))
    assert proc.returncode == 1, proc.stderr
    everything = proc.stdout + proc.stderr
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", everything)
    assert not any(line.startswith("error: all pods") for line in everything.splitlines())
    assert "denied\\nerror: all pods were evicted" in everything
    assert all(not cluster.get_pod(namespace, p)["metadata"].get("deletionTimestamp") for p in pods)
    assert len(proxy.seen("POST", "/eviction")) >= 1
    message = json.loads(report.read_text())["evictions"][0]["message"]
    assert "\n" not in message and "\x1b" not in message


@pytest.mark.parametrize("path", ["/api/v1/pods", "/api/v1/nodes", "/apis/policy/v1/poddisruptionbudgets"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_while_the_server_stalls_mid_answer_exits_at_once(
        cluster: Any, namespace: str, tmp_path: Path, path: str, signum: int) -> None:
    """A server that stops sending halfway through a LIST page, with no --request-timeout: the read would wait
    for it without bound. Ctrl-C (or SIGTERM) must still end the command within moments, with its one line, its
    exit code and its report, over TLS (the proxy's), and evict nothing."""
    pods = ["web-0", "web-1"]
    _node, args = tainted(cluster, namespace, pods)
    report = tmp_path / "r.json"
    with FaultProxy(cluster.server, cluster.ca_file, tmp_path, when("GET", path, "stall-after"), hang=120) as proxy:
        kubeconfig = proxy.kubeconfig(cluster.kubeconfig_for(), tmp_path / "via-proxy.kubeconfig")
        proc = subprocess.Popen([sys.executable, "-m", "kubectl_desched", *args, "--report", str(report)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=desched_env(kubeconfig))
        try:
            proxy.wait_until_seen("GET", path, proc)
            time.sleep(0.5)  # the first half of the answer is read; the rest never comes
            assert proc.poll() is None, "the command ended although an answer is missing its second half"
            sent = time.monotonic()
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=15)
            took = time.monotonic() - sent
        finally:
            proc.kill()
    assert proc.returncode == 128 + signum, err
    assert took < 5, f"took {took:.1f} s to leave"
    said = "interrupted" if signum == signal.SIGINT else "interrupted by SIGTERM"
    assert err.strip().splitlines() == [f"{said}: nothing further was evicted"], err
    by = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
    assert json.loads(report.read_text())["error"] == f"interrupted by {by} before any eviction was sent"
    assert out == ""
    assert_nothing_evicted(cluster, namespace, pods, proxy)
