"""A throw-away Kubernetes control plane (etcd + kube-apiserver) on loopback, for integration tests.

There is no scheduler, controller-manager or kubelet: objects only change when a test changes them.
The helpers therefore write what those components would normally write (node status, pod phase and
conditions, PodDisruptionBudget status) through the status subresources.

Plain Python on purpose (no pytest import) so it can also be driven from a REPL::

    c = LocalCluster(bin_dir, Path("/tmp/kc")); c.start(); c.kubectl("get", "ns"); c.stop()
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

LOOPBACK = "127.0.0.1"
ADMIN_USER = "admin"
LIMITED_USER = "limited"

# Admission plugins switched off, on top of the defaults:
# - ServiceAccount: would reject every pod, because no token controller creates the "default"
#   ServiceAccount in a new namespace.
# - TaintNodesByCondition: would add a node.kubernetes.io/not-ready:NoSchedule taint to every new
#   node, and no node-lifecycle controller would ever remove it; tests set taints explicitly.
DISABLED_ADMISSION_PLUGINS = ("ServiceAccount", "TaintNodesByCondition")

OWNER_API_VERSIONS = {
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Deployment": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
    "ReplicationController": "v1",
    "Node": "v1",
}


class ClusterError(RuntimeError):
    """The local control plane could not be started, or an API call failed unexpectedly."""


@dataclass(frozen=True)
class Response:
    """Outcome of a raw API call: HTTP status and the decoded JSON body (None when not JSON)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def write_service_account_keys(private_path: Path, public_path: Path) -> None:
    """ECDSA P-256 key pair for signing service-account tokens (the apiserver requires one)."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
    except ImportError:
        subprocess.run(
            ["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", str(private_path)],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            ["openssl", "ec", "-in", str(private_path), "-pubout", "-out", str(public_path)],
            check=True,
            capture_output=True,
        )
        return
    key = ec.generate_private_key(ec.SECP256R1())
    private_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public_path.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )


class LocalCluster:
    """etcd + kube-apiserver listening on 127.0.0.1 only, with token users ``admin`` and ``limited``.

    ``admin`` is in system:masters; ``limited`` is in ``limited-users``, which no RBAC binding
    mentions, so every request it makes beyond discovery gets 403.
    """

    disabled_admission_plugins: tuple[str, ...] = DISABLED_ADMISSION_PLUGINS  # a subclass with controllers needs fewer

    def __init__(self, bin_dir: Path | str, work_dir: Path | str, *, start_timeout: float = 60.0,
                 etcd_args: Sequence[str] = (), apiserver_args: Sequence[str] = (), keep_data: bool = False) -> None:
        """``etcd_args``/``apiserver_args`` are appended to the flags below (a later flag wins);
        ``keep_data`` starts on the etcd data already in ``work_dir`` (benchmarks reuse a loaded cluster)."""
        self.bin_dir = Path(bin_dir)
        self.work_dir = Path(work_dir)
        self.start_timeout = start_timeout
        self.etcd_args = list(etcd_args)
        self.apiserver_args = list(apiserver_args)
        self.keep_data = keep_data
        self.tokens = {ADMIN_USER: secrets.token_hex(16), LIMITED_USER: secrets.token_hex(16)}
        self.etcd_url = ""
        self.server = ""
        self.ca_file = self.work_dir / "ca.crt"
        self.kubeconfig = self.work_dir / "admin.kubeconfig"
        self.limited_kubeconfig = self.work_dir / "limited.kubeconfig"
        self.etcd_log = self.work_dir / "etcd.log"
        self.apiserver_log = self.work_dir / "kube-apiserver.log"
        self.start_seconds = 0.0
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._ssl: ssl.SSLContext | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> LocalCluster:
        try:
            self.start()
        except BaseException:
            self.stop()  # whatever did start must not outlive the test run
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, attempts: int = 3) -> None:
        """Start etcd and the apiserver and wait until /readyz passes.

        Ports are picked free and then handed to the processes, so another process can grab one
        in between; a start that dies on "address already in use" is retried with new ports.
        """
        for binary in ("etcd", "kube-apiserver", "kubectl"):
            if not os.access(self.bin_dir / binary, os.X_OK):
                raise ClusterError(f"{self.bin_dir / binary} is missing or not executable")
        began = time.monotonic()
        for attempt in range(1, attempts + 1):
            try:
                self._start_once()
                break
            except ClusterError as e:
                self.stop()
                if attempt == attempts or "address already in use" not in str(e):
                    raise
        self.start_seconds = time.monotonic() - began

    def _start_once(self) -> None:
        if self.work_dir.exists():
            for name in ("certs",) if self.keep_data else ("etcd-data", "certs"):
                shutil.rmtree(self.work_dir / name, ignore_errors=True)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._ssl = None
        self._start_etcd()
        self._start_apiserver()
        self._write_kubeconfigs()

    def _spawn(self, name: str, args: list[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=self.work_dir
            )
        self._procs[name] = proc
        return proc

    def _fail(self, message: str, log: Path) -> ClusterError:
        return ClusterError(f"{message}\n--- last lines of {log} ---\n{tail(log)}")

    def _start_etcd(self) -> None:
        client_port, peer_port = free_port(), free_port()
        self.etcd_url = f"http://{LOOPBACK}:{client_port}"
        peer_url = f"http://{LOOPBACK}:{peer_port}"
        proc = self._spawn(
            "etcd",
            [
                str(self.bin_dir / "etcd"),
                "--name=kdesched",
                f"--data-dir={self.work_dir / 'etcd-data'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=kdesched={peer_url}",
                "--initial-cluster-state=new",
                "--unsafe-no-fsync",  # throw-away data: skip fsync for speed
                "--log-level=warn",
                *self.etcd_args,
            ],
            self.etcd_log,
        )
        deadline = time.monotonic() + self.start_timeout
        while True:
            if proc.poll() is not None:
                raise self._fail(f"etcd exited with code {proc.returncode}", self.etcd_log)
            try:
                with urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2) as r:
                    if json.loads(r.read()).get("health") == "true":
                        return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise self._fail(f"etcd not healthy after {self.start_timeout:.0f}s", self.etcd_log)
            time.sleep(0.1)

    def _start_apiserver(self) -> None:
        port = free_port()
        self.server = f"https://{LOOPBACK}:{port}"
        cert_dir = self.work_dir / "certs"
        cert_dir.mkdir(exist_ok=True)
        sa_key, sa_pub = self.work_dir / "sa.key", self.work_dir / "sa.pub"
        if not sa_key.exists():
            write_service_account_keys(sa_key, sa_pub)
        tokens = self.work_dir / "tokens.csv"
        tokens.write_text(
            f'{self.tokens[ADMIN_USER]},{ADMIN_USER},uid-admin,"system:masters"\n'
            f'{self.tokens[LIMITED_USER]},{LIMITED_USER},uid-limited,"limited-users"\n'
        )
        proc = self._spawn(
            "kube-apiserver",
            [
                str(self.bin_dir / "kube-apiserver"),
                f"--etcd-servers={self.etcd_url}",
                f"--bind-address={LOOPBACK}",
                f"--advertise-address={LOOPBACK}",
                f"--secure-port={port}",
                f"--cert-dir={cert_dir}",
                f"--token-auth-file={tokens}",
                "--authorization-mode=RBAC",
                f"--disable-admission-plugins={','.join(self.disabled_admission_plugins)}",
                f"--service-account-key-file={sa_pub}",
                f"--service-account-signing-key-file={sa_key}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.0.0.0/24",
                # The "kubernetes" Service endpoints would be 127.0.0.1, which Endpoints
                # validation rejects; nothing in the tests needs that Service to have endpoints.
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                "--v=1",
                *self.apiserver_args,
            ],
            self.apiserver_log,
        )
        serving_cert = cert_dir / "apiserver.crt"
        deadline = time.monotonic() + self.start_timeout
        last = "no response yet"
        while True:
            if proc.poll() is not None:
                raise self._fail(f"kube-apiserver exited with code {proc.returncode}", self.apiserver_log)
            if self._ssl is None and serving_cert.exists():
                self._extract_ca(serving_cert)
            if self._ssl is not None:
                try:
                    req = urllib.request.Request(
                        f"{self.server}/readyz",
                        headers={"Authorization": f"Bearer {self.tokens[ADMIN_USER]}"},
                    )
                    with urllib.request.urlopen(req, timeout=5, context=self._ssl) as r:
                        if r.status == 200:
                            return
                except urllib.error.HTTPError as e:
                    last = f"HTTP {e.code}: {e.read().decode(errors='replace')[-2000:]}"
                except (OSError, ValueError) as e:
                    last = repr(e)
            if time.monotonic() > deadline:
                raise self._fail(
                    f"kube-apiserver not ready after {self.start_timeout:.0f}s ({last})", self.apiserver_log
                )
            time.sleep(0.2)

    def _extract_ca(self, serving_cert: Path) -> None:
        """Write the CA that signed the self-generated serving certificate to ca.crt.

        With --cert-dir and no certificate given, the apiserver creates a throw-away CA and writes
        ``apiserver.crt`` as the serving certificate followed by that CA's certificate.
        """
        blocks = re.findall(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", serving_cert.read_text(), re.S)
        if len(blocks) < 2:
            return  # still being written
        self.ca_file.write_text(blocks[-1] + "\n")
        self._ssl = ssl.create_default_context(cafile=str(self.ca_file))

    def _write_kubeconfigs(self) -> None:
        for user, path in ((ADMIN_USER, self.kubeconfig), (LIMITED_USER, self.limited_kubeconfig)):
            config = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "local", "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)}}
                ],
                "users": [{"name": user, "user": {"token": self.tokens[user]}}],
                "contexts": [{"name": "local", "context": {"cluster": "local", "user": user, "namespace": "default"}}],
                "current-context": "local",
                "preferences": {},
            }
            path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is valid kubeconfig YAML
            path.chmod(0o600)

    def stop(self) -> None:
        """Terminate the apiserver, then etcd. Safe to call more than once."""
        self._stop_named("kube-apiserver", "etcd")

    def _stop_named(self, *names: str) -> None:
        """Terminate these components in this order (those not running are skipped), killing any that hang."""
        for name in names:
            proc = self._procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)

    @property
    def running(self) -> bool:
        return bool(self._procs) and all(p.poll() is None for p in self._procs.values())

    # ------------------------------------------------------------------ clients

    def kubeconfig_for(self, user: str = ADMIN_USER) -> Path:
        return {ADMIN_USER: self.kubeconfig, LIMITED_USER: self.limited_kubeconfig}[user]

    def api_client(self, user: str = ADMIN_USER) -> Any:
        """A kubernetes.client.ApiClient loaded from that user's kubeconfig (TLS verified)."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig_for(user)), context="local")

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, str] | None = None,
        user: str = ADMIN_USER,
        content_type: str = "application/json",
    ) -> Response:
        """One raw HTTP call; never raises for HTTP error statuses (look at ``Response.status``)."""
        if self._ssl is None:
            raise ClusterError("cluster is not started")
        url = self.server + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Authorization": f"Bearer {self.tokens[user]}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=data, method=method.upper(), headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30, context=self._ssl) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        return Response(status, decoded)

    def _must(self, method: str, path: str, body: Any = None, **kw: Any) -> dict[str, Any]:
        r = self.request(method, path, body, **kw)
        if not r.ok:
            raise ClusterError(f"{method} {path} -> {r.status}: {r.body}")
        return r.body  # type: ignore[no-any-return]

    def kubectl(self, *args: str, user: str = ADMIN_USER, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run the built kubectl against this cluster (admin kubeconfig unless ``user`` says otherwise)."""
        return subprocess.run(
            [
                str(self.bin_dir / "kubectl"),
                f"--kubeconfig={self.kubeconfig_for(user)}",
                f"--cache-dir={self.work_dir / 'kubectl-cache'}",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    # ------------------------------------------------------------------ object helpers

    def create_namespace(self, name: str) -> dict[str, Any]:
        return self._must(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )

    def create_node(
        self,
        name: str,
        cpu: str = "4",
        memory: str = "8Gi",
        pods: str = "110",
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, Any]] | None = None,
        unschedulable: bool = False,
        ready: bool = True,
    ) -> dict[str, Any]:
        """Create a Node as a kubelet would register it: capacity, allocatable and a Ready condition.

        ``taints`` are dicts like ``{"key": "k", "value": "v", "effect": "NoSchedule"}``.
        """
        now = now_rfc3339()
        resources = {"cpu": cpu, "memory": memory, "pods": pods}
        status = {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status" if ready else "kubelet stopped posting status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "addresses": [{"type": "Hostname", "address": name}],
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": "",
                "osImage": "",
                "containerRuntimeVersion": "",
                "kubeletVersion": "",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    **(labels or {}),
                },
            },
            "spec": {"unschedulable": unschedulable, "taints": [dict(t) for t in taints or []]},
            "status": status,
        }
        node = self._must("POST", "/api/v1/nodes", body)
        if node.get("status", {}).get("allocatable") != resources or not node["status"].get("conditions"):
            # Not expected (Node create keeps status), but keep the contract if that ever changes.
            node["status"] = status
            node = self._must("PUT", f"/api/v1/nodes/{name}/status", node)
        return node

    def ensure_priority_class(self, value: int) -> str:
        """Name of a PriorityClass with that value, created on first use."""
        name = f"kdesched-priority-{value}".replace("--", "-minus-")
        r = self.request(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value},
        )
        if not r.ok and r.status != 409:
            raise ClusterError(f"creating PriorityClass {name} -> {r.status}: {r.body}")
        return name

    def create_pod(
        self,
        namespace: str,
        name: str,
        node: str | None,
        cpu: str = "100m",
        memory: str = "128Mi",
        labels: Mapping[str, str] | None = None,
        owner_kind: str | None = "ReplicaSet",
        owner_name: str | None = None,
        volumes: Sequence[Mapping[str, Any]] | None = None,
        priority: int | str | None = None,
        annotations: Mapping[str, str] | None = None,
        tolerations: Sequence[Mapping[str, Any]] | None = None,
        phase: str = "Running",
        owner_uid: str | None = None,
    ) -> dict[str, Any]:
        """Create a pod bound to ``node`` and give it the status a kubelet would report.

        ``priority`` is a PriorityClass name, or an int (a matching PriorityClass is created, as
        the Priority admission plugin rejects a bare spec.priority). ``owner_kind=None`` makes a
        bare pod; otherwise a controller owner reference to ``owner_name`` (which need not exist)
        is added, with ``owner_uid`` (an existing owner's) or a random one. ``phase`` is Running, Pending, Succeeded
        or Failed.
        """
        metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
        if annotations:
            metadata["annotations"] = dict(annotations)
        if owner_kind:
            metadata["ownerReferences"] = [
                {
                    "apiVersion": OWNER_API_VERSIONS.get(owner_kind, "apps/v1"),
                    "kind": owner_kind,
                    "name": owner_name or f"{name}-{owner_kind.lower()}",
                    # one owner, one UID: pods given the same owner share it, as a controller's pods do
                    "uid": owner_uid
                    or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{owner_kind}/{owner_name or name}")),
                    "controller": True,
                }
            ]
        spec: dict[str, Any] = {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            "terminationGracePeriodSeconds": 30,
        }
        if node:
            spec["nodeName"] = node
        if volumes:
            spec["volumes"] = [dict(v) for v in volumes]
        if tolerations:
            spec["tolerations"] = [dict(t) for t in tolerations]
        if isinstance(priority, int):
            spec["priorityClassName"] = self.ensure_priority_class(priority)
        elif priority:
            spec["priorityClassName"] = priority
        pod = self._must(
            "POST",
            f"/api/v1/namespaces/{namespace}/pods",
            {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec},
        )
        pod["status"] = self._pod_status(pod, phase)
        return self._must("PUT", f"/api/v1/namespaces/{namespace}/pods/{name}/status", pod)

    @staticmethod
    def _pod_status(pod: dict[str, Any], phase: str) -> dict[str, Any]:
        now = now_rfc3339()
        status = dict(pod.get("status") or {})  # keeps the qosClass the apiserver computed
        scheduled = bool(pod["spec"].get("nodeName"))
        running = phase == "Running"

        def cond(kind: str, ok: bool) -> dict[str, str]:
            return {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": now}

        status["phase"] = phase
        status["conditions"] = [
            cond("PodScheduled", scheduled),
            cond("Initialized", scheduled),
            cond("ContainersReady", running),
            cond("Ready", running),
        ]
        if phase == "Pending":
            return status
        status["startTime"] = now
        if running:
            state: dict[str, Any] = {"running": {"startedAt": now}}
        else:
            code = 0 if phase == "Succeeded" else 1
            reason = "Completed" if code == 0 else "Error"
            state = {"terminated": {"exitCode": code, "reason": reason, "startedAt": now, "finishedAt": now}}
        status["containerStatuses"] = [
            {
                "name": c["name"],
                "image": c["image"],
                "imageID": "",
                "ready": running,
                "started": running,
                "restartCount": 0,
                "state": state,
            }
            for c in pod["spec"]["containers"]
        ]
        return status

    def create_replica_set(self, namespace: str, name: str, replicas: int) -> dict[str, Any]:
        """A ReplicaSet (no controller manager runs, so it makes no pods): Koordinator reads an owner's replicas."""
        labels = {"replica-set": name}
        return self._must("POST", f"/apis/apps/v1/namespaces/{namespace}/replicasets", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}}})

    def create_pdb(
        self,
        namespace: str,
        name: str,
        match_labels: Mapping[str, str],
        min_available: int | str = 1,
        disruptions_allowed: int = 0,
    ) -> dict[str, Any]:
        """Create a PodDisruptionBudget and write the status the disruption controller would.

        The eviction API answers 429 for a budget whose status.observedGeneration is behind
        metadata.generation ("still being processed"), so without a controller the status must be
        written for ``disruptions_allowed`` to mean anything. Pod counts come from the pods
        currently matching the selector.
        """
        pdb = self._must(
            "POST",
            f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"minAvailable": min_available, "selector": {"matchLabels": dict(match_labels)}},
            },
        )
        return self.set_pdb_status(namespace, name, disruptions_allowed, pdb=pdb)

    def set_pdb_status(
        self, namespace: str, name: str, disruptions_allowed: int, *, pdb: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}"
        pdb = pdb or self._must("GET", path)
        selector = ",".join(f"{k}={v}" for k, v in pdb["spec"]["selector"].get("matchLabels", {}).items())
        pods = self._must("GET", f"/api/v1/namespaces/{namespace}/pods", query={"labelSelector": selector})["items"]
        healthy = sum(
            1
            for p in pods
            if not p["metadata"].get("deletionTimestamp")
            and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in p.get("status", {}).get("conditions", [])
            )
        )
        desired = pdb["spec"].get("minAvailable")
        pdb["status"] = {
            "observedGeneration": pdb["metadata"]["generation"],
            "disruptionsAllowed": disruptions_allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired if isinstance(desired, int) else max(healthy - disruptions_allowed, 0),
            "expectedPods": len(pods),
        }
        return self._must("PUT", f"{path}/status", pdb)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        r = self.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        if r.status == 404:
            return None
        if not r.ok:
            raise ClusterError(f"GET pod {namespace}/{name} -> {r.status}: {r.body}")
        return r.body  # type: ignore[no-any-return]

    def evict(
        self,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        dry_run: bool = False,
        user: str = ADMIN_USER,
    ) -> Response:
        """POST a policy/v1 Eviction for the pod, optionally with a UID precondition."""
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if uid:
            body["deleteOptions"] = {"preconditions": {"uid": uid}}
        return self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
            body,
            query={"dryRun": "All"} if dry_run else None,
            user=user,
        )
