"""A LocalCluster that behaves like a real one: kube-scheduler, kube-controller-manager and kwok beside etcd and the
kube-apiserver, all on 127.0.0.1.

kwok plays the kubelets: a Node annotated ``kwok.x-k8s.io/node: fake`` becomes Ready (and stays so: see
NODE_LEASE_SECONDS), the pods the scheduler binds to it become Running and Ready, and a pod being deleted goes away.
So Deployments and StatefulSets come up and replace evicted pods, the scheduler places the replacements, and the
disruption controller keeps every PodDisruptionBudget's status, as in a real cluster (about 5-15 s from an eviction
to a Running replacement).

With ``metrics_server`` (a metrics-server binary), kwok also serves each node's kubelet resource metrics, computed
from the pods' ``kwok.x-k8s.io/usage-cpu`` / ``usage-memory`` annotations, and metrics-server scrapes them and serves
metrics.k8s.io through the apiserver's aggregation layer.

Plain Python (no pytest) so examples/sim-cluster and a REPL can drive it too::

    with SimCluster(bin_dir, sim_bin_dir, Path("/tmp/sim")) as c:
        c.add_nodes(["n1", "n2"]); c.apply(deployment("default", "web", 3)); c.wait_workloads_ready("default")
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from localcluster import LOOPBACK, ClusterError, LocalCluster, free_port

FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
USAGE_CPU, USAGE_MEMORY = "kwok.x-k8s.io/usage-cpu", "kwok.x-k8s.io/usage-memory"
IMAGE = "registry.k8s.io/pause:3.10"  # never pulled: kwok only pretends to run it

# How nodes stay Ready. kwok renews each node's Lease every NODE_LEASE_SECONDS / 4 (measured 10-10.6 s, as a
# kubelet does) and then updates its status every 20-25 s; the node lifecycle controller, checking every 5 s, counts a
# node alive while a renewal or a status update came within the grace period. Without a lease duration kwok v0.7.0
# renews no Lease and updates a node's status only every 10 minutes: every node flipped NotReady 55 s after it
# joined, and the controller marked its pods Ready=False for good (kwok never sets them back), so every
# PodDisruptionBudget allowed 0 disruptions. tests/integration/test_sim_health.py watches for that.
NODE_LEASE_SECONDS = 40
NODE_MONITOR_GRACE_SECONDS = 50  # kube-controller-manager's default, stated so that the margin stays visible

T = TypeVar("T")

# Kind -> (API prefix, plural, namespaced): what apply() can create.
KINDS: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("/api/v1", "namespaces", False),
    "Node": ("/api/v1", "nodes", False),
    "Service": ("/api/v1", "services", True),
    "Pod": ("/api/v1", "pods", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "DaemonSet": ("/apis/apps/v1", "daemonsets", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "APIService": ("/apis/apiregistration.k8s.io/v1", "apiservices", False),
    "Endpoints": ("/api/v1", "endpoints", True),
    "Secret": ("/api/v1", "secrets", True),
}

# kwok's own recipe for metrics-server (kustomize/metrics/resource and usage in sigs.k8s.io/kwok): the kubelet's
# /metrics/resource, per node under /metrics/nodes/<node>/metrics/resource, with each pod's usage read from its
# annotations (1m / 1Mi without them).
KWOK_METRICS_CONFIG = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterResourceUsage
metadata:
  name: usage-from-annotation
spec:
  usages:
  - usage:
      cpu:
        expression: |
          "kwok.x-k8s.io/usage-cpu" in pod.metadata.annotations
          ? Quantity(pod.metadata.annotations["kwok.x-k8s.io/usage-cpu"]) : Quantity("1m")
      memory:
        expression: |
          "kwok.x-k8s.io/usage-memory" in pod.metadata.annotations
          ? Quantity(pod.metadata.annotations["kwok.x-k8s.io/usage-memory"]) : Quantity("1Mi")
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Metric
metadata:
  name: metrics-resource
spec:
  path: "/metrics/nodes/{nodeName}/metrics/resource"
  metrics:
  - {name: scrape_error, dimension: node, kind: gauge, help: "1 if there was an error", value: "0"}
  - name: container_start_time_seconds
    dimension: container
    kind: gauge
    help: "Start time of the container since unix epoch in seconds"
    labels: &container
    - {name: container, value: container.name}
    - {name: namespace, value: pod.metadata.namespace}
    - {name: pod, value: pod.metadata.name}
    value: pod.SinceSecond()
  - name: container_cpu_usage_seconds_total
    dimension: container
    kind: counter
    help: "Cumulative cpu time consumed by the container in core-seconds"
    labels: *container
    value: pod.CumulativeUsage("cpu", container.name)
  - name: container_memory_working_set_bytes
    dimension: container
    kind: gauge
    help: "Current working set of the container in bytes"
    labels: *container
    value: pod.Usage("memory", container.name)
  - name: pod_cpu_usage_seconds_total
    dimension: pod
    kind: counter
    help: "Cumulative cpu time consumed by the pod in core-seconds"
    labels: &pod
    - {name: namespace, value: pod.metadata.namespace}
    - {name: pod, value: pod.metadata.name}
    value: pod.CumulativeUsage("cpu")
  - name: pod_memory_working_set_bytes
    dimension: pod
    kind: gauge
    help: "Current working set of the pod in bytes"
    labels: *pod
    value: pod.Usage("memory")
  - name: node_cpu_usage_seconds_total
    dimension: node
    kind: counter
    help: "Cumulative cpu time consumed by the node in core-seconds"
    value: node.CumulativeUsage("cpu")
  - name: node_memory_working_set_bytes
    dimension: node
    kind: gauge
    help: "Current working set of the node in bytes"
    value: node.Usage("memory")
  # Not a kubelet metric: the node's allocatable, so that Prometheus can divide usage by it (kube-state-metrics'
  # kube_node_status_allocatable in a real cluster).
  - name: kwok_node_allocatable_cpu_cores
    dimension: node
    kind: gauge
    help: "The node's allocatable cpu in cores"
    value: node.status.allocatable["cpu"]
  - name: kwok_node_allocatable_memory_bytes
    dimension: node
    kind: gauge
    help: "The node's allocatable memory in bytes"
    value: node.status.allocatable["memory"]
"""

# Prometheus scrapes every node's kubelet metrics from kwok, found through the API (the node role of its Kubernetes
# service discovery), each sample's `instance` the node's name, as LowNodeUtilization's Prometheus source wants.
PROMETHEUS_CONFIG = """\
global: {{scrape_interval: {interval}s, evaluation_interval: {interval}s}}
rule_files: [{rules}]
scrape_configs:
- job_name: kwok-kubelets
  kubernetes_sd_configs: [{{role: node, kubeconfig_file: {kubeconfig}}}]
  relabel_configs:
  - {{source_labels: [__meta_kubernetes_node_name], target_label: instance}}
  - source_labels: [__meta_kubernetes_node_name]
    target_label: __metrics_path__
    replacement: /metrics/nodes/$1/metrics/resource
  - {{target_label: __address__, replacement: "{kwok}"}}
"""
# The per-node ratios in [0,1] a descheduler policy queries (a recording rule, as operators keep them).
PROMETHEUS_RULES = """\
groups:
- name: node-utilization
  rules:
  - record: instance:node_cpu:ratio
    expr: sum by (instance) (rate(node_cpu_usage_seconds_total[{window}s])) / on (instance)
      sum by (instance) (kwok_node_allocatable_cpu_cores)
  - record: instance:node_memory:ratio
    expr: sum by (instance) (node_memory_working_set_bytes) / on (instance)
      sum by (instance) (kwok_node_allocatable_memory_bytes)
"""
PROMETHEUS_QUERY = "instance:node_cpu:ratio"


def wait_until(check: Callable[[], T], timeout: float, what: str, interval: float = 0.5) -> T:
    """The first truthy value of ``check()``; ClusterError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise ClusterError(f"{what}: not within {timeout:.0f}s")
        time.sleep(interval)


def routable_address() -> str | None:
    """This host's own IPv4 address on its default route (no packet is sent), None without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("203.0.113.1", 9))  # TEST-NET-3: routed by default, never reached
        except OSError:
            return None
        found = str(s.getsockname()[0])
    return None if found.startswith("127.") or found == "0.0.0.0" else found


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


class SimCluster(LocalCluster):
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (and optionally metrics-server).

    ``bin_dir`` is build-binaries' directory, ``sim_bin_dir`` build-sim's. Only nodes made by ``add_nodes`` (or
    annotated as it does) come alive; a node made with LocalCluster.create_node would turn NotReady once the node
    lifecycle controller misses its heartbeats.
    """

    # The node lifecycle controller removes the not-ready taint this admission plugin puts on new nodes, as in a
    # real cluster. ServiceAccount stays off: pods would be refused until a new namespace's "default" account exists.
    disabled_admission_plugins = ("ServiceAccount",)

    def __init__(self, bin_dir: Path | str, sim_bin_dir: Path | str, work_dir: Path | str, *,
                 metrics_server: Path | str | None = None, **kw: Any) -> None:
        super().__init__(bin_dir, work_dir, **kw)
        self.sim_bin_dir = Path(sim_bin_dir)
        self.metrics_server = Path(metrics_server) if metrics_server else None
        self.kwok_port = 0
        self.metrics_port = 0
        self.prometheus_port = 0
        self.prometheus_host = LOOPBACK
        self.front_proxy: list[str] = []  # the apiserver's aggregation-layer flags; none without openssl
        self.logs = {name: self.work_dir / f"{name}.log"
                     for name in ("kube-controller-manager", "kube-scheduler", "kwok", "metrics-server", "prometheus")}

    # ------------------------------------------------------------------ lifecycle

    def start(self, attempts: int = 3) -> None:
        """The control plane (LocalCluster.start), then the controllers and kwok (and metrics-server if given)."""
        for binary in ("kube-controller-manager", "kube-scheduler", "kwok"):
            if not os.access(self.sim_bin_dir / binary, os.X_OK):
                raise ClusterError(f"{self.sim_bin_dir / binary} is missing or not executable")
        began = time.monotonic()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        # Always, so metrics-server can be added later: costs a few openssl calls.
        if not self.front_proxy:
            self.front_proxy = self._front_proxy_args()
            self.apiserver_args = [*self.front_proxy, *self.apiserver_args]
        super().start(attempts)
        try:
            self._start_components()
            if self.metrics_server:
                self.start_metrics_server(self.metrics_server)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began

    def _start_components(self) -> None:
        kubeconfig = f"--kubeconfig={self.kubeconfig}"
        self._spawn("kube-controller-manager", [
            str(self.sim_bin_dir / "kube-controller-manager"), kubeconfig,
            "--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false",
            # no token controller (tokens are not needed: ServiceAccount admission is off) and no pod CIDRs to hand out
            "--controllers=*,-serviceaccount-token,-nodeipam",
            f"--node-monitor-grace-period={NODE_MONITOR_GRACE_SECONDS}s", "--node-monitor-period=5s", "--v=1",
        ], self.logs["kube-controller-manager"])
        self._spawn("kube-scheduler", [
            str(self.sim_bin_dir / "kube-scheduler"), kubeconfig, "--leader-elect=false", "--secure-port=0",
            f"--v={os.environ.get('KDESCHED_SCHEDULER_V', '1')}",  # 10 logs every score it gives
        ], self.logs["kube-scheduler"])
        self._start_kwok()
        # The serviceaccount controller creates every namespace's "default" account: the controllers are working.
        self._wait_alive(lambda: self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default").ok,
                         "kube-controller-manager syncing (the default ServiceAccount)")

    def _wait_alive(self, check: Callable[[], Any], what: str, timeout: float | None = None) -> None:
        """Wait for ``check``, failing at once with the log of a component that exited meanwhile."""
        def step() -> Any:
            for name, proc in self._procs.items():
                if proc.poll() is not None:
                    log = self.logs.get(name, self.work_dir / f"{name}.log")
                    raise self._fail(f"{name} exited with code {proc.returncode}", log)
            try:
                return check()
            except OSError:
                return False
        wait_until(step, timeout or self.start_timeout, what, interval=0.2)

    def _start_kwok(self) -> None:
        self.kwok_port = free_port()
        kwok_dir = self.work_dir / "kwok"
        kwok_dir.mkdir(exist_ok=True)
        config = kwok_dir / "kwok.yaml"
        # Without stages in the config kwok uses its default ones (nodes Ready, pods Running, deletions complete);
        # the metrics are there whether or not metrics-server ever scrapes them.
        config.write_text(KWOK_METRICS_CONFIG)
        env = {**os.environ, "KWOK_WORKDIR": str(kwok_dir)}  # else it reads ~/.kwok/kwok.yaml when there is one
        args = [
            str(self.sim_bin_dir / "kwok"), f"--kubeconfig={self.kubeconfig}", f"--config={config}",
            f"--manage-nodes-with-annotation-selector={FAKE_NODE_ANNOTATION}=fake",
            f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",  # see NODE_LEASE_SECONDS
            # The address and port every fake node reports as its kubelet's, where metrics-server scrapes.
            f"--server-address={LOOPBACK}:{self.kwok_port}", f"--node-ip={LOOPBACK}", f"--node-port={self.kwok_port}",
        ]
        with self.logs["kwok"].open("ab") as out:
            self._procs["kwok"] = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out,
                                                   stderr=subprocess.STDOUT, cwd=self.work_dir, env=env)

        def healthy() -> bool:
            with urllib.request.urlopen(f"http://{LOOPBACK}:{self.kwok_port}/healthz", timeout=2) as r:
                return r.status == 200
        self._wait_alive(healthy, "kwok serving /healthz")

    def _front_proxy_args(self) -> list[str]:
        """Flags for the aggregation layer, so the apiserver can proxy metrics.k8s.io to metrics-server.

        A throw-away CA signs the client certificate the apiserver presents; metrics-server trusts that CA (read from
        kube-system/extension-apiserver-authentication) and takes the user from the X-Remote-* headers, as in a
        real cluster."""
        if shutil.which("openssl") is None:
            return []
        pki = self.work_dir / "front-proxy"
        pki.mkdir(exist_ok=True)
        ca, ca_key, client, client_key = (pki / n for n in ("ca.crt", "ca.key", "client.crt", "client.key"))
        if not client.exists():
            csr = pki / "client.csr"
            _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", str(ca_key), "-out", str(ca), "-days", "30", "-subj", "/CN=front-proxy-ca")
            _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", str(client_key), "-out", str(csr), "-subj", "/CN=front-proxy-client")
            _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
                     "-out", str(client), "-days", "30")
        return [
            f"--requestheader-client-ca-file={ca}", "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={client}", f"--proxy-client-key-file={client_key}",
        ]

    def start_metrics_server(self, binary: Path | str, timeout: float = 90) -> None:
        """Run metrics-server (built by build-metrics-server) and register it as metrics.k8s.io; returns once
        the API answers (its first scrape is a --metric-resolution later)."""
        if self.metrics_port:
            return
        if not self.front_proxy:
            raise ClusterError("metrics-server needs the aggregation layer, whose certificates need openssl on PATH")
        self.metrics_server = Path(binary)
        self.metrics_port = free_port()
        kubeconfig = str(self.kubeconfig)
        self._spawn("metrics-server", [
            str(binary), f"--bind-address={LOOPBACK}", f"--secure-port={self.metrics_port}",
            f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", f"--cert-dir={self.work_dir / 'metrics-server-certs'}",
            # kwok's node address is 127.0.0.1 and its port the one each node reports; its certificate is a test one
            "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port", "--kubelet-insecure-tls",
            # its shortest resolution; it must exceed the scrape timeout
            "--metric-resolution=10s", "--kubelet-request-timeout=5s", "--v=1",
        ], self.logs["metrics-server"])
        try:
            self._register_metrics_api(timeout)
        except BaseException:
            self._stop_components("metrics-server")  # the rest of the cluster goes on without it
            self.request("DELETE", "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io")
            raise

    def _register_metrics_api(self, timeout: float) -> None:
        # The apiserver reaches an aggregated API through a Service; without kube-proxy only an ExternalName one
        # resolves (to the loopback address metrics-server listens on).
        self.apply({"apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "metrics-server", "namespace": "kube-system"},
                    "spec": {"type": "ExternalName", "externalName": "localhost",
                             "ports": [{"name": "https", "port": self.metrics_port}]}})
        self.apply({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": "v1beta1.metrics.k8s.io"},
                    "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                             "versionPriority": 100, "insecureSkipTLSVerify": True,
                             "service": {"name": "metrics-server", "namespace": "kube-system",
                                         "port": self.metrics_port}}})
        self._wait_alive(lambda: self.request("GET", "/apis/metrics.k8s.io/v1beta1/nodes").ok,
                         "metrics.k8s.io served through the aggregator", timeout)

    def start_prometheus(self, binary: Path | str, timeout: float = 90, interval: int = 2) -> str:
        """Run Prometheus (built by build-prometheus) scraping kwok, with the node-utilization recording rules;
        returns its URL once the rule has a value for every node. Also a Service monitoring/prometheus without a
        selector whose Endpoints are that address, for the apiserver's service proxy."""
        if self.prometheus_port:
            return self.prometheus_url
        self.prometheus_port = free_port()
        # The apiserver proxies to no loopback address (Endpoints refuse one): Prometheus listens on this host's
        # own, where it has one.
        self.prometheus_host = routable_address() or LOOPBACK
        pdir = self.work_dir / "prometheus"
        pdir.mkdir(exist_ok=True)
        rules = pdir / "rules.yml"
        rules.write_text(PROMETHEUS_RULES.format(window=max(10, 5 * interval)))
        config = pdir / "prometheus.yml"
        config.write_text(PROMETHEUS_CONFIG.format(interval=interval, rules=json.dumps(str(rules)),
                                                   kubeconfig=json.dumps(str(self.kubeconfig)),
                                                   kwok=f"{LOOPBACK}:{self.kwok_port}"))
        self._spawn("prometheus", [
            str(binary), f"--config.file={config}", f"--storage.tsdb.path={pdir / 'data'}",
            f"--web.listen-address={self.prometheus_host}:{self.prometheus_port}", "--log.level=warn",
        ], self.logs["prometheus"])
        try:
            self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}})
            if self.prometheus_host != LOOPBACK:
                self._prometheus_service()
            nodes = {n["metadata"]["name"] for n in self.request("GET", "/api/v1/nodes").body["items"]}
            self._wait_alive(lambda: nodes <= set(self.prometheus_values()),
                             f"Prometheus recording {PROMETHEUS_QUERY} for every node", timeout)
        except BaseException:
            self._stop_components("prometheus")
            raise
        return self.prometheus_url

    def _prometheus_service(self) -> None:
        """A Service without a selector whose Endpoints are Prometheus's address, for the apiserver's service proxy.
        It proxies only to an address a pod of the namespace has (isValidAddress in its service storage), so a pod
        stands for the process: never scheduled (its node selector matches no node), its status given that IP."""
        meta = {"name": "prometheus", "namespace": "monitoring"}
        for path in ("services", "endpoints"):  # a restarted Prometheus has a new port
            self.request("DELETE", f"/api/v1/namespaces/monitoring/{path}/prometheus")
        self.apply({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "prometheus-0", "namespace": "monitoring",
                         "annotations": {"sim-cluster": "stands for the Prometheus process, for the service proxy"}},
            "spec": {"nodeSelector": {"sim-cluster/none": "none"},
                     "containers": [{"name": "prometheus", "image": IMAGE}]}})
        self._must("PATCH", "/api/v1/namespaces/monitoring/pods/prometheus-0/status",  # the scheduler writes it too
                   {"status": {"podIP": self.prometheus_host, "podIPs": [{"ip": self.prometheus_host}]}},
                   content_type="application/merge-patch+json")
        self.apply({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                    "spec": {"ports": [{"name": "web", "port": self.prometheus_port}]}})
        self.apply({"apiVersion": "v1", "kind": "Endpoints", "metadata": meta,
                    "subsets": [{"addresses": [{"ip": self.prometheus_host, "targetRef": {
                        "kind": "Pod", "namespace": "monitoring", "name": "prometheus-0"}}],
                                 "ports": [{"name": "web", "port": self.prometheus_port}]}]})

    @property
    def prometheus_url(self) -> str:
        return f"http://{self.prometheus_host}:{self.prometheus_port}"

    def prometheus_values(self, query: str = PROMETHEUS_QUERY) -> dict[str, float]:
        """The query's instant value per `instance`, straight from Prometheus."""
        url = f"{self.prometheus_url}/api/v1/query?query={urllib.parse.quote(query)}"
        with urllib.request.urlopen(url, timeout=5) as r:
            doc = json.load(r)
        return {s["metric"].get("instance", ""): float(s["value"][1]) for s in doc["data"]["result"]}

    def stop(self) -> None:
        """Stop what was started on top of the control plane, then the control plane. Safe to call more than once."""
        self._stop_components("prometheus", "metrics-server", "kwok", "kube-scheduler", "kube-controller-manager")
        super().stop()

    def _stop_components(self, *names: str) -> None:
        if "metrics-server" in names:
            self.metrics_port = 0
        if "prometheus" in names:
            self.prometheus_port = 0
        self._stop_named(*names)

    def pids(self) -> dict[str, int]:
        """Process ids of the running components, by name."""
        return {name: p.pid for name, p in self._procs.items() if p.poll() is None}

    # ------------------------------------------------------------------ objects

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create ``obj`` (a kind of KINDS); an object that already exists is left as it is and returned."""
        prefix, plural, namespaced = KINDS[obj["kind"]]
        ns = obj["metadata"].get("namespace", "default")
        path = f"{prefix}/namespaces/{ns}/{plural}" if namespaced else f"{prefix}/{plural}"
        r = self.request("POST", path, obj)
        if r.status == 409:
            return self._must("GET", f"{path}/{obj['metadata']['name']}")
        if not r.ok:
            raise ClusterError(f"creating {obj['kind']} {obj['metadata']['name']} -> {r.status}: {r.body}")
        return r.body  # type: ignore[no-any-return]

    def add_nodes(self, names: Iterable[str], cpu: str = "4", memory: str = "16Gi", pods: str = "110",
                  labels: Mapping[str, str] | None = None, taints: Sequence[Mapping[str, Any]] = (),
                  wait: bool = True, timeout: float = 60) -> list[str]:
        """Nodes kwok keeps alive, registered as a kubelet would (allocatable = capacity); by default waits until
        they are Ready and schedulable (the node lifecycle controller lifted the not-ready taint)."""
        names = list(names)
        for name in names:
            resources = {"cpu": cpu, "memory": memory, "pods": pods}
            self.apply({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name,
                             "annotations": {FAKE_NODE_ANNOTATION: "fake",
                                             # metrics-server scrapes this path (kwok serves every node on one port)
                                             "metrics.k8s.io/resource-metrics-path":
                                                 f"/metrics/nodes/{name}/metrics/resource"},
                             "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                        "kubernetes.io/arch": "amd64", "type": "kwok", **(labels or {})}},
                "spec": {"taints": [dict(t) for t in taints]},
                "status": {"capacity": resources, "allocatable": resources},
            })
        if wait:
            self.wait_nodes_ready(names, timeout)
        return names

    def wait_nodes_ready(self, names: Iterable[str], timeout: float = 60) -> None:
        pending = set(names)

        def ready() -> bool:
            for name in list(pending):
                node = self._must("GET", f"/api/v1/nodes/{name}")
                conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions") or []}
                taints = {t["key"] for t in node["spec"].get("taints") or []}
                if conditions.get("Ready") == "True" and "node.kubernetes.io/not-ready" not in taints:
                    pending.discard(name)
            return not pending
        self._wait_alive(ready, f"nodes Ready ({', '.join(sorted(pending))})", timeout)

    def pods(self, namespace: str, selector: str = "") -> list[dict[str, Any]]:
        query = {"labelSelector": selector} if selector else None
        return self._must("GET", f"/api/v1/namespaces/{namespace}/pods", query=query)["items"]  # type: ignore[no-any-return]

    def placements(self, namespace: str, selector: str = "") -> dict[str, str]:
        """Pod name -> node, for the pods that are not terminating ("" while unscheduled)."""
        return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in self.pods(namespace, selector)
                if not p["metadata"].get("deletionTimestamp")}

    def workloads_settled(self, namespace: str) -> str:
        """"" when every Deployment, StatefulSet and DaemonSet in the namespace has all its replicas ready and
        current, every pod is Running and Ready with none terminating, and every PDB's status is up to date with
        all its pods healthy; else what is still moving."""
        waiting = []
        for plural, want_key, ready_key, current_key in (
            ("deployments", None, "readyReplicas", "updatedReplicas"),
            ("statefulsets", None, "readyReplicas", "replicas"),
            ("daemonsets", "desiredNumberScheduled", "numberReady", "updatedNumberScheduled"),
        ):
            for w in self._must("GET", f"/apis/apps/v1/namespaces/{namespace}/{plural}")["items"]:
                status, meta = w.get("status") or {}, w["metadata"]
                want = status.get(want_key, 0) if want_key else w["spec"].get("replicas", 1)
                ready, current = status.get(ready_key) or 0, status.get(current_key) or 0
                # status.replicas counts old pods too: a Deployment mid-rollout or a StatefulSet with extras
                extra = status.get("replicas", want) if want_key is None else want
                stale = (status.get("observedGeneration") or 0) < meta["generation"]
                if stale or not ready == current == extra == want:
                    waiting.append(f"{plural[:-1]} {meta['name']}: {ready}/{want} ready")
        for p in self.pods(namespace):
            conditions = {c["type"]: c["status"] for c in p.get("status", {}).get("conditions") or []}
            if p["metadata"].get("deletionTimestamp") or conditions.get("Ready") != "True":
                waiting.append(f"pod {p['metadata']['name']}: {p.get('status', {}).get('phase')}")
        for b in self._must("GET", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets")["items"]:
            status = b.get("status") or {}
            if status.get("observedGeneration") != b["metadata"]["generation"] \
                    or status.get("currentHealthy") != status.get("expectedPods"):
                waiting.append(f"pdb {b['metadata']['name']}: {status.get('currentHealthy')}/"
                               f"{status.get('expectedPods')} healthy")
        return "; ".join(waiting)

    def wait_workloads_ready(self, namespace: str, timeout: float = 120) -> None:
        last = ["nothing read yet"]

        def settled() -> bool:
            last[0] = self.workloads_settled(namespace)
            return not last[0]
        try:
            self._wait_alive(settled, f"workloads of {namespace} settled", timeout)
        except ClusterError as e:
            raise ClusterError(f"{e} (still: {last[0]})") from None

    def pdb(self, namespace: str, name: str) -> dict[str, Any]:
        return self._must("GET", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}")


# ---------------------------------------------------------------------- manifests


def pod_template(labels: Mapping[str, str], cpu: str, memory: str, *, node_selector: Mapping[str, str] | None = None,
                 priority_class: str | None = None, usage: tuple[str, str] | None = None,
                 tolerations: Sequence[Mapping[str, Any]] = (), volumes: Sequence[Mapping[str, Any]] = ()
                 ) -> dict[str, Any]:
    """``usage`` (cpu, memory) is what kwok reports to metrics-server for each pod of the template."""
    meta: dict[str, Any] = {"labels": dict(labels)}
    if usage:
        meta["annotations"] = {USAGE_CPU: usage[0], USAGE_MEMORY: usage[1]}
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": IMAGE,
                        "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        "terminationGracePeriodSeconds": 30,
        # kwok's fake nodes are just nodes to the scheduler; pods need nothing to land there
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if priority_class:
        spec["priorityClassName"] = priority_class
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if volumes:
        spec["volumes"] = [dict(v) for v in volumes]
    return {"metadata": meta, "spec": spec}


def deployment(namespace: str, name: str, replicas: int, cpu: str = "500m", memory: str = "256Mi",
               **template: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": pod_template(labels, cpu, memory, **template)}}


def statefulset(namespace: str, name: str, replicas: int, cpu: str = "500m", memory: str = "512Mi",
                **template: Any) -> list[dict[str, Any]]:
    """The StatefulSet and the headless Service it names."""
    labels = {"app": name}
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
         "spec": {"clusterIP": "None", "selector": labels, "ports": [{"name": "main", "port": 80}]}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": namespace},
         "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": labels},
                  # Parallel: the pods come up together, as the test cluster has no reason to order them
                  "podManagementPolicy": "Parallel",
                  "template": pod_template(labels, cpu, memory, **template)}},
    ]


def daemonset(namespace: str, name: str, cpu: str = "100m", memory: str = "64Mi", **template: Any) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": labels}, "template": pod_template(labels, cpu, memory, **template)}}


def pdb(namespace: str, name: str, app: str, *, min_available: int | str | None = None,
        max_unavailable: int | str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": app}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}
