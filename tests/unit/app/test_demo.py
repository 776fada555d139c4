"""The bundled demo (the README's first command) keeps telling its story."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from kubectl_desched.errors import UsageError
from tests import builders as b

DEMO = str(Path(__file__).resolve().parents[3] / "examples" / "demo-cluster.yaml")


def _run(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--from-file", DEMO, "-A", "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_demo_balance_moves_pods_off_the_hot_workers_only() -> None:
    doc = _run("balance")
    assert doc["mode"] == "snapshot"
    nodes = {n["name"]: n for n in doc["nodes"]}
    classes = {name: n["class"].get("LowNodeUtilization") for name, n in nodes.items()}
    assert classes["worker-a1"] == classes["worker-a2"] == "over-utilized"
    assert classes["worker-b1"] == classes["worker-b2"] == "under-utilized"
    assert classes["worker-c1"] == "unschedulable"
    sources = {c["node"] for c in doc["candidates"]}
    assert sources == {"worker-a1", "worker-a2"}
    assert not {c["namespace"] for c in doc["candidates"]} & {"kube-system", "monitoring"}
    for name in ("worker-a1", "worker-a2"):
        assert nodes[name]["now"]["cpu"] > 50.0 and nodes[name]["evictions"] > 0
    # "after" counts where the replacements would land: kube-scheduler's default spreading sends some back
    assert sum(n["landing"] for n in doc["nodes"]) == len(doc["candidates"])
    assert doc["respectPDBs"] is True
    assert not any("eviction will be refused" in w for c in doc["candidates"] for w in c["warnings"])  # kept
    loose = json.loads(CliRunner().invoke(cli, ["balance", "--from-file", DEMO, "-A", "-o", "json",
                                                "--no-respect-pdbs"]).stdout)
    assert loose["respectPDBs"] is False
    flagged = [c["pod"] for c in loose["candidates"] if any("will be refused" in w for w in c["warnings"])]
    # upstream's dry run: planned, with a warning
    assert flagged and all(p.startswith(("web-", "checkout-")) for p in flagged)


def test_demo_explain_names_each_protection() -> None:
    doc = _run("explain", "node", "worker-a1")
    whys = [p["why"] for p in doc["pods"] if p["verdict"] == "keep"]
    for protection in ("bare pod", "system critical", "DaemonSet pod", "local storage"):
        assert any(protection in w for w in whys), protection
    # The pods LowNodeUtilization picks on worker-a1 would each land where the move changes nothing (explain's
    # default plugins plan worker-a2 first): kept, with the landing that decides
    picked = {p["pod"]: p["why"].split(" but kept: ")[-1] for p in doc["pods"]
              if "LowNodeUtilization: selected" in p["why"]}
    assert {p["verdict"] for p in doc["pods"]} == {"keep"}
    assert picked["ledger-0"] == ("the move would change nothing: would land on worker-b1, putting it over "
                                  "LowNodeUtilization's targets (cpu 55% > 50%)")
    assert picked["cart-6b4bjvt22f-kspwp"].endswith("would land on worker-a2, which another pod of ReplicaSet "
                                                     "shop/cart-6b4bjvt22f is leaving")
    with_futile = _run("explain", "node", "worker-a1", "--keep-futile")
    assert {p["verdict"] for p in with_futile["pods"]} == {"keep", "evict"}


def test_demo_explain_pod_covers_filters_plugins_and_other_nodes() -> None:
    result = CliRunner().invoke(cli, ["explain", "pod", "-n", "kube-system", "--from-file", DEMO, "-o", "json",
                                      next(p["pod"] for p in _run("explain", "node", "worker-a1")["pods"]
                                           if p["pod"].startswith("kube-proxy"))])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["verdict"] == "keep" and "DaemonSet pod" in doc["why"]
    checks = {c["check"]: c["result"] for c in doc["checks"]}
    assert "DaemonSet pod" in checks["DefaultEvictor filter"] and checks["scope"] == "passes"
    assert {p["plugin"] for p in doc["plugins"]} >= {"LowNodeUtilization", "PodLifeTime", "RemoveDuplicates"}
    assert doc["otherNodes"]["fits"] or doc["otherNodes"]["refused"]


def test_demo_explain_pod_of_a_candidate_and_a_missing_pod() -> None:
    candidate = _run("balance")["candidates"][0]
    result = CliRunner().invoke(cli, ["explain", "pod", "-n", candidate["namespace"], candidate["pod"],
                                      "--from-file", DEMO, "-o", "json"])
    doc = json.loads(result.output)
    assert doc["verdict"] == "evict"
    lnu = next(p for p in doc["plugins"] if p["plugin"] == "LowNodeUtilization")
    assert lnu["result"].startswith("selects it: node over target")
    cp1 = [r for r in doc["otherNodes"]["refused"] if "cp-1" in r["nodes"]]
    assert cp1 and "control-plane" in cp1[0]["reason"]
    missing = CliRunner().invoke(cli, ["explain", "pod", "-n", "shop", "nope", "--from-file", DEMO])
    assert missing.exit_code != 0 and str(missing.exception) == 'pod "nope" not found in namespace shop'


def test_explain_pod_in_the_wrong_namespace_names_the_one_it_is_in() -> None:
    wrong = CliRunner().invoke(cli, ["explain", "pod", "ledger-0", "--from-file", DEMO],
                               env={"KUBECONFIG": "/nonexistent"})
    assert wrong.exit_code == 1
    assert str(wrong.exception) == 'pod "ledger-0" not found in namespace default; it is in namespace payments: ' \
        "-n payments"


def test_explain_pod_names_every_namespace_a_pod_of_that_name_is_in(tmp_path: Path) -> None:
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(json.dumps(b.cluster(b.node("n1"), b.pod("web-0", "n1", namespace="shop"),
                                             b.pod("web-0", "n1", namespace="staging"))))
    result = CliRunner().invoke(cli, ["explain", "pod", "web-0", "-n", "prod", "--from-file", str(snapshot)])
    assert str(result.exception) == 'pod "web-0" not found in namespace prod; pods of that name are in ' \
        "namespaces shop, staging: give -n NAMESPACE"


def test_flags_with_a_policy_patch_keep_kubectls_namespace_scope() -> None:
    patch = '[{"op": "replace", "path": "/profiles/0/name", "value": "patched"}]'
    for extra in ([], ["--policy-patch", patch]):
        result = CliRunner().invoke(cli, ["balance", "--from-file", DEMO, "-o", "json", *extra],
                                    env={"KUBECONFIG": "/nonexistent"})
        assert result.exit_code == 0, result.output
        doc = json.loads(result.output)
        assert doc["scope"] == "namespace default (-A for all namespaces)"
        assert {c["namespace"] for c in doc["candidates"]} <= {"default"}


METRICS = str(Path(__file__).resolve().parents[3] / "examples" / "demo-metrics.yaml")


def _run_with_metrics(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--from-file", DEMO, "--from-file", METRICS, "-A", "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_demo_by_load_only_the_really_hot_worker_loses_pods() -> None:
    """By requests worker-a1 and worker-a2 are both over 50%; by load only worker-a1 is over 75%."""
    doc = _run_with_metrics("balance", "--plugin", "LowNodeLoad")
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert {c["node"] for c in doc["candidates"]} == {"worker-a1"}
    assert nodes["worker-a1"]["basis"] == "load from NodeMetric"
    assert nodes["worker-a1"]["class"]["LowNodeLoad"] == "over-utilized"
    assert nodes["worker-a2"]["class"]["LowNodeLoad"] == "under-utilized"
    assert nodes["worker-a1"]["after"]["cpu"] < nodes["worker-a1"]["now"]["cpu"]
    assert all(c["reason"].startswith("node load above high threshold: cpu") for c in doc["candidates"])


def test_demo_by_metrics_server_usage() -> None:
    doc = _run_with_metrics("balance", "--use-metrics")
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert {c["node"] for c in doc["candidates"]} == {"worker-a1"}
    assert nodes["worker-a2"]["class"]["LowNodeUtilization"] == "appropriately utilized"
    assert nodes["worker-a1"]["basis"] == "usage from metrics.k8s.io"
    by_requests = _run("balance")
    assert {c["node"] for c in by_requests["candidates"]} == {"worker-a1", "worker-a2"}


def test_demo_metrics_file_is_current(tmp_path: Path) -> None:
    import subprocess
    import sys
    out = tmp_path / "m.yaml"
    script = Path(__file__).resolve().parents[3] / "examples" / "make-demo-metrics"
    subprocess.run([sys.executable, str(script), "--out", str(out)], check=True, capture_output=True)
    assert out.read_text() == Path(METRICS).read_text()


def test_a_koord_descheduler_configuration_runs_as_is() -> None:
    policy = str(Path(__file__).resolve().parents[3] / "examples" / "koord-lownodeload.yaml")
    result = CliRunner().invoke(cli, ["run", "--policy", policy, "--from-file", DEMO, "--from-file", METRICS,
                                      "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {c["plugin"] for c in doc["candidates"]} == {"LowNodeLoad"}
    assert {c["node"] for c in doc["candidates"]} == {"worker-a1"}
    assert len(doc["candidates"]) == 4  # 93% -> 36.8%: under the policy's 50% cpu, web-pdb's budget spent once
    assert {n["name"]: n for n in doc["nodes"]}["worker-a1"]["after"]["cpu"] < 50
    assert any("consecutiveAbnormalities 2" in m["message"] for m in doc["messages"])


def test_the_upstream_example_policy_runs_as_is() -> None:
    policy = str(Path(__file__).resolve().parents[3] / "examples" / "descheduler-policy.yaml")
    result = CliRunner().invoke(cli, ["run", "--policy", policy, "--from-file", DEMO, "-o", "json", "--keep-futile"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert "deprecated" not in result.output  # the example teaches podProtections, not the old booleans
    by_plugin: dict[str, set[str]] = {}
    for c in doc["candidates"]:
        by_plugin.setdefault(c["plugin"], set()).add(c["node"])
    # the cordoned worker's pod violates its unschedulable taint; the two hot workers are balanced
    assert by_plugin == {"RemovePodsViolatingNodeTaints": {"worker-c1"},
                         "LowNodeUtilization": {"worker-a1", "worker-a2"}}
    assert not any(c["pod"].startswith("ledger-") for c in doc["candidates"])  # PodsWithPVC keeps the StatefulSet


def test_a_snapshot_runs_report_has_the_plans_estimate_and_its_exit_code(tmp_path: Path) -> None:
    """Nothing is sent on a snapshot, yet the report says what the plan estimated and how the run ended (issue 38:
    `report` printed `81.2% -> - | -` and `Exit: -` after a run that exited 0)."""
    report = tmp_path / "r.json"
    plan = _run("balance")
    run = CliRunner().invoke(cli, ["balance", "--from-file", DEMO, "-A", "--report", str(report)])
    assert run.exit_code == 0, run.output
    doc = json.loads(report.read_text())
    assert doc["summary"] == {"confirmed": 0, "results": {}, "interrupted": False, "exitCode": 0}
    after = {n["name"]: n["after"] for n in plan["nodes"]}
    assert {n["name"]: n["estimated"] for n in doc["nodes"]} == {n["name"]: after[n["name"]] for n in doc["nodes"]}
    shown = CliRunner().invoke(cli, ["report", str(report)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[3] == "Exit:     0"
    assert "worker-a1  81.2% -> 56.2% | -  26.6% -> 14.1% | -  10% -> 9.1% | -" in lines


def test_a_failed_runs_report_has_its_exit_code(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    policy = str(Path(DEMO).parent / "koord-lownodeload.yaml")  # needs NodeMetrics the snapshot lacks
    run = CliRunner().invoke(cli, ["run", "--policy", policy, "--from-file", DEMO, "--report", str(report)])
    doc = json.loads(report.read_text())
    assert isinstance(run.exception, UsageError) and doc["error"] == str(run.exception)
    assert doc["summary"]["exitCode"] == UsageError.exit_code == 2  # what main() exits with


def test_explain_with_balances_plugin_gives_the_plans_verdicts_in_its_words() -> None:
    """The README: `explain node worker-a1 --plugin LowNodeUtilization` gives each pod the verdict `balance` gave it
    and the plan's reason, two of them futile (without --plugin, explain runs the Deschedule plugins too)."""
    plan = _run("balance")
    kept = {k["pod"]: k["why"] for k in plan["kept"] if k["node"] == "worker-a1"}
    evicted = {c["pod"] for c in plan["candidates"] if c["node"] == "worker-a1"}
    doc = _run("explain", "node", "worker-a1", "--plugin", "LowNodeUtilization")
    picked = {p["pod"]: p for p in doc["pods"] if p["why"].startswith("LowNodeUtilization: ")}
    assert {name for name, p in picked.items() if p["verdict"] == "evict"} == evicted
    explained = {name: p["why"].split(" but kept: ", 1)[1] for name, p in picked.items() if p["verdict"] == "keep"}
    assert explained.keys() == kept.keys() and all(explained[name].endswith(why) for name, why in kept.items())
    assert sum(why.startswith("the move would change nothing: ") for why in explained.values()) == 2


def test_the_demo_files_are_what_their_script_makes() -> None:
    """examples/make-demo-cluster writes the snapshot byte for byte and prints the table examples/README.md shows,
    with the two decimals `-o json` gives (issue 38: one decimal there said 2.0 where the tool's tables say 1.9)."""
    examples = Path(DEMO).parent
    made = subprocess.run([sys.executable, str(examples / "make-demo-cluster"), "--out", "-"], capture_output=True,
                          text=True, timeout=120, check=True)
    assert made.stdout == Path(DEMO).read_text(encoding="utf-8")
    assert made.stderr.strip() in (examples / "README.md").read_text(encoding="utf-8")
    now = {n["name"]: n["now"] for n in _run("balance")["nodes"]}
    for line in made.stderr.splitlines()[1:]:
        name, cpu, memory, pods = line.split()[:4]
        assert [f"{now[name][r]:.2f}" for r in ("cpu", "memory", "pods")] == [cpu, memory, pods], name


def test_a_node_selector_that_matches_no_node_names_the_values_the_nodes_have() -> None:
    result = CliRunner().invoke(cli, ["balance", "--from-file", DEMO, "-A", "--node-selector",
                                      "topology.kubernetes.io/zone=a"])
    assert isinstance(result.exception, UsageError)  # exit code 2
    assert str(result.exception) == "--node-selector topology.kubernetes.io/zone=a matches none of the 7 nodes " \
        "(their topology.kubernetes.io/zone: eu-west-1a, eu-west-1b, eu-west-1c)"


def test_the_demo_names_its_cluster_so_its_plans_can_be_applied_to_it() -> None:
    identity = _run("balance")["identity"]
    assert identity["source"] == "snapshot" and identity["kubeSystemUID"] == "35bed115-fdaa-4b71-9563-b2eca3a21c78"
