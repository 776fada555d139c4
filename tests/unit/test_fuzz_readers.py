"""Property-based tests (hypothesis) of every reader of untrusted input: snapshots, policies, kubeconfigs, policy
patches, label selectors, quantities and durations. The property is the same for all: an input either loads or
fails with one clean error (a DeschedError, which the CLI prints as one `error:` line); nothing else escapes. A
snapshot that loads must also survive every plugin, explain and the tables: a wrong type that reaches a plugin
is a bug of the reader.

Inputs are valid objects with one or a few fields replaced by hostile values (wrong types, YAML 1.1 booleans,
huge or non-finite numbers, bad timestamps and quantities, nulls), plus raw text and bytes. The runs are
derandomized (the same examples on every machine) and small enough for a few seconds per reader."""

from __future__ import annotations

import copy
import json
import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_desched import safeload
from kubectl_desched.app.policy_files import load_policy
from kubectl_desched.errors import ConfigError, DeschedError, UsageError
from kubectl_desched.framework.args import Duration
from kubectl_desched.framework.policy_decoder import apply_patch, decode_policy
from kubectl_desched.framework.runner import Scope, run
from kubectl_desched.kube.config import KubeOptions, connect, context_namespace
from kubectl_desched.kube.snapshot import load_snapshot
from kubectl_desched.model.durations import parse_duration
from kubectl_desched.model.label_selectors import label_selector, parse_selector
from kubectl_desched.model.quantity import parse_quantity
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import full_registry
from kubectl_desched.term.color import Painter
from kubectl_desched.ui.explain import explain_node_doc, explain_node_text, explain_pod_doc, explain_pod_text
from kubectl_desched.ui.plan_view import candidates_table, document, node_rows, nodes_table
from tests import builders as b

REPO = Path(__file__).resolve().parents[2]
SECRET = "fuzz-SECRET-credential-4711"


def fuzz(examples: int) -> Callable[[Any], Any]:
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fuzz-readers-") as d:
        yield Path(d)


def clean(e: BaseException) -> str:
    """The error the CLI would print: a DeschedError with a one-line message."""
    assert isinstance(e, DeschedError), f"{type(e).__name__}: {e}"
    message = str(e)
    assert message and "\n" not in message and "\r" not in message, repr(message)
    assert len(message) < 1500, message[:200]
    return message


# --- hostile values ----------------------------------------------------------------------------------------------

NASTY = [
    None, True, False, 0, -1, 1, 2**31, -(2**31) - 1, 2**63, 10**40, 0.5, -0.0, 1e308, math.inf, -math.inf,
    math.nan, "", " ", "yes", "y", "n", "NO", "on", "off", "true", "high", "two", "abc%", "50%", "-5%", "1e999999999",
    "-1", "-2.5", "Infinity", "NaN", "1Gi", "100m", "0", "0.5", "1E", "2024-05-01T10:00:00Z", "yesterday",
    "2026-03-01T10:30:00", "2026-13-45T99:99:99Z", "Exists", "In", "NoSchedule", "DoNotSchedule", "Guaranteed",
    "a\nerror: forged", "\x1b[31mred", "x" * 300, "ÿ\u202e\u0000", [], {}, [None], [1, "a"], {"a": 1},
    {"matchLabels": {"a": True}}, [{"key": "a"}], {"x": {"y": [1, {"z": None}]}},
]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
)
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=8)
hostile = st.one_of(st.sampled_from(NASTY), json_values)


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value: its keys and indexes, the root first."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, (*prefix, i))


def replace(obj: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    obj = copy.deepcopy(obj)
    target = obj
    for key in path[:-1]:
        target = target[key]
    if delete and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return obj


def mutated(draw: st.DrawFn, base: Any, at_most: int = 3) -> Any:
    """`base` with one to `at_most` places replaced by hostile values or deleted."""
    obj = base
    for _ in range(draw(st.integers(1, at_most))):
        places = list(paths(obj))
        where = draw(st.sampled_from(places))
        obj = replace(obj, where, draw(hostile), delete=draw(st.integers(0, 9)) == 0)
    return obj


# --- snapshots ---------------------------------------------------------------------------------------------------

def _rich_pod(name: str, node: str, **kw: Any) -> dict[str, Any]:
    pod = b.pod(name, node, namespace="shop", labels={"app": "web", "tier": "front"}, memory="256Mi",
                limits={"cpu": "1", "memory": "256Mi"}, tolerations=[b.toleration("gpu", operator="Exists")],
                volumes=[{"name": "cache", "emptyDir": {}}, {"name": "data", "persistentVolumeClaim": {
                    "claimName": "data"}}],
                affinity={**b.required_node_affinity([b.label_in("zone", "a", "b")]),
                          **b.pod_anti_affinity({"app": "web"})},
                topologySpreadConstraints=[b.spread(1, "zone", {"app": "web"})], priority=100,
                nodeSelector={"disk": "ssd"}, initContainers=[{"name": "init", "image": "i:1", "resources": {
                    "requests": {"cpu": "200m"}}, "restartPolicy": "Always"}], overhead={"cpu": "10m"}, **kw)
    return b.with_status(pod, containers=[b.container_status(restarts=3, waiting="CrashLoopBackOff")],
                         init=[b.container_status("init", terminated="Error", exit_code=1)],
                         conditions=[b.condition("Ready", "False", "PodFailed", "2026-01-01T00:00:00Z")],
                         created="2026-01-01T00:00:00Z")


def base_cluster() -> list[dict[str, Any]]:
    return [
        b.node("n1", cpu="4", labels={"zone": "a", "disk": "ssd"}, taints=[b.taint("gpu", effect="NoSchedule")]),
        b.node("n2", cpu="8", labels={"zone": "b", "disk": "ssd"}),
        _rich_pod("web-0", "n1"), _rich_pod("web-1", "n1"), b.pod("db-0", "n2", namespace="shop", cpu="3"),
        b.pdb("web", {"app": "web"}, namespace="shop", allowed=1) | {"spec": {
            "minAvailable": "50%", "selector": {"matchLabels": {"app": "web"},
                                                "matchExpressions": [{"key": "tier", "operator": "Exists"}]}}},
        b.namespace("shop", {"team": "a"}), b.pvc("data", "fast", namespace="shop"), b.priority_class("high", 1000),
        {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "n1"},
         "status": {"updateTime": "2026-01-01T00:00:00Z", "nodeMetric": {"systemUsage": {"resources": {
             "cpu": "100m"}}}, "podsMetric": [{"namespace": "shop", "name": "web-0", "podUsage": {"resources": {
                 "cpu": "500m", "memory": "100Mi"}}}]}},
        {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics", "metadata": {"name": "n1"},
         "usage": {"cpu": "1", "memory": "1Gi"}},
        {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
         "metadata": {"name": "web-0", "namespace": "shop"},
         "containers": [{"name": "main", "usage": {"cpu": "100m", "memory": "10Mi"}}]},
    ]


EVERY_PLUGIN_POLICY = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: all
  pluginConfig:
  - name: DefaultEvictor
    args: {nodeFit: true, minReplicas: 2, namespaceLabelSelector: {matchLabels: {team: a}},
           priorityThreshold: {name: high}, podProtections: {extraEnabled: [PodsWithPVC],
           config: {PodsWithPVC: {protectedStorageClasses: [{name: fast}]}}}}
  - {name: RemovePodsViolatingNodeAffinity, args: {nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution,
     preferredDuringSchedulingIgnoredDuringExecution]}}
  - {name: RemovePodsViolatingNodeTaints}
  - {name: RemovePodsViolatingInterPodAntiAffinity}
  - {name: RemoveFailedPods, args: {includingInitContainers: true}}
  - {name: PodLifeTime, args: {maxPodLifeTimeSeconds: 60}}
  - {name: RemovePodsHavingTooManyRestarts, args: {podRestartThreshold: 1, includingInitContainers: true}}
  - {name: RemovePodsFromCordonedNodes}
  - {name: LowNodeUtilization, args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}}
  - {name: RemoveDuplicates}
  - {name: RemovePodsViolatingTopologySpreadConstraint, args: {constraints: [DoNotSchedule, ScheduleAnyway]}}
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeAffinity, RemovePodsViolatingNodeTaints, RemovePodsViolatingInterPodAntiAffinity,
                RemoveFailedPods, PodLifeTime, RemovePodsHavingTooManyRestarts, RemovePodsFromCordonedNodes]
    balance:
      enabled: [LowNodeUtilization, RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint]
- name: usage
  pluginConfig:
  - {name: HighNodeUtilization, args: {thresholds: {cpu: 30}}}
  - {name: LowNodeLoad, args: {lowThresholds: {cpu: 20}, highThresholds: {cpu: 50}}}
  plugins:
    balance:
      enabled: [HighNodeUtilization, LowNodeLoad]
"""


def exercise(state: ClusterState) -> None:
    """What the commands do with a state: plan with every plugin, explain every node and pod, the tables."""
    registry = full_registry()
    policy = decode_policy(yaml.safe_load(EVERY_PLUGIN_POLICY), registry, "fuzz")
    try:
        plan = run(policy, state, Scope())
    except DeschedError:
        return  # e.g. a plugin's metrics missing: one clean line too
    assert not plan.errors, plan.errors  # the runner keeps a plugin's exception as an error: the reader let it in
    names = list(dict.fromkeys(policy.plugin_names()))
    for node in state.nodes.values():
        explain_node_text(explain_node_doc(plan, node, True))
    for pod in state.pods:
        explain_pod_text(explain_pod_doc(plan, pod, names))
    candidates_table(plan, wide=True)
    rows = node_rows(plan, list(state.nodes.values()))
    nodes_table(rows, Painter(False), all_nodes=True)
    json.dumps(document(plan, list(state.nodes.values()), {}))


def test_the_base_cluster_loads_and_runs(workdir: Path) -> None:
    for suffix in ("json", "yaml"):
        path = workdir / f"base.{suffix}"
        doc = b.cluster(*base_cluster())
        path.write_text(json.dumps(doc) if suffix == "json" else yaml.safe_dump(doc))
        state = load_snapshot([str(path)])
        assert len(state.pods) == 3 and {"NodeMetric", "PodMetrics", "PriorityClass"} <= set(state.extra)
        exercise(state)


def _load_or_clean_error(path: Path) -> None:
    try:
        state = load_snapshot([str(path)])
    except Exception as e:  # the property: nothing but a clean error
        clean(e)
        return
    exercise(state)


@st.composite
def hostile_clusters(draw: st.DrawFn) -> tuple[str, str]:
    objs = base_cluster()
    i = draw(st.sampled_from([*range(len(objs)), 2, 2, 2, 3, 3, 3, 0, 5]))  # pods have the most fields
    objs[i] = mutated(draw, objs[i])
    doc = b.cluster(*objs)
    form = draw(st.sampled_from(["json", "indented", "yaml"]))
    if form == "yaml":
        return "yaml", yaml.safe_dump(doc, allow_unicode=True)
    # NaN and Infinity as Python writes them; indented as kubectl writes a List, read piece by piece by its layout
    return "json", json.dumps(doc, indent=4 if form == "indented" else None)


@fuzz(300)
@given(hostile_clusters())
def test_snapshot_fields(workdir: Path, case: tuple[str, str]) -> None:
    suffix, text = case
    path = workdir / f"snap.{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _load_or_clean_error(path)


JSONISH = st.text(alphabet='[]{}",:0123456789eE.-+ ntrufalsNIy\\\n"kindListitemsNodePod', max_size=80)
YAMLISH = st.text(alphabet="-:[]{}&*!|>'\"#?,. \n\tabkindLstemNodPy0123456789~<=%@`", max_size=80)


@fuzz(200)
@given(st.one_of(st.binary(max_size=200), JSONISH.map(str.encode), YAMLISH.map(str.encode),
                 st.text(max_size=60).map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_snapshot_text(workdir: Path, data: bytes) -> None:
    path = workdir / "raw"
    path.write_bytes(data)
    _load_or_clean_error(path)


# --- policies ----------------------------------------------------------------------------------------------------

BARE = ["yes", "no", "y", "n", "Y", "On", "OFF", "~", "null", ".inf", "-.nan", "0x1F", "0o17", "1_000", "1:30",
        "2024-01-01", "2024-01-01T00:00:00Z", "!!str 5", "!!binary aGk=", "&a 1", "*a", "[*a]", "{a: b}", "'q'",
        "9" * 5000, "1e999", ">-\n  folded", "|\n  literal", "!!python/object:os.system x", "? [a, b]\n  : c"]


def policies() -> list[dict[str, Any]]:
    return [yaml.safe_load(EVERY_PLUGIN_POLICY),
            *(yaml.safe_load((REPO / "examples" / name).read_text())
              for name in ("descheduler-policy.yaml", "koord-lownodeload.yaml"))]


@st.composite
def hostile_policies(draw: st.DrawFn) -> str:
    policy = mutated(draw, draw(st.sampled_from(policies())))
    if not isinstance(policy, dict) or not draw(st.booleans()):
        return yaml.safe_dump(policy, allow_unicode=True)
    where = draw(st.sampled_from([p for p in paths(policy) if p]))
    text = yaml.safe_dump(replace(policy, where, "__BARE__"), allow_unicode=True, width=10_000)
    return text.replace("__BARE__", draw(st.sampled_from(BARE)), 1)


_BASE_STATE: list[ClusterState] = []


def base_state(workdir: Path) -> ClusterState:
    if not _BASE_STATE:
        path = workdir / "base-state.json"
        path.write_text(json.dumps(b.cluster(*base_cluster())))
        _BASE_STATE.append(load_snapshot([str(path)]))
    return _BASE_STATE[0]


@fuzz(250)
@given(hostile_policies())
def test_policy(workdir: Path, text: str) -> None:
    path = workdir / "policy.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        policy = load_policy(str(path), full_registry())
    except Exception as e:
        clean(e)
        return
    try:
        plan = run(policy, base_state(workdir), Scope())
    except Exception as e:  # a policy that loads runs, or stops with a clean error
        clean(e)
        return
    assert not plan.errors, plan.errors  # a plugin failed on args the decoder let in


# --- policy patches ----------------------------------------------------------------------------------------------

segments = st.one_of(st.sampled_from(["profiles", "0", "1", "-", "name", "pluginConfig", "args", "plugins",
                                      "thresholds", "cpu", "", "~0", "~1", "~", "01", "99999999999999999999"]),
                     st.text(max_size=4))
pointers = st.one_of(st.lists(segments, max_size=5).map(lambda s: "".join("/" + p for p in s)),
                     st.text(max_size=8), scalars)
operations = st.fixed_dictionaries(
    {"op": st.one_of(st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]), scalars),
     "path": pointers},
    optional={"value": hostile, "from": pointers})
patches = st.one_of(st.lists(st.one_of(operations, hostile), max_size=6).map(json.dumps),
                    st.lists(operations, max_size=40).map(json.dumps), JSONISH, YAMLISH)


@fuzz(300)
@given(patches)
def test_policy_patch(patch: str) -> None:
    raw = yaml.safe_load(EVERY_PLUGIN_POLICY)
    try:
        patched = apply_patch(raw, patch)
        assert isinstance(patched, dict)
        decode_policy(patched, full_registry(), "patched")
    except Exception as e:
        clean(e)


# --- kubeconfigs -------------------------------------------------------------------------------------------------

def kubeconfig() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "x", "preferences": {},
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data":
                                               "bm90IGEgY2VydA==", "tls-server-name": "k"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "shop"}},
                     {"name": "y", "context": {"cluster": "c", "user": "v"}}],
        "users": [{"name": "u", "user": {"token": SECRET}},
                  {"name": "v", "user": {"username": "admin", "password": SECRET,
                                         "client-key-data": SECRET, "client-certificate-data": SECRET}}],
    }


def misplaced(cfg: dict[str, Any], how: int) -> dict[str, Any]:
    """Credentials where they do not belong, as a hand-edited kubeconfig has them."""
    cfg = copy.deepcopy(cfg)
    user = cfg["users"][how % 2]
    if how < 2:  # the user's fields beside its name, no `user:`
        user.update(user.pop("user"))
    elif how < 4:  # a user entry among the contexts or the clusters
        cfg["contexts" if how == 2 else "clusters"].insert(0, {"name": user["name"], **user["user"]})
    elif how == 4:  # the credentials at the top
        cfg.update(user["user"])
    else:  # in the context
        cfg["contexts"][0]["context"].update(user["user"])
    return cfg


@st.composite
def hostile_kubeconfigs(draw: st.DrawFn) -> tuple[str, str | None]:
    cfg = kubeconfig()
    if draw(st.booleans()):
        cfg = misplaced(cfg, draw(st.integers(0, 5)))
    cfg = mutated(draw, cfg) if draw(st.integers(0, 3)) else cfg
    context = draw(st.sampled_from([None, "x", "y", "nope"]))
    return yaml.safe_dump(cfg, allow_unicode=True), context


@fuzz(200)
@given(hostile_kubeconfigs())
def test_kubeconfig(workdir: Path, case: tuple[str, str | None]) -> None:
    text, context = case
    path = workdir / "kubeconfig"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    opts = KubeOptions(kubeconfig=str(path), context=context)
    for read in (context_namespace, connect):
        try:
            read(opts)
        except Exception as e:
            message = clean(e)
            assert SECRET not in message and SECRET[:10] not in message, message


# --- selectors, quantities, durations ----------------------------------------------------------------------------

labels = st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=4)


@fuzz(400)
@given(st.one_of(st.text(max_size=40), st.text(alphabet="ab=!,() innot", max_size=30)), labels)
def test_selector_text(text: str, pod_labels: dict[str, str]) -> None:
    try:
        matcher = parse_selector(text)
    except ValueError as e:
        assert "\n" not in str(e)
        return
    assert matcher(pod_labels) in (True, False)


SELECTOR = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]},
                                                                {"key": "x", "operator": "Exists"}]}


@fuzz(300)
@given(st.data(), labels)
def test_label_selector_object(data: st.DataObject, pod_labels: dict[str, str]) -> None:
    selector = mutated(data.draw, SELECTOR) if data.draw(st.booleans()) else data.draw(hostile)
    try:
        matcher = label_selector(selector)
    except ValueError as e:
        assert "\n" not in str(e)
        return
    assert matcher(pod_labels) in (True, False)


quantity_text = st.text(alphabet="0123456789.eE+-kMGTPEimunKi ", max_size=14)


@fuzz(500)
@given(st.one_of(quantity_text, st.text(max_size=10), st.integers(), st.integers(min_value=-(10**400),
                 max_value=10**400), st.floats(allow_nan=True, allow_infinity=True), scalars, json_values))
def test_quantity(value: Any) -> None:
    try:
        number = parse_quantity(value)
    except (ValueError, TypeError) as e:  # TypeError: an unhashable value (the cache); callers check types first
        assert isinstance(e, ValueError) or not isinstance(value, str | int | float)
        return
    assert math.isfinite(number)


duration_text = st.text(alphabet="0123456789.hmsuµn ", max_size=16)


@fuzz(400)
@given(st.one_of(duration_text, st.text(max_size=10)))
def test_duration_text(text: str) -> None:
    try:
        seconds = parse_duration(text, "--timeout")
    except UsageError as e:
        clean(e)
        return
    assert seconds >= 0


@fuzz(300)
@given(st.one_of(duration_text, hostile))
def test_duration_arg(value: Any) -> None:
    try:
        d = Duration.from_raw(value, "args.maxPodLifeTime")
    except ConfigError as e:
        clean(e)
        return
    assert math.isfinite(d.seconds)


# --- the shared YAML reader --------------------------------------------------------------------------------------

ANCHORED = st.lists(st.sampled_from(["a: &x [1, 2]\n", "b: *x\n", "c: [*x, *x, *x]\n", "- &y {k: *x}\n", "- *y\n",
                                     "d: &z [*x, *x]\n", "e: [*z, *z, *z, *z]\n", "f: &w [*w]\n", "---\n", "[[[[\n",
                                     "]]]]\n", "g: y\n", "h: !!binary aGk=\n", "? [a]\n: b\n", "%YAML 1.1\n"]),
                    max_size=12).map("".join)


@fuzz(300)
@given(st.one_of(YAMLISH, ANCHORED, st.text(max_size=60)))
def test_yaml_reader(text: str) -> None:
    try:
        docs = safeload.yaml_documents(text, "fuzz.yaml")
    except Exception as e:
        clean(e)
        return
    for doc in docs:
        safeload.check_depth(doc)  # what loads is within the bound, aliases expanded
        json.dumps(doc, default=str)  # and finite: aliases never make a cycle
