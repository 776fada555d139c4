#!/usr/bin/env python3
"""kubectl-desched against the floor of what one real apiserver can send, side by side, in one interleaved run.

It loads a generated cluster (bench/gencluster.py) into the tests' real kube-apiserver + etcd (bench/apiload.py),
keeps one pod patched every 2 s so that, as in a live cluster, the watch cache moves on and LIST pages come from it,
and runs each command below once per round, for --runs rounds, in a rotating order:

  floor json [gzip]         the same paginated pod LIST the tool makes (limit 500), read and thrown away, as JSON,
  floor protobuf [gzip]     and as protobuf (what client-go asks for), with and without Accept-Encoding: gzip
  descheduler               the upstream descheduler v0.36.0 in --dry-run with the same LowNodeUtilization policy:
                            when its informers are synced (its first cycle starts) and when a cycle first sees the
                            whole cluster (its node classes equal the tool's; earlier dry-run cycles see a partial
                            copy, kubernetes-sigs/descheduler#1917)
  balance                   kubectl-desched balance -A --dry-run=client -o json
  balance --protobuf        the same, pods and nodes read as protobuf; once before the rounds, its plan is compared
                            with balance's byte for byte but madeAt (the result's "protobuf" says if they are the same)
  explain node              kubectl-desched explain node NODE (the busiest over-utilized node)
  version, completion       kubectl-desched version; __complete balance --no- (what TAB runs)
  json.load, run --from-file   json.load of the saved JSON snapshot; run --from-file on it with the same policy
  decode                    the tool's decoding of every pod page, held in memory: alone, then while the server
                            sends a floor read to another process (what the machine's sharing costs the client)
  link: ...                 the floors and balance again through bench/linkproxy.py (default 100 Mbit/s, 20 ms RTT)

Each command runs as a child of a small timer process: wall time, client CPU (user + system of the child) and peak
RSS. Around each live command the apiserver's /metrics say how many pod LISTs it served from the watch cache and
how many from etcd. Medians and ratios go to stdout as Markdown, everything to --results as JSON.

    .venv/bin/python bench/perf.py                      # small (200 nodes / 6,000 pods), a quick check
    .venv/bin/python bench/perf.py --scale full --runs 3 --results perf.json   # the table of docs/performance.md

Generated snapshots and loaded etcd data are kept in --work, so a rerun only measures.
"""

# Only the standard library is imported up here: `perf.py floor` is itself one of the measured commands.
from __future__ import annotations

import argparse
import contextlib
import gc
import http.client
import json
import os
import queue
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

HERE = Path(__file__).resolve().parent
SCALES = {"small": (200, 6_000), "mid": (1_000, 30_000), "full": (5_000, 150_000)}
PAGE = 500  # the tool's and kubectl's page size
POLICY = """apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: balance
    pluginConfig:
      - name: DefaultEvictor
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 20, memory: 20, pods: 20}
          targetThresholds: {cpu: 50, memory: 50, pods: 50}
    plugins:
      balance:
        enabled: [LowNodeUtilization]
"""  # the thresholds `balance` uses without flags


# ---------------------------------------------------------------------------------------------- the floor client

def _varint(buf: memoryview, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _proto_field(buf: memoryview, number: int) -> memoryview | None:
    """The first length-delimited field `number` of a protobuf message, without decoding the others' contents."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        wire = key & 7
        if wire == 0:
            _, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            if key >> 3 == number:
                return buf[i:i + size]
            i += size
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"protobuf wire type {wire}")
    return None


def protobuf_continue(body: bytes) -> str:
    """The continue token of a protobuf LIST answer: runtime.Unknown (after the 4-byte `k8s\\0` magic) holds the
    PodList in `raw` (2), the PodList its ListMeta first (1), the ListMeta the token in `continue` (3)."""
    if body[:4] != b"k8s\x00":
        raise ValueError("not a protobuf answer")
    raw = _proto_field(memoryview(body)[4:], 2)
    meta = _proto_field(raw, 1) if raw is not None else None
    token = _proto_field(meta, 3) if meta is not None else None
    return bytes(token).decode() if token is not None else ""


_JSON_CONTINUE = re.compile(rb'"metadata":\{[^{}]*?"continue":"([^"]*)"')


def json_continue(head: bytes) -> str:
    """The continue token from the first bytes of a JSON LIST answer (the apiserver writes metadata first)."""
    found = _JSON_CONTINUE.search(head)
    return found.group(1).decode() if found else ""


def _floor_target(kubeconfig: Path, media: str, gzip: bool
                  ) -> tuple[Callable[[], http.client.HTTPSConnection], dict[str, str]]:
    """How the floors reach the bench apiserver: a new connection each call, and the headers of a page request."""
    config = json.loads(kubeconfig.read_text())  # bench kubeconfigs are JSON
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    token = config["users"][0]["user"]["token"]
    context = ssl.create_default_context(cafile=config["clusters"][0]["cluster"]["certificate-authority"])
    accept = "application/vnd.kubernetes.protobuf" if media == "protobuf" else "application/json"
    headers = {"Authorization": f"Bearer {token}", "Accept": accept,
               "Accept-Encoding": "gzip" if gzip else "identity"}
    return (lambda: http.client.HTTPSConnection(server.hostname or "127.0.0.1", server.port or 443,
                                                context=context)), headers


def _floor_get(conn: http.client.HTTPSConnection, path: str, cont: str, headers: dict[str, str]
               ) -> tuple[http.client.HTTPResponse, Any]:
    """One page asked for: the answer to read, and the inflater its body needs (None when it is not gzipped)."""
    conn.request("GET", f"{path}?limit={PAGE}" + (f"&continue={quote(cont)}" if cont else ""), headers=headers)
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"GET {path}: {resp.status} {resp.read()[:300]!r}")
    gzipped = resp.getheader("Content-Encoding") == "gzip"
    return resp, zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None


def floor(kubeconfig: Path, media: str, gzip: bool, path: str = "/api/v1/pods") -> dict[str, int]:
    """Read every page of a paginated LIST over one kept-alive connection, decompress it if gzipped, keep only the
    continue token. The least any client must do to have the bytes of every pod."""
    connection, headers = _floor_target(kubeconfig, media, gzip)
    conn = connection()
    pages = wire = body = 0
    cont = ""
    while True:
        resp, inflate = _floor_get(conn, path, cont, headers)
        head = bytearray()  # both encodings put the list's metadata, and so the token, first
        while chunk := resp.read(256 << 10):
            wire += len(chunk)
            if inflate is not None:
                chunk = inflate.decompress(chunk)
            body += len(chunk)
            if len(head) < 8192:
                head += chunk
        pages += 1
        cont = protobuf_continue(bytes(head)) if media == "protobuf" else json_continue(bytes(head))
        if not cont:
            return {"pages": pages, "wire_bytes": wire, "bytes": body}


DECODE_ALONE, DECODE_BESIDE = "decode: pages in memory", "decode: beside a floor read"


def fetch_pages(kubeconfig: Path, path: str = "/api/v1/pods") -> list[bytes]:
    """Every page of the paginated LIST, uncompressed, kept in memory."""
    connection, headers = _floor_target(kubeconfig, "json", False)
    conn = connection()
    pages: list[bytes] = []
    cont = ""
    while True:
        resp, _ = _floor_get(conn, path, cont, headers)
        pages.append(resp.read())
        cont = json_continue(pages[-1][:8192])
        if not cont:
            return pages


def decode_cpu(pages: list[bytes], parse: Callable[[bytes, str], tuple[list[Any], str]]) -> tuple[float, float, int]:
    """(wall, CPU seconds of this thread, objects) to turn every page into the model as the tool's read does:
    the cycle collector paused, every object kept until the last page is done."""
    from kubectl_desched.model import objects as model  # the measured build's, from the python running `perf.py decode`

    kept: list[Any] = []
    with model.cycle_collector_paused():
        began, cpu = time.perf_counter(), time.thread_time()
        for page in pages:
            kept += parse(page, "/api/v1/pods")[0]
        done = time.perf_counter() - began, time.thread_time() - cpu
    return done[0], done[1], len(kept)


def decode_contention(kubeconfig: Path) -> dict[str, Any]:
    """The same decoding twice: alone, then while the apiserver sends read-ahead gzip floors (the tool's way of
    asking), one after another, to another process. On a machine that runs the server beside the client, the
    second figure is what a live read's decoding costs; their ratio is the machine's share of the client's CPU,
    not the tool's."""
    from kubectl_desched.kube.live import typed_page

    pages = fetch_pages(kubeconfig)
    parse = typed_page("Pod")
    alone = decode_cpu(pages, parse)
    with tempfile.TemporaryFile() as err:
        floor_read = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "floor", "--kubeconfig",
                                       str(kubeconfig), "--gzip", "--ahead", str(READ_AHEAD), "--again"],
                                      stdout=subprocess.DEVNULL, stderr=err)
        try:
            time.sleep(1.0)  # its first pages are on their way
            beside = decode_cpu(pages, parse)
            failed = floor_read.poll() is not None
        finally:
            floor_read.kill()
            floor_read.wait()
        if failed:
            err.seek(0)
            why = one_line(err.read().decode(errors="replace")[-300:])
            raise RuntimeError(f"the floor read beside the decoding failed: {why}")
    return {"pages": len(pages), "objects": alone[2], "bytes": sum(map(len, pages)),
            "alone": {"seconds": alone[0], "cpu": alone[1]}, "beside": {"seconds": beside[0], "cpu": beside[1]}}


def decode_samples(python: Path, kubeconfig: Path) -> dict[str, Sample]:
    """`perf.py decode` run by the measured build's python: its two figures as samples (peak RSS: the process's,
    all pages held)."""
    run = measure([str(python), str(Path(__file__).resolve()), "decode", "--kubeconfig", str(kubeconfig)],
                  report="@decode")
    found = run.info
    if not found:
        raise RuntimeError("perf.py decode exited 0 without its @decode figures")
    info = {k: found[k] for k in ("pages", "objects")}
    return {name: Sample(found[key]["seconds"], found[key]["cpu"], run.rss, info)
            for name, key in ((DECODE_ALONE, "alone"), (DECODE_BESIDE, "beside"))}


FLOOR_AHEAD = "floor json read ahead"
READ_AHEAD = 2  # as kube/live.py's AHEAD


def floor_ahead(kubeconfig: Path, gzip: bool, ahead: int = 2, path: str = "/api/v1/pods",
                media: str = "json") -> dict[str, int]:
    """The floor read as the tool reads (kube/readahead.py): each page asked for, on a kept-alive connection of its
    own, as soon as the page before has named it in its first bytes; at most `ahead` at once. Both encodings put
    the list's metadata first (protobuf: the ListMeta is the list's field 1), so the first bytes name the next."""
    connection, headers = _floor_target(kubeconfig, media, gzip)
    token = protobuf_continue if media == "protobuf" else json_continue
    idle: queue.SimpleQueue[http.client.HTTPSConnection] = queue.SimpleQueue()
    slots = threading.Semaphore(ahead)
    lock = threading.Lock()
    totals = {"pages": 0, "wire_bytes": 0, "bytes": 0}
    failed: list[BaseException] = []
    threads: list[threading.Thread] = []

    def page(cont: str) -> None:
        with slots:
            try:
                conn = idle.get_nowait()
            except queue.Empty:
                conn = connection()
            try:
                resp, inflate = _floor_get(conn, path, cont, headers)
                wire = body = 0
                amount = 8192  # the first bytes name the next page
                while chunk := resp.read(amount):
                    wire += len(chunk)
                    if inflate is not None:
                        chunk = inflate.decompress(chunk)
                    body += len(chunk)
                    if amount == 8192:
                        amount = 256 << 10
                        following = token(chunk)
                        if following:
                            start(following)
                idle.put(conn)
                with lock:
                    totals["pages"] += 1
                    totals["wire_bytes"] += wire
                    totals["bytes"] += body
            except BaseException as e:
                failed.append(e)

    def start(cont: str) -> None:
        t = threading.Thread(target=page, args=(cont,))
        with lock:
            threads.append(t)
        t.start()

    start("")
    while True:
        with lock:
            waiting = [t for t in threads if t.is_alive()]
        if not waiting:
            break
        waiting[0].join()
    if failed:
        raise failed[0]
    return totals


# ---------------------------------------------------------------------------------------------- timing a child

# Runs the command as a child of this small process and reports the child's wall time, CPU and peak RSS. Measuring
# from perf.py itself would not do: a child's ru_maxrss starts from the RSS of the process it was forked from.
_TIMER = """
import os, sys, time
began = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
cpu = usage.ru_utime + usage.ru_stime
sys.stderr.write(f"\\n@perf {time.perf_counter() - began} {cpu} {usage.ru_maxrss * 1024}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


@dataclass
class Sample:
    seconds: float
    cpu: float  # user + system seconds of the child
    rss: int  # peak resident set, bytes
    info: dict[str, Any] = field(default_factory=dict)  # what the command reported (pages, bytes, cycles ...)


def measure(cmd: Sequence[str], env: dict[str, str] | None = None, report: str = "@floor") -> Sample:
    """One run of a command; stdout goes to /dev/null, as in `> /dev/null`. A `@floor {...}` line (or the
    `report` given) on its stderr is kept as the sample's info."""
    with tempfile.TemporaryFile() as err:
        code = subprocess.run([sys.executable, "-c", _TIMER, *cmd], stdout=subprocess.DEVNULL, stderr=err,
                              env=env).returncode
        err.seek(0)
        text = err.read().decode(errors="replace")
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {code}: {text[-2000:]}")
    seconds, cpu, rss = text.rstrip().rsplit("\n", 1)[-1].split()[1:]
    info: dict[str, Any] = next((json.loads(line[len(report) + 1:]) for line in text.splitlines()
                                 if line.startswith(f"{report} ")), {})
    return Sample(float(seconds), float(cpu), int(rss), info)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def available_memory() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


# ---------------------------------------------------------------------------------------------- upstream

READ_ONLY = """
from kubectl_desched.kube.config import KubeOptions, connect
from kubectl_desched.kube.live import read_cluster
from kubectl_desched.kube.overrides import ConnectionFlags
read_cluster(connect(KubeOptions({options})))
"""


# The least any tool on the kubernetes client pays to answer about one node: the client imported, the kubeconfig's
# credentials loaded the client's way, one GET of the node. explain node is measured against it.
FLOOR_CLIENT = "floor: kubernetes client, one GET"
CLIENT_ONE_GET = """
import sys
from kubernetes import config
api = config.new_client_from_config()
method, url, headers, body, post = api.param_serialize(
    "GET", "/api/v1/nodes/" + sys.argv[1], header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
answer = api.call_api(method, url, header_params=headers)
answer.read()
sys.exit(answer.status != 200)
"""


def read_only_command(exe: str, protobuf: bool = False) -> list[str]:
    """READ_ONLY run by the python beside `exe` (--protobuf's read with `protobuf`; a build before it has none). -P:
    the package comes from that python's environment, never from the working directory (a checkout of another
    build)."""
    script = READ_ONLY.format(options="flags=ConnectionFlags(protobuf=True)" if protobuf else "")
    return [str(Path(exe).with_name("python")), "-P", "-c", script]


CYCLE_START = "Resetting pod evictor counters"  # logged at -v=3 when a cycle starts: informers are synced by then
CYCLE_END = "Number of evictions/requests"
UNDER, OVER = "Number of underutilized nodes", "Number of overutilized nodes"


def _proc_usage(pid: int) -> tuple[float, int]:
    """CPU seconds and peak RSS so far of a running process (/proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) * 1024
    return cpu, rss


def run_descheduler(binary: Path, kubeconfig: Path, policy: Path, want: tuple[int, int], timeout: float
                    ) -> tuple[Sample, Sample]:
    """(informers synced, first complete cycle): the descheduler in dry-run, a cycle every second, stopped once
    a cycle's (under-, over-utilized) node counts equal `want`, the tool's for the same cluster and thresholds."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        [str(binary), "--dry-run", f"--policy-config-file={policy}", f"--kubeconfig={kubeconfig}",
         "--descheduling-interval=1s", "--leader-elect=false", "--secure-port=0", "--logging-format=json", "--v=3"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    # Killed and reaped with os.kill/os.wait4, not Popen's kill and wait, which would reap it without its usage.
    watchdog = threading.Timer(timeout, os.kill, (proc.pid, signal.SIGKILL))
    watchdog.start()
    synced: Sample | None = None
    cycles: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    done = False
    tail: list[bytes] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail = [*tail[-20:], line]
            if not line.startswith(b"{"):
                continue
            entry = json.loads(line)
            msg = entry.get("msg")
            if msg == CYCLE_START:
                if synced is None:
                    cpu, rss = _proc_usage(proc.pid)
                    synced = Sample(time.perf_counter() - began, cpu, rss)
                counts = {}
            elif msg in (UNDER, OVER):
                counts[msg] = int(entry.get("totalNumber", -1))
            elif msg == CYCLE_END:
                seen = (counts.get(UNDER, 0), counts.get(OVER, 0))
                cycles.append({"at": round(time.perf_counter() - began, 2), "under": seen[0], "over": seen[1],
                               "evicted": entry.get("totalEvicted")})
                if seen == want:
                    done = True
                    break
    finally:
        watchdog.cancel()
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.stdout:
            proc.stdout.close()
    if not done or synced is None:
        raise RuntimeError(f"descheduler (exit {proc.returncode}): no cycle saw {want} (under, over) nodes "
                           f"in {timeout:.0f}s; cycles "
                           f"{cycles[-5:]}\n{b''.join(tail).decode(errors='replace')[-3000:]}")
    complete = Sample(cycles[-1]["at"], usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024,
                      {"cycles": cycles})
    return synced, complete


# ---------------------------------------------------------------------------------------------- the apiserver

def _metrics(cluster: Any) -> dict[str, float]:
    """The pod LIST counters of the apiserver's /metrics."""
    import urllib.request

    req = urllib.request.Request(cluster.server + "/metrics",
                                 headers={"Authorization": f"Bearer {cluster.tokens['admin']}"})
    with urllib.request.urlopen(req, timeout=30, context=cluster._ssl) as r:
        text = r.read().decode()
    wanted = {
        "from cache": re.compile(r'^apiserver_cache_list_total\{[^}]*resource="pods"[^}]*\} (\S+)', re.M),
        "from storage": re.compile(r'^apiserver_storage_list_total\{[^}]*resource="pods"[^}]*\} (\S+)', re.M),
        "etcd lists": re.compile(
            r'^etcd_requests_total\{[^}]*operation="list",resource="pods"[^}]*\} (\S+)', re.M),
    }
    return {name: sum(float(v) for v in rx.findall(text)) for name, rx in wanted.items()}


class Churn:
    """Patches one pod's annotation every 2 s, as a live cluster always changes something: the watch cache's
    resourceVersion moves on, and LIST pages are served from it as in production."""

    def __init__(self, cluster: Any) -> None:
        first = cluster.request("GET", "/api/v1/pods", query={"limit": "1"}).body["items"][0]["metadata"]
        self.path = f"/api/v1/namespaces/{first['namespace']}/pods/{first['name']}"
        self.cluster = cluster
        self.stop = threading.Event()
        self.patches = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(2.0):
            body = {"metadata": {"annotations": {"bench.kubectl-desched/churn": str(self.patches)}}}
            r = self.cluster.request("PATCH", self.path, body, content_type="application/merge-patch+json")
            if r.ok:
                self.patches += 1

    def __enter__(self) -> Churn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def bin_dir(name: str, script: str) -> Path:
    """The directory a tests/cluster/build-* script prints (it builds once, then answers from its cache)."""
    sys.path.insert(0, str(HERE.parent))
    from tests.gobuilds import build

    directory, why = build(script)
    if directory is None:
        sys.exit(f"error: {why}")
    if not (directory / name).exists():
        sys.exit(f"error: tests/cluster/{script} left no {name} in {directory}")
    return directory


def loaded_cluster(work: Path, nodes: int, pods: int) -> Any:
    """A started cluster holding the generated objects; the etcd data is kept for the next run."""
    import apiload
    import clustergen

    cdir = work / f"cluster-{nodes}-{pods}"
    marker = cdir / "loaded"
    if not marker.exists():
        shutil.rmtree(cdir, ignore_errors=True)
    cluster = apiload.bench_cluster(bin_dir("kube-apiserver", "build-binaries"), cdir)
    cluster.start()
    try:
        if not marker.exists():
            log(f"loading {nodes:,} nodes / {pods:,} pods into the apiserver at {cluster.server}")
            began = time.monotonic()
            with _gc_paused():
                n = apiload.load(cluster, clustergen.plan_cluster(nodes, pods).items(), log=log)
            marker.write_text(f"{n} objects in {time.monotonic() - began:.0f}s\n")
            log(f"  {marker.read_text().strip()}")
        deadline = time.monotonic() + 600
        while apiload.served_pods(cluster) < pods:  # the watch cache may still be taking them in
            if time.monotonic() > deadline:
                raise RuntimeError(f"the apiserver serves {apiload.served_pods(cluster)} pods, not {pods}")
            time.sleep(2)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def snapshot_file(work: Path, nodes: int, pods: int) -> Path:
    """The same cluster as kubectl get -o json would write it (gencluster's default output)."""
    path = work / f"snapshot-{nodes}-{pods}.json"
    if not path.exists():
        log(f"generating {path}")
        tmp = path.with_suffix(".tmp")
        subprocess.run([sys.executable, str(HERE / "gencluster.py"), "--nodes", str(nodes), "--pods", str(pods),
                        "--out", str(tmp)], check=True)
        tmp.rename(path)
    return path


@contextlib.contextmanager
def link_proxy(server: str, mbit: float, rtt_ms: float) -> Iterator[str]:
    """bench/linkproxy.py in front of the apiserver; yields the proxied https://HOST:PORT."""
    target = urlsplit(server)
    proc = subprocess.Popen([sys.executable, str(HERE / "linkproxy.py"), "--upstream",
                             f"{target.hostname}:{target.port}", "--mbit", str(mbit), "--rtt-ms", str(rtt_ms)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening "):
            raise RuntimeError(f"linkproxy did not start: {line!r}")
        yield f"https://{line.split()[1]}"  # the serving certificate names 127.0.0.1, whatever the port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def kubeconfig_via(original: Path, server: str, dest: Path) -> Path:
    config = json.loads(original.read_text())
    config["clusters"][0]["cluster"]["server"] = server
    dest.write_text(json.dumps(config))
    dest.chmod(0o600)
    return dest


# ---------------------------------------------------------------------------------------------- the run

@dataclass
class Step:
    """One measured command of a round. `run` returns its samples by name (the descheduler gives two)."""

    name: str
    run: Callable[[], dict[str, Sample]]
    live: bool = True  # count the apiserver's pod LISTs around it


@dataclass
class Timings:
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    lists: dict[str, dict[str, float]] = field(default_factory=dict)  # step -> counter -> total over the rounds
    skipped: dict[str, str] = field(default_factory=dict)

    def median(self, name: str, what: str = "seconds") -> float:
        return statistics.median(getattr(s, what) for s in self.samples[name])

    def rss(self, name: str) -> int:
        return max(s.rss for s in self.samples[name])


def interleave(steps: list[Step], runs: int, cluster: Any, t: Timings) -> None:
    for i in range(runs):
        order = steps[i % len(steps):] + steps[:i % len(steps)]  # each step leads once in a while
        log(f"  round {i + 1}/{runs}")
        for step in order:
            before = _metrics(cluster) if step.live and cluster is not None else None
            try:
                found = step.run()
            except RuntimeError as e:
                t.skipped[step.name] = one_line(str(e))
                log(f"    {step.name}: FAILED {t.skipped[step.name]}")
                continue
            if before is not None:
                after = _metrics(cluster)
                total = t.lists.setdefault(step.name, {})
                for k in after:
                    total[k] = total.get(k, 0.0) + after[k] - before[k]
            for name, sample in found.items():
                t.samples.setdefault(name, []).append(sample)
                log(f"    {name}: {sample.seconds:.2f} s, cpu {sample.cpu:.2f} s, {sample.rss / 2**20:,.0f} MiB")


def one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def node_classes(doc: dict[str, Any]) -> tuple[int, int]:
    """(under-, over-utilized) nodes in the tool's plan, as upstream counts them."""
    classes = [r["class"].get("LowNodeUtilization") for r in doc["nodes"]]
    return classes.count("under-utilized"), classes.count("over-utilized")


def busiest_overutilized_node(doc: dict[str, Any]) -> str:
    rows = [r for r in doc["nodes"] if r["class"].get("LowNodeUtilization") == "over-utilized"] or doc["nodes"]
    return str(max(rows, key=lambda r: r["now"]["pods"])["name"])


def bench(args: argparse.Namespace) -> dict[str, Any]:
    nodes, pods = args.nodes, args.pods
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    policy = work / "lownodeutilization.yaml"
    policy.write_text(POLICY)
    t = Timings()
    me = [sys.executable, str(Path(__file__).resolve())]
    exe = args.exe
    result: dict[str, Any] = {"nodes": nodes, "pods": pods, "runs": args.runs, "exe": exe, "compare": args.compare,
                              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "link": f"{args.mbit:g} Mbit/s, {args.rtt_ms:g} ms RTT"}
    snap = snapshot_file(work, nodes, pods) if "snapshot" not in args.skip else None
    cluster = loaded_cluster(work, nodes, pods)
    try:
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed tool has its bytecode compiled
        balance = [exe, "balance", "-A", "--dry-run=client", "-o", "json"]
        first = work / f"balance-{nodes}-{pods}.json"
        with first.open("w") as f:  # also warms the page cache and writes the tool's bytecode
            subprocess.run(balance, stdout=f, env=env, check=True)
        as_protobuf = work / f"balance-{nodes}-{pods}-protobuf.json"
        with as_protobuf.open("w") as f:
            subprocess.run([*balance, "--protobuf"], stdout=f, env=env, check=True)
        result["protobuf"] = same_document(first, as_protobuf)
        doc = json.loads(first.read_text())
        node, want = busiest_overutilized_node(doc), node_classes(doc)
        result.update(explained_node=node, node_classes={"under": want[0], "over": want[1]},
                      candidates=len(doc["candidates"]))

        def cmd(name: str, argv: list[str], run_env: dict[str, str] = env) -> Step:
            return Step(name, lambda: {name: measure(argv, run_env)}, live=True)

        def floor_step(name: str, kubeconfig: Path, media: str, gzip: bool, ahead: int = 0) -> Step:
            argv = [*me, "floor", "--kubeconfig", str(kubeconfig), "--media", media, "--gzip" if gzip else "--no-gzip",
                    "--ahead", str(ahead)]
            return Step(name, lambda: {name: measure(argv)})

        steps: list[Step] = []
        if "floors" not in args.skip:
            for media in ("json", "protobuf"):
                for gz in (False, True):
                    steps.append(floor_step(f"floor {media}" + (" gzip" if gz else ""), cluster.kubeconfig, media, gz))
            # the same pages read ahead as the tool reads them: what the server can send when asked that way
            steps.append(floor_step(FLOOR_AHEAD, cluster.kubeconfig, "json", False, READ_AHEAD))
        # The tool's own read of the cluster (nodes, pods, PDBs) and nothing after it: how far balance's reading is
        # from the floor, apart from planning, the placement estimate and writing the plan.
        read_only = read_only_command(exe)
        if "tool" not in args.skip:
            steps += [cmd("balance", balance), cmd("balance: read only", read_only),
                      cmd("balance --protobuf", [*balance, "--protobuf"]),
                      cmd("balance: read only --protobuf", read_only_command(exe, protobuf=True)),
                      cmd(FLOOR_CLIENT, [str(Path(exe).with_name("python")), "-P", "-c", CLIENT_ONE_GET, node]),
                      cmd("explain node", [exe, "explain", "node", node])]
            if "uncompressed" not in args.skip:  # what kubectl's --disable-compression saves where the link is fast
                steps.append(cmd("balance --disable-compression", [*balance, "--disable-compression"]))
        # --compare: another build's balance, read and explain in the same rounds (before/after in one run)
        other = args.compare
        other_balance = [other, *balance[1:]] if other else []
        other_read = read_only_command(other) if other else []
        if other and "tool" not in args.skip:
            steps += [cmd(f"{COMPARED} balance", other_balance), cmd(f"{COMPARED} balance: read only", other_read),
                      cmd(f"{COMPARED} explain node", [other, "explain", "node", node])]
        if "decode" not in args.skip:  # what the server's work beside it costs the client's decoding
            python = Path(exe).with_name("python")
            steps.append(Step("decode", lambda: decode_samples(python, cluster.kubeconfig), live=False))
        if "start" not in args.skip:
            steps += [Step("version", lambda: {"version": measure([exe, "version"], env)}, live=False),
                      Step("completion", lambda: {"completion": measure([exe, "__complete", "balance", "--no-"],
                                                                         env)}, live=False)]
        if "descheduler" not in args.skip:
            binary = bin_dir("descheduler", "build-descheduler") / "descheduler"
            timeout = max(180.0, 900.0 * pods / 150_000)
            steps.append(Step("descheduler", lambda: dict(zip(
                ("descheduler: informers synced", "descheduler: first complete cycle"),
                run_descheduler(binary, cluster.kubeconfig, policy, want, timeout), strict=True))))
        if snap is not None:
            load = [sys.executable, "-c", "import json, sys; json.load(open(sys.argv[1]))", str(snap)]
            need = 2.6 * snap.stat().st_size  # json.load held 8.9 GB for the 3.5 GB full-scale file
            if need > available_memory() - (2 << 30):
                t.skipped["json.load"] = f"not run: needs ~{need / 2**30:.0f} GiB"
            else:
                steps.append(Step("json.load", lambda: {"json.load": measure(load)}, live=False))
            steps.append(Step("run --from-file", lambda: {"run --from-file": measure(
                [exe, "run", "--from-file", str(snap), "--policy", str(policy), "-o", "json"], env)}, live=False))
            if other:
                steps.append(Step(f"{COMPARED} run --from-file", lambda: {f"{COMPARED} run --from-file": measure(
                    [other, "run", "--from-file", str(snap), "--policy", str(policy), "-o", "json"], env)},
                    live=False))
        with Churn(cluster) as churn, contextlib.ExitStack() as stack:
            if "link" not in args.skip:
                via = stack.enter_context(link_proxy(cluster.server, args.mbit, args.rtt_ms))
                link_config = kubeconfig_via(cluster.kubeconfig, via, work / "link.kubeconfig")
                link_env = {**env, "KUBECONFIG": str(link_config)}
                for media, gz in (("json", True), ("protobuf", True), ("json", False)):
                    if not gz and "link-json" in args.skip:  # ~90 s a round at full scale
                        continue
                    steps.append(floor_step(f"link: floor {media}" + (" gzip" if gz else ""), link_config, media, gz))
                steps.append(floor_step(f"link: {FLOOR_AHEAD} gzip", link_config, "json", True, READ_AHEAD))
                steps += [cmd("link: balance", balance, link_env), cmd("link: balance: read only", read_only, link_env),
                          cmd("link: balance --protobuf", [*balance, "--protobuf"], link_env)]
                if other:
                    steps += [cmd(f"{COMPARED} link: balance", other_balance, link_env)]
            interleave(steps, args.runs, cluster, t)
            result["churn_patches"] = churn.patches
        if snap is not None:
            with (work / f"run-{nodes}-{pods}.json").open("w") as f:
                subprocess.run([exe, "run", "--from-file", str(snap), "--policy", str(policy), "-o", "json"],
                               stdout=f, env=env, check=True)
            from clustergen.units import KUBE_VERSION  # the generated nodes' kubeletVersion

            result["plans"] = same_plan(first, work / f"run-{nodes}-{pods}.json", server_version(cluster.kubeconfig),
                                        KUBE_VERSION)
    finally:
        cluster.stop()
    result.update(skipped=t.skipped,
                  median={k: t.median(k) for k in t.samples},
                  cpu={k: t.median(k, "cpu") for k in t.samples},
                  rss={k: t.rss(k) for k in t.samples},
                  seconds={k: [round(s.seconds, 3) for s in v] for k, v in t.samples.items()},
                  info={k: v[-1].info for k, v in t.samples.items() if v[-1].info},
                  lists={k: {c: n / args.runs for c, n in v.items()} for k, v in t.lists.items()})
    return result


def same_document(a: Path, b: Path) -> str:
    """Two plans of the same cluster, byte for byte but for when they were made and the flags that made them."""
    docs = [json.loads(p.read_text()) for p in (a, b)]
    for doc in docs:
        doc.get("identity", {}).pop("madeAt", None)
        doc.get("identity", {}).pop("arguments", None)
    texts = [json.dumps(d, sort_keys=False) for d in docs]
    return (f"identical plans of {len(docs[0]['candidates'])} candidates" if texts[0] == texts[1] else
            f"DIFFERENT: {len(docs[0]['candidates'])} and {len(docs[1]['candidates'])} candidates")


def same_plan(live: Path, snap: Path, live_version: str = "", snap_version: str = "") -> str:
    """The live plan and the snapshot's: the same objects must give the same candidates, where both estimates
    follow the same scheduler (the live one the API server's version, the snapshot's its kubelets' newest)."""
    def key(path: Path) -> list[tuple[str, str, str]]:
        return [(c["namespace"], c["pod"], c["reason"]) for c in json.loads(path.read_text())["candidates"]]

    a, b = key(live), key(snap)
    if a == b:
        return f"same {len(a)} candidates"
    found = f"DIFFERENT: {len(a)} live, {len(b)} from the snapshot"
    minor = [m.group(1) if (m := re.match(r"v?1\.(\d+)", v)) else None for v in (live_version, snap_version)]
    if None not in minor and minor[0] != minor[1]:
        found += (f" (not comparable: the live estimate follows the API server's {live_version}, the snapshot's its "
                  f"kubelets' {snap_version})")
    return found


def server_version(kubeconfig: Path) -> str:
    """The bench API server's gitVersion; "" when it will not say (the check above then says nothing of it)."""
    connect, headers = _floor_target(kubeconfig, "json", False)
    conn = connect()
    try:
        conn.request("GET", "/version", headers=headers)
        resp = conn.getresponse()
        doc = json.loads(resp.read()) if resp.status == 200 else {}
        return str(doc.get("gitVersion", "")) if isinstance(doc, dict) else ""
    except (OSError, ValueError, http.client.HTTPException):
        return ""
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------- the report

# (row, what it is compared with); the order of the table
ROWS: list[tuple[str, str | None]] = [
    ("floor json", None), ("floor json gzip", "floor json"), ("floor protobuf", "floor json"),
    ("floor protobuf gzip", "floor json"), ("floor json read ahead", "floor json"),
    ("descheduler: informers synced", "floor json"), ("descheduler: first complete cycle", "floor json"),
    ("balance", "floor json"), ("balance: read only", "floor json"),
    ("balance --protobuf", "balance"), ("balance: read only --protobuf", "balance: read only"),
    ("balance --disable-compression", "floor json"), (FLOOR_CLIENT, None), ("explain node", FLOOR_CLIENT),
    ("version", None), ("completion", None),
    ("json.load", None), ("run --from-file", "json.load"),
    (DECODE_ALONE, None), (DECODE_BESIDE, DECODE_ALONE),
    ("link: floor json gzip", None), ("link: floor protobuf gzip", "link: floor json gzip"),
    ("link: floor json", "link: floor json gzip"), ("link: floor json read ahead gzip", "link: floor json gzip"),
    ("link: balance", "link: floor json gzip"),
    ("link: balance: read only", "link: floor json gzip"), ("link: balance --protobuf", "link: balance"),
]
COMPARED = "compared:"  # the rows of --compare's build, each against this build's same row
ROWS += [(f"{COMPARED} {name}", name) for name in ("balance", "balance: read only", "explain node",
                                                            "run --from-file", "link: balance")]


def megabytes(n: float) -> str:
    return f"{n / 1e6:,.0f} MB" if n >= 10e6 else f"{n / 1e6:.2g} MB"


def table(r: dict[str, Any]) -> str:
    lines = ["| | wall | ratio | client CPU | peak RSS | pod LISTs per run: cache / etcd | transfer |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, versus in ROWS:
        if name in r["skipped"]:
            lines.append(f"| {name} | {r['skipped'][name]} | | | | | |")
            continue
        if name not in r["median"]:
            continue
        ratio = f"{r['median'][name] / r['median'][versus]:.2f}x {versus}" if versus in r["median"] else ""
        step = "descheduler" if name.startswith("descheduler") else name
        lists = r["lists"].get(step)
        listed = f"{lists['from cache']:.0f} / {lists['etcd lists']:.0f}" if lists else ""
        info = r["info"].get(name, {})
        moved = (megabytes(info["wire_bytes"]) + (f" ({megabytes(info['bytes'])})"
                                                  if info["bytes"] != info["wire_bytes"] else "")
                 if "wire_bytes" in info else "")
        lines.append(f"| {name} | {r['median'][name]:.2f} s | {ratio} | {r['cpu'][name]:.2f} s "
                     f"| {r['rss'][name] / 2**20:,.0f} MiB | {listed} | {moved} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["floor"]:
        ap = argparse.ArgumentParser(prog="perf.py floor", description="the paginated pod LIST, thrown away")
        ap.add_argument("--kubeconfig", type=Path, required=True)
        ap.add_argument("--media", choices=("json", "protobuf"), default="json")
        ap.add_argument("--gzip", action=argparse.BooleanOptionalAction, default=False)
        ap.add_argument("--ahead", type=int, default=0, help="read ahead as the tool does, N pages at once")
        ap.add_argument("--again", action="store_true", help="read again and again until stopped (a load)")
        a = ap.parse_args(argv[1:])
        while True:
            found = floor_ahead(a.kubeconfig, a.gzip, a.ahead, media=a.media) if a.ahead else \
                floor(a.kubeconfig, a.media, a.gzip)
            if not a.again:
                break
        print("@floor " + json.dumps(found), file=sys.stderr)
        return 0
    if argv[:1] == ["decode"]:
        ap = argparse.ArgumentParser(prog="perf.py decode", description="the tool's page decoding, alone and beside "
                                     "a floor read (run by the python of the build to measure)")
        ap.add_argument("--kubeconfig", type=Path, required=True)
        print("@decode " + json.dumps(decode_contention(ap.parse_args(argv[1:]).kubeconfig)), file=sys.stderr)
        return 0
    sys.path.insert(0, str(HERE))  # apiload, clustergen
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--scale", choices=SCALES, default="small", help="small 200/6,000, mid 1,000/30,000, "
                    "full 5,000/150,000 nodes/pods (default small)")
    ap.add_argument("--nodes", type=int, help="instead of --scale")
    ap.add_argument("--pods", type=int, help="instead of --scale")
    ap.add_argument("--runs", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--skip", default="", help="comma-separated: floors, tool, uncompressed (balance with "
                    "--disable-compression), decode, start, descheduler, snapshot, link, link-json (the "
                    "uncompressed JSON floor over the link)")
    ap.add_argument("--mbit", type=float, default=100.0, help="the link's bandwidth (default 100 Mbit/s)")
    ap.add_argument("--rtt-ms", type=float, default=20.0, help="the link's round-trip time (default 20 ms)")
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache/kubectl-desched/bench",
                    help="generated snapshots and etcd data, kept between runs")
    ap.add_argument("--results", type=Path, help="also write the figures as JSON here")
    ap.add_argument("--compare", metavar="EXE", help="another build's kubectl-desched (a python beside it): its "
                    "balance, read and explain node measured in the same rounds, as `compared:` rows")
    ap.add_argument("--exe", default=str(Path(sys.executable).with_name("kubectl-desched")),
                    help="the kubectl-desched to measure (default: this venv's)")
    args = ap.parse_args(argv)
    args.nodes = args.nodes or SCALES[args.scale][0]
    args.pods = args.pods or SCALES[args.scale][1]
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if not os.access(args.exe, os.X_OK):
        ap.error(f"{args.exe} is not executable (pip install -e . in this virtualenv)")
    if args.compare and not (os.access(args.compare, os.X_OK) and Path(args.compare).with_name("python").exists()):
        ap.error(f"--compare {args.compare}: not an executable kubectl-desched with a python beside it")
    log(f"{args.nodes:,} nodes / {args.pods:,} pods, {args.runs} interleaved rounds")
    result = bench(args)
    if args.results:
        args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\n{result['nodes']:,} nodes / {result['pods']:,} pods, medians of {result['runs']} interleaved rounds, "
          f"{result['date']}; link {result['link']}; {result.get('plans', '')}; protobuf and JSON reads: "
          f"{result.get('protobuf', '')}")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
