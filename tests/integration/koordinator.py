"""Koordinator's APIs on the test apiserver, and a stand-in for the migration controller.

The CRDs are Koordinator's own, read from its Go module (config/crd/bases of
github.com/koordinator-sh/koordinator@v1.8.0, via `go mod download`); where the module cannot be had, the
hand-written stand-ins in tests/cluster/crds serve the tests that do not run Koordinator itself.

FakeMigrationController plays the migration controller's part where the real one is not wanted (scripted phases,
failures on demand): it watches the jobs and writes the statuses the controller would, through the status
subresource, evicting the pod through the Eviction API where the real controller would. The real one runs in
tests/integration/test_migration_jobs_koord.py (koord-descheduler built by tests/cluster/build-koord-descheduler)."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.oracle.koord import crd_files
from tests.processes import end

CRD_DIR = Path(__file__).resolve().parents[1] / "cluster" / "crds"
CRD_NAME = "podmigrationjobs.scheduling.koordinator.sh"
FALLBACKS = {"scheduling.koordinator.sh_podmigrationjobs.yaml": CRD_DIR / "podmigrationjobs.yaml",
             "slo.koordinator.sh_nodemetrics.yaml": CRD_DIR / "koordinator-nodemetric.yaml"}


def crd_manifest(name: str) -> Path:
    """Koordinator's CRD file `name` from its module, or the hand-written stand-in when the module cannot be had."""
    files, _why = crd_files()
    found = next((f for f in files or () if f.name == name), None)
    return found or FALLBACKS[name]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GROUP_VERSION = "/apis/scheduling.koordinator.sh/v1alpha1"
JOBS = f"{GROUP_VERSION}/podmigrationjobs"


def _served(cluster: Any) -> bool:
    r = cluster.request("GET", GROUP_VERSION)
    return r.ok and any(res.get("name") == "podmigrationjobs" for res in r.body.get("resources", []))


def _until(check: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout:.0f}s")
        time.sleep(0.1)


def install_manifest(cluster: Any, manifest: Path) -> str:
    """Create a CRD (if missing) and wait until it is Established; returns its name."""
    crd = yaml.safe_load(manifest.read_text())
    name = crd["metadata"]["name"]
    r = cluster.request("POST", CRDS, crd)
    assert r.ok or r.status == 409, r.body

    def established() -> bool:
        got = cluster.request("GET", f"{CRDS}/{name}")
        conds = ((got.body or {}).get("status") or {}).get("conditions") or [] if got.ok else []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conds)

    _until(established, f"the CRD {name} was not Established")
    return name


def install_crd(cluster: Any) -> None:
    """The PodMigrationJob CRD, served and listable."""
    install_manifest(cluster, crd_manifest("scheduling.koordinator.sh_podmigrationjobs.yaml"))
    _until(lambda: _served(cluster), "discovery did not serve podmigrationjobs")
    # Right after (re)creation the storage may still answer 429 "storage is (re)initializing".
    _until(lambda: cluster.request("GET", JOBS).ok, "podmigrationjobs could not be listed")


def install_koordinator(cluster: Any) -> None:
    """Every CRD koord-descheduler needs, from Koordinator's module (the caller made sure it can be had)."""
    files, why = crd_files()
    assert files is not None, why
    for f in files:
        install_manifest(cluster, f)
    install_crd(cluster)
    for path in ("/apis/slo.koordinator.sh/v1alpha1/nodemetrics",
                 "/apis/scheduling.koordinator.sh/v1alpha1/reservations"):
        _until(lambda path=path: cluster.request("GET", path).ok, f"{path} could not be listed")


def remove_crd(cluster: Any) -> None:
    """Delete the CRD (and with it every job) and wait until discovery no longer serves it."""
    r = cluster.request("DELETE", f"{CRDS}/{CRD_NAME}")
    assert r.ok or r.status == 404, r.body
    _until(lambda: cluster.request("GET", f"{CRDS}/{CRD_NAME}").status == 404, "the CRD was not deleted")
    _until(lambda: not _served(cluster), "discovery still serves podmigrationjobs")


def list_jobs(cluster: Any, namespace: str | None = None) -> list[dict[str, Any]]:
    """Jobs (cluster-scoped) whose pod is in `namespace`, oldest first."""
    r = cluster.request("GET", JOBS)
    assert r.ok, r.body
    items = [j for j in r.body["items"] if namespace is None or j["spec"]["podRef"]["namespace"] == namespace]
    return sorted(items, key=lambda j: (j["metadata"]["creationTimestamp"], j["metadata"]["name"]))


def create_job(cluster: Any, pod: dict[str, Any], phase: str | None = None, name: str | None = None
               ) -> dict[str, Any]:
    """A job someone else made (koord-descheduler, a user) for this pod, optionally with a phase."""
    meta = pod["metadata"]
    body = {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "PodMigrationJob",
            "metadata": {"name": name} if name else {"generateName": "other-"},
            "spec": {"podRef": {"namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
                     "mode": "EvictDirectly"}}
    r = cluster.request("POST", JOBS, body)
    assert r.ok, r.body
    job = r.body
    if phase:
        job = set_status(cluster, job, phase)
    return job


def set_status(cluster: Any, job: dict[str, Any], phase: str, reason: str = "", message: str = ""
               ) -> dict[str, Any]:
    """PUT the status subresource, re-reading the job on a conflict."""
    name = job["metadata"]["name"]
    for _ in range(10):
        job["status"] = {"phase": phase, "reason": reason, "message": message}
        r = cluster.request("PUT", f"{JOBS}/{name}/status", job)
        if r.ok:
            return r.body  # type: ignore[no-any-return]
        assert r.status == 409, r.body
        job = cluster.request("GET", f"{JOBS}/{name}").body
    raise AssertionError(f"could not update the status of {name}")


@dataclass(frozen=True)
class Step:
    phase: str
    reason: str = ""
    message: str = ""
    evict: bool = False  # evict the pod (as EvictDirectly does) before writing this phase


SUCCEED = (Step("Running"), Step("Running", "Evicting", "evicting the pod", evict=True), Step("Succeeded"))
FORBIDDEN = (Step("Failed", "ForbiddenMigratePod", "the pod does not pass the arbitration's filters"),)
STAY_RUNNING = (Step("Running", "WaitForBoundPodReady", "waiting for the new pod to be ready"),)


class FakeMigrationController(threading.Thread):
    """Moves each job of `namespace` through the script for its pod's name, one step every `step_seconds`."""

    def __init__(self, cluster: Any, namespace: str, scripts: dict[str, tuple[Step, ...]],
                 step_seconds: float = 0.4) -> None:
        super().__init__(daemon=True, name="fake-migration-controller")
        self.cluster, self.namespace, self.scripts, self.step_seconds = cluster, namespace, scripts, step_seconds
        self.progress: dict[str, tuple[int, float]] = {}  # job name -> (next step, when)
        self.handled: dict[str, str] = {}  # job name -> pod name
        self.errors: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.1):
            try:
                self._tick()
            except Exception as e:  # report in the test, not as a thread traceback
                if "'code': 429" not in str(e):  # "storage is (re)initializing" after a CRD change: next tick
                    self.errors.append(repr(e))

    def _tick(self) -> None:
        for job in list_jobs(self.cluster, self.namespace):
            name, pod = job["metadata"]["name"], job["spec"]["podRef"]["name"]
            script = self.scripts.get(pod)
            if script is None:
                continue
            step, when = self.progress.setdefault(name, (0, time.monotonic() + self.step_seconds))
            self.handled[name] = pod
            if step >= len(script) or time.monotonic() < when:
                continue
            s = script[step]
            if s.evict:
                r = self.cluster.evict(self.namespace, pod, uid=job["spec"]["podRef"]["uid"])
                assert r.ok, r.body
            set_status(self.cluster, job, s.phase, s.reason, s.message)
            self.progress[name] = (step + 1, time.monotonic() + self.step_seconds)

    def __enter__(self) -> FakeMigrationController:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.halt.set()
        self.join(timeout=10)


READY = "Starting workers"  # koord-descheduler logs it once its MigrationController runs


@contextlib.contextmanager
def controller(cluster: Any, binary: Path, work: Path, **args: Any) -> Iterator[Path]:
    """koord-descheduler with LowNodeLoad paused and these MigrationController args; yields its log file."""
    config = {
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerConfiguration",
        "leaderElection": {"leaderElect": False}, "clientConnection": {"kubeconfig": str(cluster.kubeconfig_for())},
        "deschedulingInterval": "60s", "healthzBindAddress": "127.0.0.1:0", "metricsBindAddress": "127.0.0.1:0",
        "profiles": [{"name": "koord", "plugins": {"balance": {"enabled": [{"name": "LowNodeLoad"}]}},
                      "pluginConfig": [
                          {"name": "MigrationController", "args": {
                              "apiVersion": "descheduler/v1alpha2", "kind": "MigrationControllerArgs", **args}},
                          {"name": "LowNodeLoad", "args": {
                              "apiVersion": "descheduler/v1alpha2", "kind": "LowNodeLoadArgs", "paused": True,
                              "dryRun": True, "lowThresholds": {"cpu": 20}, "highThresholds": {"cpu": 50}}}]}],
    }
    path = work / "koord-controller.yaml"
    path.write_text(yaml.safe_dump(config))
    log = work / "koord-controller.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(binary), f"--config={path}", "--secure-port=0", "--v=2"],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while READY not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, f"koord-descheduler:\n{log.read_text()[-4000:]}"
            time.sleep(0.2)
        yield log
    finally:
        end(proc)
