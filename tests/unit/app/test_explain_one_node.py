"""explain node's quick read of one node (the node and its pods, no other node's pods) against the full read:
plugins that judge each pod on its own node give the same verdicts; the ones that need the other nodes are
estimated (LowNodeUtilization's class) or listed as not evaluated."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubectl_desched import app
from kubectl_desched.cli import main as cli
from kubectl_desched.cli.plugin_flags import build_policy, default_plugins, registry
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.framework.runner import Scope, needs_whole_cluster, run
from kubectl_desched.kube import live
from kubectl_desched.model.objects import node_from_json, pdb_from_json, pod_from_json
from kubectl_desched.model.state import ClusterState
from kubectl_desched.ui.explain import explain_node_doc, explain_node_text
from tests import builders as b
from tests.unit.kube.test_hostile_server import PDBS, PODS, FakeAPI, _conn, run_main

LOCAL = ["PodLifeTime", "RemoveFailedPods", "RemovePodsHavingTooManyRestarts", "RemovePodsViolatingNodeTaints"]
NEED_OTHER_NODES = ["RemovePodsViolatingInterPodAntiAffinity", "RemovePodsViolatingNodeAffinity", "RemoveDuplicates",
                    "RemovePodsViolatingTopologySpreadConstraint"]


def _policy(*args: str) -> Policy:
    """The policy `kubectl desched explain node N ARGS` builds."""
    ctx = cli.explain_node.make_context("node", ["n1", *args])
    flags = cli.EXPLAIN_PLUGINS.parse(ctx, dict(ctx.params))
    return build_policy(registry(ctx), flags, "balance", default_plugins(registry(ctx), "explain"))


def _restarts(pod: dict[str, Any], count: int) -> dict[str, Any]:
    pod["status"]["containerStatuses"] = [{"name": "main", "restartCount": count, "state": {"running": {}}}]
    return pod


def _cluster() -> ClusterState:
    objs = [
        b.node("busy", cpu="4"), b.node("idle", cpu="4"),
        b.node("tainted", cpu="4", taints=[{"key": "maintenance", "effect": "NoSchedule"}]),
        *(b.pod(f"web-{i}", "busy", cpu="700m", labels={"app": "web"}, owner_name=f"web-{i % 2}") for i in range(4)),
        b.pod("agent-busy", "busy", cpu="100m", owner="DaemonSet"),
        _restarts(b.pod("crashy", "busy", cpu="100m"), 150),
        b.pod("failed", "busy", cpu="100m", phase="Failed"),
        b.pod("light", "idle", cpu="100m"),
        b.pod("evicted-by-taint", "tainted", cpu="200m"),
        b.pod("tolerant", "tainted", cpu="200m", tolerations=[{"key": "maintenance", "operator": "Exists"}]),
        b.pod("agent-tainted", "tainted", cpu="100m", owner="DaemonSet"),
        b.pdb("web", {"app": "web"}, allowed=1),
    ]
    return ClusterState([node_from_json(o) for o in objs if o["kind"] == "Node"],
                        [pod_from_json(o) for o in objs if o["kind"] == "Pod"],
                        [pdb_from_json(o) for o in objs if o["kind"] == "PodDisruptionBudget"])


def _one_node(state: ClusterState, name: str) -> ClusterState:
    """What kube/live.py read_node reads: the node, its pods, their namespaces' PDBs and the extra kinds."""
    pods = state.all_pods_on_node(name)
    namespaces = {p.namespace for p in pods}
    return ClusterState([state.nodes[name]], pods, [x for x in state.pdbs if x.namespace in namespaces],
                        extra=state.extra, now=state.now)


def _docs(policy: Policy, node: str) -> tuple[dict[str, Any], dict[str, Any]]:
    full_state = _cluster()
    full = run(policy, full_state, Scope())
    quick = run(policy, _one_node(full_state, node), Scope(), one_node=True)
    return (explain_node_doc(full, full.state.nodes[node], considered=True),
            explain_node_doc(quick, quick.state.nodes[node], considered=True))


def _verdicts(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {p["pod"]: (p["verdict"], p["why"]) for p in doc["pods"]}


@pytest.mark.parametrize(("node", "evictions"), [("busy", 2), ("idle", 0), ("tainted", 1)])
def test_node_local_plugins_give_the_same_document(node: str, evictions: int) -> None:
    policy = _policy(*(f"--plugin={name}" for name in LOCAL))
    assert needs_whole_cluster(policy) is None
    full, quick = _docs(policy, node)
    assert (full["read"], quick["read"]) == ("cluster", "node")
    assert quick["notEvaluated"] == quick["estimated"] == []
    for key in ("node", "status", "plugins", "pods"):
        assert quick[key] == full[key]
    assert sum(v[0] == "evict" for v in _verdicts(full).values()) == evictions


def test_default_plugins_same_local_verdicts_and_an_honest_estimate() -> None:
    full, quick = _docs(_policy(), "busy")
    assert quick["estimated"] == ["LowNodeUtilization"]
    assert quick["notEvaluated"] == NEED_OTHER_NODES
    assert quick["plugins"] == full["plugins"]  # the class from the node alone is the class from the cluster
    assert quick["plugins"][0]["class"] == "over-utilized"
    f, q = _verdicts(full), _verdicts(quick)
    assert f["crashy"] == q["crashy"] and f["crashy"][0] == "evict"  # RemovePodsHavingTooManyRestarts
    assert f["failed"] == q["failed"] and f["failed"][0] == "evict"  # RemoveFailedPods
    assert f["agent-busy"] == q["agent-busy"] == ("keep", "protected: DaemonSet pod")
    lnu = [p for p, (v, why) in f.items() if v == "evict" and why.startswith("LowNodeUtilization:")]
    assert lnu  # the full read moves some web pods to the idle node
    for name in lnu:  # each of them is a MAYBE of the estimate
        assert q[name][0] == "maybe" and q[name][1].startswith("LowNodeUtilization: the node is over-utilized")
    text = explain_node_text(quick)
    assert "estimated from this node alone (MAYBE verdicts): LowNodeUtilization" in text
    assert "not evaluated, they need every node's pods: RemovePodsViolatingInterPodAntiAffinity" in text
    assert "explain node busy --full" in text
    assert "Only this node" not in explain_node_text(full)


def test_taints_verdicts_match_and_kept_pods_say_what_was_evaluated() -> None:
    full, quick = _docs(_policy(), "tainted")
    f, q = _verdicts(full), _verdicts(quick)
    assert f["evicted-by-taint"] == q["evicted-by-taint"]
    assert q["evicted-by-taint"][1].startswith("RemovePodsViolatingNodeTaints: does not tolerate taint maintenance")
    assert f["tolerant"][0] == q["tolerant"][0] == "keep"
    full, quick = _docs(_policy("--plugin=RemovePodsViolatingNodeTaints", "--plugin=RemoveDuplicates"), "tainted")
    assert _verdicts(full)["tolerant"] == ("keep", "no enabled plugin selects it")
    assert _verdicts(quick)["tolerant"] == ("keep", "no plugin evaluated on this node alone selects it")


def test_deviation_thresholds_are_not_estimated() -> None:
    full, quick = _docs(_policy("--use-deviation-thresholds"), "busy")
    assert "LowNodeUtilization" in quick["notEvaluated"] and quick["estimated"] == []
    assert quick["plugins"] == [] and full["plugins"] != []
    assert "maybe" not in {v for v, _ in _verdicts(quick).values()}


@pytest.mark.parametrize(("flags", "why"), [
    (["--node-fit"], "DefaultEvictor with these args looks at other nodes"),
    (["--min-replicas", "2"], "DefaultEvictor with these args looks at other nodes"),
    (["--max-pods", "3"], "maxNoOfPodsToEvictTotal and maxNoOfPodsToEvictPerNamespace count evictions on every node"),
    (["--max-pods-per-namespace", "3"], "maxNoOfPodsToEvictTotal"),
])
def test_filters_and_limits_across_nodes_need_the_whole_cluster(flags: list[str], why: str) -> None:
    reason = needs_whole_cluster(_policy(*flags))
    assert reason is not None and reason.startswith(why)


def test_per_node_limit_and_plain_evictor_allow_the_quick_read() -> None:
    assert needs_whole_cluster(_policy("--max-pods-per-node", "1", "--min-replicas", "1")) is None


def test_high_node_utilization_estimate_marks_the_pods_of_an_under_utilized_node() -> None:
    # --keep-futile: the estimate models the default scheduler (LeastAllocated), which would spread the pods
    # back over the emptier nodes; packing them needs a MostAllocated scheduler (docs/guide/every-move-counts.md)
    policy = _policy("--plugin=HighNodeUtilization", "--thresholds=cpu=10", "--keep-futile")
    full, quick = _docs(policy, "idle")
    assert quick["estimated"] == ["HighNodeUtilization"] and quick["notEvaluated"] == []
    assert quick["plugins"] == full["plugins"] and quick["plugins"][0]["class"] == "under-utilized"
    f, q = _verdicts(full), _verdicts(quick)
    assert f["light"][0] == "evict"  # packed onto another node by the full read
    assert q["light"][0] == "maybe" and q["light"][1].startswith("HighNodeUtilization: the node is under-utilized")
    _, busy = _docs(policy, "busy")
    assert busy["plugins"][0]["class"] == "appropriately utilized"
    assert "maybe" not in {v for v, _ in _verdicts(busy).values()}


@pytest.mark.parametrize(("scope", "asked", "ops_verdict"), [
    (["-n", "shop"], ["shop"], ("keep", "protected: namespace ops not in scope (-n shop)")),
    (["-A"], ["ops", "shop"], ("evict", "RemovePodsViolatingNodeTaints")),
    ([], ["ops", "shop"], ("evict", "RemovePodsViolatingNodeTaints")),  # the node is the scope: as -A
])
def test_the_quick_read_asks_for_the_pdbs_of_namespaces_in_scope_only(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Any,
        scope: list[str], asked: list[str], ops_verdict: tuple[str, str]) -> None:
    """A pod out of scope is never a candidate, so its namespace's PDBs are never consulted: at 150,000 pods a
    node's pods span some 100 namespaces, each a request. In scope, the PDBs still decide verdicts."""
    server = FakeAPI()
    server.lists[PODS].append(b.pod("agent", "n1", namespace="ops", labels={"app": "agent"}))
    server.lists[PDBS] = [b.pdb("web", {}, namespace="shop", allowed=5),
                          b.pdb("agent", {"app": "agent"}, namespace="ops", allowed=1)]
    monkeypatch.setattr(live, "request_raw", server)
    monkeypatch.setattr(app.loading, "connect", lambda _opts: _conn())
    # the cluster-wide LIST read beside the pods is not whole yet (on a real server it takes longer than they do):
    # the namespaces in scope are few, and read one by one
    monkeypatch.setattr(live._Beside, "done_without_error", lambda self: False)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(monkeypatch, capsys, "explain", "node", "n1", *scope, "--ignore-pods-without-pdb",
                              "--plugin", "RemovePodsViolatingNodeTaints", "-o", "json")
    assert code == 0, err
    pdb_reads = sorted(p.split("/")[5] for m, p in server.calls if "/namespaces/" in p and
                       p.endswith("/poddisruptionbudgets"))
    assert pdb_reads == asked
    verdicts = {p["pod"]: (p["verdict"], p["why"]) for p in json.loads(out)["pods"]}
    assert verdicts["web-0"][0] == verdicts["web-1"][0] == "evict"  # their PDB was read: not "no PDB covers it"
    assert verdicts["agent"][0] == ops_verdict[0] and verdicts["agent"][1].startswith(ops_verdict[1])
