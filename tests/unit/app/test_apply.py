"""`kubectl desched apply -f PLAN`: the checks before anything is asked (cluster, age, each candidate, budgets,
limits, estimate), the exit codes, and the --report it writes; the transport is faked as in test_eviction_safety."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kubectl_desched import app
from kubectl_desched.app import landings as _landings  # noqa: F401  (app imports its parts on first use)
from kubectl_desched.app import loading as _loading  # noqa: F401
from kubectl_desched.app.apply import recheck
from kubectl_desched.app.plan_identity import KUBE_SYSTEM
from kubectl_desched.cli import main as cli
from kubectl_desched.evictors import eviction_api
from kubectl_desched.evictors.base import now, timestamp
from kubectl_desched.framework.plan import Limits
from kubectl_desched.interrupts import Interrupted
from kubectl_desched.kube import live
from kubectl_desched.kube.landings import Landed
from kubectl_desched.model import node_from_json, pdb_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from tests import builders as b
from tests.unit.evictors.test_eviction_api_fake_server import FakeApi, _conn

TAINTS = ["deschedule", "--plugin", "RemovePodsViolatingNodeTaints", "-n", "default"]


class World:
    """The fake cluster between the plan and its apply: pods on tainted n1, an untainted n2, and what changed."""

    def __init__(self, names: list[str]) -> None:
        self.uid = "ks-uid-1"
        self.nodes = [b.node("n1", taints=[b.taint("maintenance", "soon")]), b.node("n2")]
        self.pods = {n: b.pod(n, "n1", labels={"app": "web"}, uid=f"uid-{n}", owner_name="web-rs") for n in names}
        for i, p in enumerate(self.pods.values()):
            p["metadata"]["resourceVersion"] = str(100 + i)
        self.pdbs: list[dict[str, Any]] = []
        self.api = FakeApi(names)

    def state(self) -> ClusterState:
        return ClusterState([node_from_json(n) for n in self.nodes], [pod_from_json(p) for p in self.pods.values()],
                            [pdb_from_json(p) for p in self.pdbs], source="cluster https://api (context c)")

    def request(self, _conn: Any, method: str, path: str, **_kw: Any) -> Any:
        if path == KUBE_SYSTEM:
            return {"metadata": {"name": "kube-system", "uid": self.uid}}
        if "selfsubjectreviews" in path:
            return {"status": {"userInfo": {"username": "alice", "groups": ["ops"]}}}
        raise AssertionError(f"unexpected {method} {path}")


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[list[str]], World]]:
    def make(names: list[str]) -> World:
        w = World(names)
        monkeypatch.setattr(app.loading, "connect", lambda _o: _conn())
        monkeypatch.setattr(app.loading, "read_cluster", lambda *_a, **_k: w.state())
        monkeypatch.setattr(live, "request_json", w.request)
        monkeypatch.setattr(eviction_api, "missing_permissions", lambda *_a, **_k: [])
        monkeypatch.setattr(eviction_api, "request_json", w.api)
        monkeypatch.setattr(app.landings, "wait", lambda _c, evicted, _k, _t: {
            i: Landed(f"{e.name}-new", "n2") for i, e in enumerate(evicted)})
        monkeypatch.setattr(app.landings, "read_nodes", lambda _c, names: ClusterState(
            [node_from_json(n) for n in w.nodes if n["metadata"]["name"] in names],
            [pod_from_json(b.pod(f"{n}-new", "n2", uid=f"uid-{n}-new", owner_name="web-rs")) for n in w.api.applied]))
        return w
    yield make


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str,
            stdin: str | None = None) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["kubectl-desched", *args])
    if stdin is not None:
        import io
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    with pytest.raises(SystemExit) as e:
        cli.main()
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def make_plan(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
              fmt: str = "json", *extra: str) -> tuple[Path, dict[str, Any]]:
    code, out, err = run_cli(monkeypatch, capsys, *TAINTS, "--dry-run=client", "-o", fmt, *extra)
    assert code == 0, err
    path = tmp_path / f"plan.{fmt}"
    path.write_text(out)
    import yaml
    return path, (json.loads(out) if fmt == "json" else yaml.safe_load(out))


def edited(path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return path


# ---------------------------------------------------------------- the plan document

def test_the_plan_names_its_cluster_maker_and_each_pods_version(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                                 world: Callable[[list[str]], World]) -> None:
    world(["web-0", "web-1"])
    _path, doc = make_plan(monkeypatch, capsys, tmp_path)
    ident = doc["identity"]
    assert (ident["server"], ident["kubeSystemUID"], ident["source"]) == ("https://api", "ks-uid-1", "cluster")
    assert ident["madeBy"] == {"username": "alice", "groups": ["ops"]}
    assert ident["arguments"] == [*TAINTS, "--dry-run=client", "-o", "json"]
    assert ident["policy"]["profiles"][0]["deschedule"][0]["name"] == "RemovePodsViolatingNodeTaints"
    assert [(c["pod"], c["uid"], c["node"], c["resourceVersion"]) for c in doc["candidates"]] == [
        ("web-0", "uid-web-0", "n1", "100"), ("web-1", "uid-web-1", "n1", "101")]


# ---------------------------------------------------------------- apply: exactly the plan

def test_a_plan_applied_at_once_evicts_exactly_its_pods(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         world: Callable[[list[str]], World]) -> None:
    w = world(["web-0", "web-1"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path, "json", "--max-pods", "1")
    w.pods["web-2"] = b.pod("web-2", "n1", labels={"app": "web"}, uid="uid-web-2", owner_name="web-rs")
    code, out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes")
    assert code == 0, err
    assert w.api.applied == {"web-0": 1}  # not web-1 (the plan's limit), not web-2 (not in the plan)
    assert "Checked: 1 planned, 1 still hold, 0 left out" in out


def test_a_yaml_plan_from_stdin_is_applied_too(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path, world: Callable[[list[str]], World]) -> None:
    w = world(["web-0"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path, "yaml")
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", "-", "--yes", stdin=path.read_text())
    assert code == 0, err
    assert w.api.applied == {"web-0": 1}


# ---------------------------------------------------------------- stale candidates, exit 4

def test_a_replaced_pod_is_left_out_and_reported_stale(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       world: Callable[[list[str]], World]) -> None:
    w = world(["web-0", "web-1"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path)
    w.pods["web-0"]["metadata"]["uid"] = "uid-web-0-b"  # deleted and made again under its name
    w.api.pods["web-0"]["metadata"]["uid"] = "uid-web-0-b"
    report = tmp_path / "r.json"
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes", "--report", str(report))
    assert code == 4, err
    assert "stale: default/web-0: replaced: the pod of that name is now uid uid-web-0-b, the plan's was uid-web-0" \
        in err.splitlines()
    assert w.api.applied == {"web-1": 1}
    doc = json.loads(report.read_text())
    assert [(p["pod"], p["result"]) for p in doc["pods"]] == [("web-1", "evicted"), ("web-0", "stale")]
    assert doc["summary"]["exitCode"] == 4 and doc["stale"][0]["kind"] == "stale"


def test_strict_refuses_the_whole_plan_when_one_pod_is_stale(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                             world: Callable[[list[str]], World]) -> None:
    w = world(["web-0", "web-1"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path)
    del w.pods["web-0"]
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes", "--strict")
    assert code == 4
    assert err.splitlines()[-1] == ("error: --strict: 1 of 2 candidate(s) are stale or refused (listed above): the "
                                    "plan is refused whole, nothing was evicted")
    assert w.api.posts == []


def _candidate(name: str, uid: str | None = None, node: str = "n1") -> dict[str, Any]:
    return {"namespace": "default", "pod": name, "uid": uid or f"uid-{name}", "node": node, "plugin": "P",
            "reason": "r", "profile": "p"}


def _state(*pods: dict[str, Any], pdbs: tuple[dict[str, Any], ...] = (), nodes: tuple[str, ...] = ("n1", "n2"),
           cordoned: tuple[str, ...] = ()) -> ClusterState:
    return ClusterState([node_from_json(b.node(n, unschedulable=n in cordoned)) for n in nodes],
                        [pod_from_json(p) for p in pods], [pdb_from_json(p) for p in pdbs])


def _why(state: ClusterState, cands: list[dict[str, Any]], limits: Limits | None = None,
         relocates: bool = False) -> list[tuple[str, str, str]]:
    plan, out = recheck(cands, state, limits or Limits(), lambda _n: relocates)
    return [(s["pod"], s["kind"], s["why"]) for s in out] + [(c.pod.name, "kept", "") for c in plan.candidates]


def test_each_stale_rule() -> None:
    same = b.pod("same", "n1", uid="uid-same")
    replaced = b.pod("replaced", "n1", uid="uid-new")
    moved = b.pod("moved", "n2", uid="uid-moved")
    going = b.terminating(b.pod("going", "n1", uid="uid-going"))
    state = _state(same, replaced, moved, going)
    got = _why(state, [_candidate("same"), _candidate("gone"), _candidate("replaced"), _candidate("moved"),
                       _candidate("going")])
    assert got == [("gone", "stale", "gone: no pod of that name now"),
                   ("replaced", "stale", "replaced: the pod of that name is now uid uid-new, the plan's was "
                                         "uid-replaced"),
                   ("moved", "stale", "moved: now on n2, the plan's was on n1"),
                   ("going", "stale", "terminating: already being deleted"),
                   ("same", "kept", "")]


def test_a_budget_spent_since_the_plan_refuses_its_pod() -> None:
    pods = [b.pod(n, "n1", uid=f"uid-{n}", labels={"app": "web"}) for n in ("a", "b")]
    state = _state(*pods, pdbs=(b.pdb("web", {"app": "web"}, allowed=1),))
    got = _why(state, [_candidate("a"), _candidate("b")])
    assert got == [("b", "refused", "PodDisruptionBudget web allows 1 disruption(s), all taken by the 1 pod(s) "
                                    "planned before it, the API would refuse the eviction"), ("a", "kept", "")]
    assert _why(state, [_candidate("a"), _candidate("b")], Limits(respect_pdbs=False))[0][1] == "kept"


def test_the_workload_cap_and_the_policy_limits_count_again() -> None:
    pods = [b.pod(n, "n1", uid=f"uid-{n}", owner_name="rs") for n in ("a", "b", "c")]
    state = _state(*pods)
    cands = [_candidate(n) for n in ("a", "b", "c")]
    assert [x[:2] for x in _why(state, cands, Limits(per_workload=1))] == [
        ("b", "refused"), ("c", "refused"), ("a", "kept")]
    assert _why(state, cands, Limits(total=2))[0] == ("c", "refused", "maxNoOfPodsToEvictTotal (2) reached")


def test_a_replacement_with_nowhere_to_land_now_is_refused() -> None:
    state = _state(b.pod("a", "n1", uid="uid-a"), cordoned=("n2",))
    got = _why(state, [_candidate("a")], relocates=True)
    assert got[0][:2] == ("a", "refused") and "would land back on n1" in got[0][2]
    assert _why(state, [_candidate("a")], relocates=False) == [("a", "kept", "")]  # PodLifeTime: a new pod is enough
    alone = _state(b.pod("a", "n1", uid="uid-a", cpu="8"), nodes=("n1",))
    assert _why(alone, [_candidate("a")])[0][2].startswith("the move would change nothing now: its replacement "
                                                          "would stay Pending")


# ---------------------------------------------------------------- refused plans

def test_a_plan_from_another_cluster_is_refused(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path, world: Callable[[list[str]], World]) -> None:
    w = world(["web-0"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path)
    w.uid = "ks-uid-2"
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes")
    assert code == 1
    assert err == (f"error: {path}: the plan was made on another cluster (https://api, kube-system UID ks-uid-1); "
                   "https://api has kube-system UID ks-uid-2: refused\n")
    assert w.api.posts == []


def test_a_plan_older_than_max_age_is_refused(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path, world: Callable[[list[str]], World]) -> None:
    w = world(["web-0"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path)
    edited(path, lambda d: d["identity"].update(madeAt=timestamp(now() - timedelta(hours=2))))
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes")
    assert code == 4
    assert err.startswith(f"error: {path}: the plan was made 2h0m") and "more than --max-age 1h0m0s" in err
    assert w.api.posts == []
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes", "--max-age", "3h")
    assert code == 0, err


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.pop("identity"), "the plan has no identity (which cluster, when, by whom): it was made by a version "
                                  "before apply existed; make it again with -o json"),
    (lambda d: d.update(kind="Report"), "not a kubectl-desched/v1 Plan (apiVersion 'kubectl-desched/v1', kind "
                                        "'Report')"),
    (lambda d: d["candidates"][0].pop("uid"), "candidates[0].uid: missing or not a string"),
    (lambda d: d["identity"].update(madeAt="yesterday"), "identity.madeAt: not a timestamp"),
])
def test_a_plan_document_apply_cannot_read_is_one_line_exit_2(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        world: Callable[[list[str]], World], change: Callable[[dict[str, Any]], None], message: str) -> None:
    world(["web-0"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path)
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(edited(path, change)), "--yes")
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {path}: {message}")


def test_a_snapshot_plan_applies_live_only_with_the_same_identity(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        world: Callable[[list[str]], World]) -> None:
    w = world(["web-0"])
    snapshot = tmp_path / "snap.json"
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system", "uid": "ks-uid-1"}}
    snapshot.write_text(json.dumps(b.cluster(*w.nodes, *w.pods.values(), ns)))
    code, out, err = run_cli(monkeypatch, capsys, *TAINTS, "--from-file", str(snapshot), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["identity"]["kubeSystemUID"] == "ks-uid-1"
    plan = tmp_path / "plan.json"
    plan.write_text(out)
    assert run_cli(monkeypatch, capsys, "apply", "-f", str(plan), "--yes")[0] == 0
    assert w.api.applied == {"web-0": 1}
    edited(plan, lambda d: d["identity"].update(kubeSystemUID=None))  # a snapshot without kube-system
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(plan), "--yes")
    assert code == 1 and "the plan does not say which cluster it was made on" in err


# ---------------------------------------------------------------- exit codes

def test_exit_codes_of_apply(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
                             world: Callable[[list[str]], World]) -> None:
    w = world(["web-0"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path)
    # not confirmed: no terminal and no --yes
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path))
    assert code == 3 and "standard input is not a terminal" in err
    # usage: a bad flag
    assert run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--max-age", "0")[0] == 2
    assert run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--rounds", "2")[:3:2] == (
        2, "error: --rounds does not apply to apply: a plan document is one round (make a new plan instead)\n")
    assert run_cli(monkeypatch, capsys, "apply", "-f", str(tmp_path / "missing.json"))[0] == 2
    # an eviction that fails: a budget the server enforces
    w.api.refuse = {"web-0"}
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes", "--timeout", "0.1s")
    assert code == 1, err
    # interrupted while the cluster is read (a signal raises Interrupted there: interrupts.raising)
    def interrupted(*_a: Any, **_k: Any) -> ClusterState:
        raise Interrupted(signal.SIGINT)
    monkeypatch.setattr(app.loading, "read_cluster", interrupted)
    assert run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes")[0] == 130


# ---------------------------------------------------------------- the report

def test_the_report_records_each_pod_and_prints_as_a_table(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                           world: Callable[[list[str]], World]) -> None:
    w = world(["web-0", "web-1"])
    path, _doc = make_plan(monkeypatch, capsys, tmp_path)
    del w.pods["web-1"]
    report = tmp_path / "r.json"
    assert run_cli(monkeypatch, capsys, "apply", "-f", str(path), "--yes", "--report", str(report))[0] == 4
    doc = json.loads(report.read_text())
    assert doc["pods"] == [
        {"namespace": "default", "pod": "web-0", "uid": "uid-web-0", "node": "n1",
         "plugin": "RemovePodsViolatingNodeTaints", "planned": True, "result": "evicted", "why": "eviction accepted",
         "estimated": "n2", "landed": "n2", "replacement": "web-0-new"},
        {"namespace": "default", "pod": "web-1", "uid": "uid-web-1", "node": "n1",
         "plugin": "RemovePodsViolatingNodeTaints", "planned": True, "result": "stale",
         "why": "gone: no pod of that name now", "estimated": None, "landed": None, "replacement": None}]
    assert [(n["name"], n["before"]["pods"], n["after"]["pods"]) for n in doc["nodes"]] == [
        ("n1", 0.91, 0.0), ("n2", 0.0, 0.91)]
    code, out, err = run_cli(monkeypatch, capsys, "report", str(report))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"Command:  kubectl desched apply -f {path} --yes --report {report}"
    assert lines[3] == "Exit:     4"
    start = lines.index("Pods (2 planned):")
    assert lines[start + 1:] == [
        "NAMESPACE    POD    NODE    RESULT    ESTIMATED    LANDED    WHY",
        "default      web-0  n1      evicted   n2           n2        eviction accepted",
        "default      web-1  n1      stale     -            -         gone: no pod of that name now",
        "",
        "Nodes (requests as % of allocatable: before -> estimated after | measured after):",
        "NODE    CPU                MEMORY         PODS",
        "n1      2.5% -> 0% | 0%    0% -> 0% | 0%  0.9% -> 0% | 0%",
        "n2      0% -> 2.5% | 2.5%  0% -> 0% | 0%  0% -> 0.9% | 0.9%"]


def test_report_refuses_a_file_that_is_not_a_report(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"kind": "Plan", "apiVersion": "kubectl-desched/v1"}')
    code, _out, err = run_cli(monkeypatch, capsys, "report", str(bad))
    assert (code, err) == (2, f"error: {bad}: not a kubectl-desched/v1 Report (what --report FILE writes)\n")


# ---------------------------------------------------------------- against a snapshot

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-cluster.yaml"


def test_a_newcomer_tries_plan_apply_and_report_on_the_demo_snapshot(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The demo holds the kube-system Namespace, so its plan names the cluster, and apply checks the plan against
    the snapshot as it would against the cluster, then says that nothing can be evicted from a file."""
    b.isolate_from_the_user(tmp_path, monkeypatch)
    code, out, err = run_cli(monkeypatch, capsys, "balance", "--from-file", str(DEMO), "-A", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["identity"]["kubeSystemUID"]
    (tmp_path / "plan.json").write_text(out)
    # no cluster to reach: the error says how to check it against the snapshot instead
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", "plan.json")
    assert code == 2 and err.endswith(f"; the plan was made from a snapshot: --from-file {DEMO} checks it against "
                                      "that snapshot\n")
    code, out, err = run_cli(monkeypatch, capsys, "apply", "-f", "plan.json", "--from-file", str(DEMO),
                             "--report", "applied.json", "--no-pager")
    assert (code, err) == (0, "")
    assert "Checked: 5 planned, 5 still hold, 0 left out" in out
    assert out.rstrip().endswith("\nThe state comes from a file: nothing can be evicted. Run against the cluster to "
                                 "evict.")
    code, out, err = run_cli(monkeypatch, capsys, "report", "applied.json")
    assert code == 0, err
    assert "Mode:     snapshot" in out and out.count("mode snapshot: nothing is sent") == 5
    # what cannot be done with a file is refused in one line, as balance refuses it
    for acting in ("--yes", "--dry-run=server"):
        code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", "plan.json", "--from-file", str(DEMO), acting)
        assert code == 2 and len(err.splitlines()) == 1


def test_a_plan_checked_against_a_snapshot_must_be_its_clusters(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    b.isolate_from_the_user(tmp_path, monkeypatch)
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system", "uid": "ks-uid-1"}}
    objs = [b.node("n1", taints=[b.taint("maintenance", "soon")]), b.node("n2"),
            b.pod("web-0", "n1", uid="uid-web-0", owner_name="web-rs")]
    (tmp_path / "snap.json").write_text(json.dumps(b.cluster(*objs, ns)))
    code, out, err = run_cli(monkeypatch, capsys, *TAINTS, "--from-file", "snap.json", "-o", "json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(out)
    # the pod was replaced since: left out, exit 4 (stale)
    objs[2]["metadata"]["uid"] = "uid-web-0-b"
    (tmp_path / "later.json").write_text(json.dumps(b.cluster(*objs, ns)))
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", "plan.json", "--from-file", "later.json")
    assert code == 4 and err.startswith("stale: default/web-0: replaced")
    # another cluster's snapshot, and one that cannot say which cluster it is
    (tmp_path / "other.json").write_text(json.dumps(b.cluster(*objs, {**ns, "metadata": {**ns["metadata"],
                                                                                          "uid": "ks-uid-2"}})))
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", "plan.json", "--from-file", "other.json")
    assert code == 1 and "the plan was made on another cluster (a snapshot, kube-system UID ks-uid-1)" in err
    (tmp_path / "anonymous.json").write_text(json.dumps(b.cluster(*objs)))
    code, _out, err = run_cli(monkeypatch, capsys, "apply", "-f", "plan.json", "--from-file", "anonymous.json")
    assert (code, err) == (1, "error: file anonymous.json: no kube-system Namespace, so which cluster it is cannot be "
                              "told (kubectl get ns,nodes,pods,pdb -A -o yaml holds it): refused\n")
