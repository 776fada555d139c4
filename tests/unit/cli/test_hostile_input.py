"""Hostile files and flags, offline (issue 11): every example the campaign tried, through the real entry point
(main(), in process) and, where a crash would take the test process with it, in a subprocess: one `error:` line,
the usage exit code, no traceback. tests/unit/test_fuzz_readers.py generalizes these with hypothesis."""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_desched import safeload
from kubectl_desched.cli import main as cli
from tests import builders as b

REPO = Path(__file__).resolve().parents[3]
SECRET = "SECRET-TOKEN-do-not-print-0123456789"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    b.isolate_from_the_user(tmp_path, monkeypatch)
    (tmp_path / "policy.yaml").write_text((REPO / "examples" / "descheduler-policy.yaml").read_text())
    write_snapshot(tmp_path / "snap.json", cluster())
    return tmp_path


def cluster(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [b.node("n1", cpu="4"), b.node("n2", cpu="4"),
            *(b.pod(f"web-{i}", "n1", cpu="1", namespace="shop", labels={"app": "web"}) for i in range(3)),
            b.pdb("web", {"app": "web"}, namespace="shop", allowed=1), *extra]


def write_snapshot(path: Path, objs: list[dict[str, Any]]) -> Path:
    doc = b.cluster(*objs)
    path.write_text(yaml.safe_dump(doc) if path.suffix == ".yaml" else json.dumps(doc))
    return path


def run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str],
             stdin: bytes | None = None) -> tuple[int, str, str]:
    """main() in process, as `kubectl desched ARGS` runs it: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["kubectl-desched", *args])
    if stdin is not None:  # as under the C locale: undecodable bytes pass as surrogates
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8",
                                                           errors="surrogateescape"))
    code = 0
    try:
        cli.main()
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_error(code: int, out: str, err: str, expected_code: int = 2) -> str:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert len(lines[0]) < 400, lines[0]
    assert code == expected_code, err
    assert out == ""
    return lines[0]


def run_subprocess(args: list[str], cwd: Path, stdin: bytes | None = None,
                   env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    full = dict(os.environ, **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), full.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "kubectl_desched", *args], cwd=cwd, env=full, input=stdin,
                          capture_output=True, timeout=120, check=False)


def subprocess_error(proc: subprocess.CompletedProcess[bytes], expected_code: int = 2) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == expected_code, (proc.returncode, err)  # -11 was libyaml's segfault
    return one_error(expected_code, proc.stdout.decode(), err, expected_code)


# --- nesting ---------------------------------------------------------------------------------------------------

DEEP = 30_000  # libyaml's composer crashed about 25,000 levels down


@pytest.mark.parametrize(("name", "text"), [
    ("deep.json", '{"kind": "List", "items": [' + "[" * DEEP + "]" * DEEP + "]}"),
    ("deep-top.json", "[" * DEEP + "]" * DEEP),
    ("deep.yaml", "kind: List\nitems:\n" + "- " * DEEP + "x\n"),
    ("deep-flow.yaml", "kind: List\nitems: " + "[" * DEEP + "]" * DEEP + "\n"),
    ("deep-map.yaml", "a: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n"),
])
def test_deep_snapshot_is_refused_before_parsing(workdir: Path, name: str, text: str) -> None:
    (workdir / name).write_text(text)
    line = subprocess_error(run_subprocess(["balance", "--from-file", name, "-A"], workdir))
    assert f"nested more than {safeload.MAX_DEPTH} levels deep" in line
    assert name in line


def test_nesting_up_to_the_bound_is_read(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A Pod field no plugin reads, nested to the bound exactly (the List, its items, the Pod and its spec count)."""
    deep: Any = 1
    for _ in range(safeload.MAX_DEPTH - 4):
        deep = [deep]
    objs = cluster()
    objs[2]["spec"]["unused"] = deep
    for suffix in ("json", "yaml"):
        write_snapshot(workdir / f"edge.{suffix}", objs)
        code, _, err = run_main(monkeypatch, capsys, ["balance", "--from-file", f"edge.{suffix}", "-A"])
        assert code == 0, err
    objs[2]["spec"]["unused"] = [deep]
    for suffix in ("json", "yaml"):
        write_snapshot(workdir / f"over.{suffix}", objs)
        line = one_error(*run_main(monkeypatch, capsys, ["balance", "--from-file", f"over.{suffix}", "-A"]))
        assert "nested more than 100 levels deep" in line


def _deep_yaml(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("where", ["policy", "args", "patch", "patch-file"])
def test_deep_policy_args_and_patch(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str], where: str) -> None:
    deep = _deep_yaml(DEEP)
    snap = ["--from-file", "snap.json", "-A"]
    if where == "policy":
        (workdir / "deep-policy.yaml").write_text("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
                                                  f"profiles: {deep}\n")
        args = ["run", "--policy", "deep-policy.yaml", *snap]
    elif where == "args":
        args = ["balance", *snap, "--args", f"LowNodeUtilization={{thresholds: {deep}}}"]
    else:
        patch = f'[{{"op": "add", "path": "/x", "value": {deep}}}]'
        if where == "patch-file":
            (workdir / "patch.json").write_text(patch)
            patch = "@patch.json"
        args = ["run", "--policy", "policy.yaml", "--policy-patch", patch, *snap]
    line = one_error(*run_main(monkeypatch, capsys, args))
    assert f"nested more than {safeload.MAX_DEPTH} levels deep" in line


def test_a_patch_cannot_nest_or_multiply_the_policy(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    base = ["run", "--policy", "policy.yaml", "--from-file", "snap.json", "-A", "--policy-patch"]
    nest = [{"op": "copy", "from": "/profiles", "path": "/profiles/0/x"}] * 200
    line = one_error(*run_main(monkeypatch, capsys, [*base, json.dumps(nest)]))
    assert "the patched policy would nest more than 100 levels deep" in line
    double = [op for i in range(40) for op in ({"op": "copy", "from": "", "path": f"/a{i % 2}"},)]
    line = one_error(*run_main(monkeypatch, capsys, [*base, json.dumps(double)]))
    assert "the patch writes more than 100,000 values" in line


# --- size and bytes --------------------------------------------------------------------------------------------

def test_dev_zero_is_not_read_to_the_end(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    line = one_error(*run_main(monkeypatch, capsys, ["balance", "--from-file", "/dev/zero", "-A"]))
    assert line == "error: /dev/zero: not a text file (it has control characters)"


RANDOM = bytes((i * 7919 + 13) % 256 for i in range(200_000))  # fixed "random" bytes, invalid UTF-8


def test_random_bytes_on_stdin(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    line = one_error(*run_main(monkeypatch, capsys, ["balance", "--from-file", "-", "-A"], stdin=RANDOM))
    assert line == "error: <stdin>: not a text file"


def test_random_bytes_on_stdin_under_the_c_locale(workdir: Path) -> None:
    """The original failure: Python reads stdin with surrogateescape under the C locale."""
    proc = run_subprocess(["balance", "--from-file", "-", "-A"], workdir, stdin=RANDOM,
                          env={"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"})
    assert subprocess_error(proc) == "error: <stdin>: not a text file"


def test_a_snapshot_on_stdin_still_reads(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    data = (workdir / "snap.json").read_bytes()
    code, out, err = run_main(monkeypatch, capsys, ["balance", "--from-file", "-", "-A", "-o", "json"], stdin=data)
    assert code == 0, err
    assert json.loads(out)["mode"] == "snapshot"


def test_size_limits(workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(safeload, "MAX_YAML_SNAPSHOT_CHARS", 1000)
    monkeypatch.setattr(safeload, "MAX_CONFIG_CHARS", 500)
    write_snapshot(workdir / "big.yaml", cluster())
    line = one_error(*run_main(monkeypatch, capsys, ["balance", "--from-file", "big.yaml", "-A"]))
    assert line == "error: big.yaml: larger than the 1000 characters this input may have"
    line = one_error(*run_main(monkeypatch, capsys, ["run", "--policy", "policy.yaml", "--from-file", "snap.json"]))
    assert line == "error: policy.yaml: larger than the 500 characters this input may have"


def test_json_size_limits(workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from kubectl_desched.kube import decode, jsonstream
    monkeypatch.setattr(jsonstream, "CHUNK", 64)
    monkeypatch.setattr(jsonstream, "MAX_JSON_OBJECT_CHARS", 100)
    code, _out, err = run_main(monkeypatch, capsys, ["balance", "--from-file", "snap.json", "-A"])
    assert code == 0, err  # the typed decode builds no item's dicts: the bound on one item is the streamed read's
    with monkeypatch.context() as m:
        m.setattr(decode, "snapshot", lambda _data: None)  # what the typed decode does not take is streamed
        line = one_error(*run_main(monkeypatch, capsys, ["balance", "--from-file", "snap.json", "-A"]))
    assert line.endswith("a value larger than 100 characters")
    monkeypatch.setattr(jsonstream, "MAX_JSON_OBJECT_CHARS", 1 << 20)
    monkeypatch.setattr(jsonstream, "MAX_JSON_SNAPSHOT_CHARS", 2000)
    line = one_error(*run_main(monkeypatch, capsys, ["balance", "--from-file", "snap.json", "-A"]))
    assert line.endswith("larger than the 2000 characters a snapshot may have")


def test_kubeconfig_alias_bomb(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    lines = ['    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"    {name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    (workdir / "bomb.yaml").write_text(
        "apiVersion: v1\ncurrent-context: x\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\nusers:\n- name: u\n  user:\n" + "\n".join(lines))
    line = one_error(*run_main(monkeypatch, capsys, ["balance", "--kubeconfig", "bomb.yaml"]))
    assert "YAML aliases repeat more than 100,000 values" in line


def test_recursive_alias(workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "loop.yaml").write_text("kind: List\nitems: &x [*x]\n")
    line = one_error(*run_main(monkeypatch, capsys, ["balance", "--from-file", "loop.yaml", "-A"]))
    assert "alias *x refers to a node that contains it" in line


# --- numbers and patches ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_five_thousand_digit_integer(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    text = json.dumps(b.cluster(*cluster())).replace('"disruptionsAllowed": 1', '"disruptionsAllowed": ' + "9" * 5000)
    (workdir / f"digits.{suffix}").write_text(text if suffix == "json" else yaml.safe_dump(json.loads(
        text.replace("9" * 5000, '"DIGITS"'))).replace("DIGITS", "9" * 5000))
    line = one_error(*run_main(monkeypatch, capsys, ["balance", "--from-file", f"digits.{suffix}", "-A"]))
    assert "4,300 digits" in line or "4300 digits" in line


@pytest.mark.parametrize(("patch", "fragment"), [
    ('[{"op":"replace","path":"","value":"x"}]', "the patched policy must be an object, not 'x'"),
    ('[{"op":"replace","path":"","value":[1]}]', "the patched policy must be an object, not [1]"),
    ('[{"op":"remove","path":""}]', "--policy-patch: "),
    ('[{"op":"add","path":"/profiles/99999999999999999999","value":1}]', "--policy-patch: "),
    ('[{"op":"add","path":"profiles","value":1}]', "Location must start with /"),
    ('[{"op":"add","path":7,"value":1}]', "--policy-patch: "),
    ('[{"op":"move","from":"/profiles","path":"/profiles/0"}]', "Cannot move values into their own children"),
    ('[{"op":"copy","from":"/nope","path":"/x"}]', "--policy-patch: "),
    ('[{"op":"replace","path":"/profiles/0/name","value":{"a":1}}]', "profiles[0].name: must be a string"),
    ('[{"op":"replace","path":"/profiles","value":"x"}]', "profiles: at least one profile is required"),
    ('[null]', "--policy-patch: "),
])
def test_bad_patches(workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                     patch: str, fragment: str) -> None:
    args = ["run", "--policy", "policy.yaml", "--from-file", "snap.json", "-A", "--policy-patch", patch]
    assert fragment in one_error(*run_main(monkeypatch, capsys, args))


# --- wrong types and garbage in objects --------------------------------------------------------------------------

def _pod(**spec: Any) -> dict[str, Any]:
    return b.pod("bad", "n1", namespace="shop", **spec)


def _with(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    *parents, last = path.split(".")
    target = obj
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return obj


NODE, POD, PDB = b.node("bad"), _pod(), b.pdb("bad", {"app": "web"}, namespace="shop")
NODE_METRIC = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "n1"},
               "status": {"updateTime": "2026-01-01T00:00:00Z"}}

GARBAGE: list[tuple[str, dict[str, Any], str]] = [
    ("priority high", _with(POD, "spec.priority", "high"),
     "Pod shop/bad: spec.priority: must be an integer, not the string 'high'"),
    ("priority out of int32", _with(POD, "spec.priority", 2**40),
     "Pod shop/bad: spec.priority: must be from -2147483648 to 2147483647, not the integer 1099511627776"),
    ("affinity string", _with(POD, "spec.affinity", "anywhere"),
     "Pod shop/bad: spec.affinity: must be an object, not the string 'anywhere'"),
    ("affinity list", _with(POD, "spec.affinity", [{"nodeAffinity": {}}]),
     "Pod shop/bad: spec.affinity: must be an object, not a list"),
    ("affinity terms not a list", _with(POD, "spec.affinity", {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "zone=a"}}}),
     "Pod shop/bad: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
     "must be a list, not the string 'zone=a'"),
    ("cpu 1e999999999", _with(POD, "spec.containers.0.resources.requests.cpu", "1e999999999"),
     "Pod shop/bad: spec.containers[0].resources.requests[cpu]: the string '1e999999999' is out of range for a "
     "quantity"),
    ("negative request", _with(POD, "spec.containers.0.resources.requests.memory", "-1Gi"),
     "Pod shop/bad: spec.containers[0].resources.requests[memory]: must not be negative, not the string '-1Gi'"),
    ("negative allocatable", _with(NODE, "status.allocatable.cpu", "-2"),
     "Node bad: status.allocatable[cpu]: must not be negative, not the string '-2'"),
    ("NaN allocatable", _with(NODE, "status.allocatable.cpu", float("nan")),
     "Node bad: status.allocatable[cpu]: the number nan is out of range for a quantity"),
    ("memory Infinity", _with(NODE, "status.allocatable.memory", "Infinity"),
     "Node bad: status.allocatable[memory]: must be a quantity such as 500m or 1Gi, not the string 'Infinity'"),
    ("memory inf", _with(NODE, "status.allocatable.memory", float("inf")),
     "Node bad: status.allocatable[memory]: the number inf is out of range for a quantity"),
    ("minAvailable abc%", _with(PDB, "spec.minAvailable", "abc%"),
     "PodDisruptionBudget shop/bad: spec.minAvailable: must be a whole number or a percentage such as 50%, "
     "not the string 'abc%'"),
    ("list in matchLabels", _with(PDB, "spec.selector.matchLabels", {"app": ["web"]}),
     "PodDisruptionBudget shop/bad: spec.selector.matchLabels[app]: must be a string, not a list"),
    ("maxSkew two", _with(POD, "spec.topologySpreadConstraints", [b.spread(1, "zone", {"app": "web"}) | {
        "maxSkew": "two"}]),
     "Pod shop/bad: spec.topologySpreadConstraints[0].maxSkew: must be a whole number above 0, not the string "
     "'two'"),
    ("containers null", _with(POD, "spec.containers", None), "Pod shop/bad: spec.containers: required"),
    ("containers empty", _with(POD, "spec.containers", []), "Pod shop/bad: spec.containers: must not be empty"),
    ("no spec", {k: v for k, v in POD.items() if k != "spec"}, "Pod shop/bad: spec: required"),
    ("NodeMetric status string", _with(NODE_METRIC, "status", "fine"),
     "NodeMetric n1: status: must be an object, not the string 'fine'"),
    ("creationTimestamp yesterday", _with(POD, "metadata.creationTimestamp", "yesterday"),
     "Pod shop/bad: metadata.creationTimestamp: must be an RFC 3339 timestamp such as 2024-05-01T10:00:00Z, "
     "not the string 'yesterday'"),
    ("startTime without a zone", _with(POD, "status.startTime", "2026-03-01T10:30:00"),
     "Pod shop/bad: status.startTime: must be an RFC 3339 timestamp"),
    ("label value a number", _with(POD, "metadata.labels", {"app": 5}),
     "Pod shop/bad: metadata.labels[app]: must be a string, not the integer 5"),
    ("toleration key a list", _with(POD, "spec.tolerations", [{"key": ["a"], "operator": "Exists"}]),
     "Pod shop/bad: spec.tolerations[0].key: must be a string, not a list"),
    ("restartCount a string", _with(POD, "status.containerStatuses", [b.container_status() | {"restartCount": "3"}]),
     "Pod shop/bad: status.containerStatuses[0].restartCount: must be a whole number, not the string '3'"),
    ("owner controller yes", _with(POD, "metadata.ownerReferences.0.controller", "yes"),
     "Pod shop/bad: metadata.ownerReferences[0].controller: must be a boolean, not the string 'yes'"),
    ("volumes a map", _with(POD, "spec.volumes", {"cache": {"emptyDir": {}}}),
     "Pod shop/bad: spec.volumes: must be a list, not an object"),
    ("taint without effect", _with(NODE, "spec.taints", [{"key": "a"}]), "Node bad: spec.taints[0].effect: required"),
    ("a newline in a label key", _with(POD, "metadata.labels", {"a\nerror: forged": 1}),
     "Pod shop/bad: metadata.labels['a\\nerror: forged']: must be a string, not the integer 1"),
]


@pytest.mark.parametrize(("obj", "message"), [(o, m) for _, o, m in GARBAGE], ids=[i for i, _, _ in GARBAGE])
@pytest.mark.parametrize("command", [["explain", "node", "n1"], ["explain", "pod", "web-0", "-n", "shop"],
                                     ["balance", "-A"]], ids=["explain-node", "explain-pod", "balance"])
def test_garbage_in_objects_is_refused_when_read(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str], obj: dict[str, Any],
                                                 message: str, command: list[str]) -> None:
    for suffix in ("json", "yaml"):
        if suffix == "json" and any(v in message for v in ("nan", "inf ")):
            continue  # JSON has no NaN: refused as not JSON (below)
        write_snapshot(workdir / f"bad.{suffix}", cluster(obj))
        line = one_error(*run_main(monkeypatch, capsys, [*command, "--from-file", f"bad.{suffix}"]))
        assert line.startswith(f"error: bad.{suffix}: {message}"), line


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_constants_that_json_does_not_have(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str], constant: str) -> None:
    text = json.dumps(b.cluster(*cluster())).replace('"cpu": "4"', f'"cpu": {constant}', 1)
    (workdir / "nan.json").write_text(text)
    line = one_error(*run_main(monkeypatch, capsys, ["balance", "--from-file", "nan.json", "-A"]))
    assert f"{constant} is not a JSON value" in line


# --- policies --------------------------------------------------------------------------------------------------

def _policy(mutate: Callable[[dict[str, Any]], None]) -> str:
    doc = yaml.safe_load((REPO / "examples" / "descheduler-policy.yaml").read_text())
    mutate(doc)
    return yaml.safe_dump(doc)


@pytest.mark.parametrize(("text", "fragment"), [
    (_policy(lambda d: d["profiles"][0]["pluginConfig"][3]["args"]["thresholds"].update({5: 10})),
     "profiles[0].pluginConfig[3].args.thresholds: keys must be strings, not 5"),
    (_policy(lambda d: d["profiles"][0].update(name={"a": "b"})),
     "profiles[0].name: must be a string, not {'a': 'b'}"),
    (_policy(lambda d: d["profiles"][0].update(name=True)),
     "profiles[0].name: must be a string, not true (YAML reads an unquoted yes"),
    (_policy(lambda d: d["profiles"][0]["pluginConfig"][3]["args"]["thresholds"].update(cpu=float("nan"))),
     "profiles[0].pluginConfig[3].args.thresholds.cpu: must be a finite number, not .nan"),
    (_policy(lambda d: d["profiles"][0]["pluginConfig"][3]["args"].update(numberOfNodes=10**40)),
     "profiles[0].pluginConfig[3].args.numberOfNodes: must be an integer from -2^63 to 2^63-1, not an integer of 41 "
     "digits"),
])
def test_policies_upstream_refuses(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str], text: str, fragment: str) -> None:
    (workdir / "p.yaml").write_text(text)
    line = one_error(*run_main(monkeypatch, capsys, ["run", "--policy", "p.yaml", "--from-file", "snap.json", "-A"]))
    assert f"error: p.yaml: {fragment}" in line


@pytest.mark.parametrize("word", ["yes", "y", "Y", "n", "NO", "on", "Off", "true", "False"])
def test_yaml_11_booleans_in_a_policy_are_booleans(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], word: str) -> None:
    text = (REPO / "examples" / "descheduler-policy.yaml").read_text().replace(
        "      nodeFit: true\n", f"      nodeFit: true\n      labelSelector:\n        matchLabels: {{sel: {word}}}\n")
    (workdir / "p.yaml").write_text(text)
    line = one_error(*run_main(monkeypatch, capsys, ["run", "--policy", "p.yaml", "--from-file", "snap.json", "-A"]))
    assert line.startswith("error: p.yaml: profiles[0].pluginConfig[0].args.labelSelector: matchLabels.sel: must be "
                           "a string, not the boolean ")
    assert "(YAML reads an unquoted yes, no, on, off, y, n, true or false as a boolean: quote it)" in line
    (workdir / "q.yaml").write_text(text.replace(f"{{sel: {word}}}", f"{{sel: '{word}'}}"))
    code, _, err = run_main(monkeypatch, capsys, ["run", "--policy", "q.yaml", "--from-file", "snap.json", "-A"])
    assert code == 0, err


def test_yaml_11_booleans_in_args(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    args = ["balance", "--from-file", "snap.json", "-A", "--args", "DefaultEvictor={labelSelector: {matchLabels: "
            "{sel: y}}}"]
    line = one_error(*run_main(monkeypatch, capsys, args))
    assert "labelSelector: matchLabels.sel: must be a string, not the boolean true" in line


# --- credentials -------------------------------------------------------------------------------------------------

def _kubeconfig(users: str, extra: str = "") -> str:
    return ("apiVersion: v1\ncurrent-context: x\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
            f"contexts: [{{name: x, context: {{cluster: c, user: u}}}}]\nusers: {users}\n{extra}")


KUBECONFIGS = [
    ("token beside the name", _kubeconfig(f"[{{name: u, token: {SECRET}}}]")),
    ("user entry under contexts", _kubeconfig("[]").replace(
        "contexts: [{name: x, context: {cluster: c, user: u}}]",
        f"contexts: [{{name: x, context: {{cluster: c, user: u}}}}, {{name: u, token: {SECRET}}}]")),
    ("password and no user key", _kubeconfig(f"[{{name: u, password: {SECRET}, username: admin}}]")),
    ("user is a list", _kubeconfig(f"[{{name: u, user: [{SECRET}]}}]")),
    ("client key data that is not base64", _kubeconfig(
        f"[{{name: u, user: {{client-certificate-data: {SECRET}, client-key-data: {SECRET}}}}}]")),
    ("token is a list", _kubeconfig(f"[{{name: u, user: {{token: [{SECRET}]}}}}]")),
    ("token is an object", _kubeconfig(f"[{{name: u, user: {{token: {{value: {SECRET}}}}}}}]")),
    ("auth provider with a secret", _kubeconfig(
        f"[{{name: u, user: {{auth-provider: {{name: oidc, config: {{client-secret: {SECRET}, "
        f"idp-issuer-url: 5}}}}}}}}]")),
    ("exec plugin that fails and echoes its env", _kubeconfig(
        f"[{{name: u, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1, command: sh, args: [-c, 'echo "
        f"$T >&2; exit 1'], env: [{{name: T, value: {SECRET}}}]}}}}}}]")),
    ("token in a cluster entry", _kubeconfig("[{name: u, user: {}}]").replace(
        "cluster: {server: 'https://127.0.0.1:1'}", f"cluster: {{server: [{SECRET}]}}")),
    ("server is the token", _kubeconfig(f"[{{name: u, user: {{token: {SECRET}}}}}]").replace(
        "server: 'https://127.0.0.1:1'", f"server: {{token: {SECRET}}}")),
    ("tokenFile missing", _kubeconfig(f"[{{name: u, user: {{tokenFile: /nonexistent/{SECRET}}}}}]")),
    ("not YAML after the token", _kubeconfig(f"[{{name: u, user: {{token: {SECRET}}}}}]", "clusters: [\n")),
]


@pytest.mark.parametrize("text", [t for _, t in KUBECONFIGS], ids=[i for i, _ in KUBECONFIGS])
@pytest.mark.parametrize("command", [["balance"], ["explain", "node", "n1"], ["balance", "--context", "x", "-n", "a"]])
def test_no_kubeconfig_error_shows_a_credential(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str], text: str,
                                                command: list[str]) -> None:
    (workdir / "kubeconfig").write_text(text)
    code, out, err = run_main(monkeypatch, capsys, [*command, "--kubeconfig", "kubeconfig",
                                                    "--request-timeout", "1s"])
    assert SECRET not in out + err
    assert SECRET[:12] not in out + err  # not even cut short
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert code in (1, 2)


def test_the_docs_state_the_limits_in_force() -> None:
    from kubectl_desched.framework import policy_decoder as policy
    page = (REPO / "docs" / "reliability.md").read_text()
    section = page[page.index("## Hostile files and flags"):]
    section = section[:section.index("\n## ")]
    for text in (f"| {safeload.MAX_DEPTH} levels |",
                 f"| {safeload.describe_size(safeload.MAX_JSON_SNAPSHOT_CHARS)} |",
                 f"| {safeload.describe_size(safeload.MAX_JSON_OBJECT_CHARS)} |",
                 f"| {safeload.describe_size(safeload.MAX_YAML_SNAPSHOT_CHARS)} |",
                 f"| {safeload.describe_size(safeload.MAX_CONFIG_CHARS)} |",
                 f"| {safeload.MAX_ALIAS_VALUES:,} |",
                 f"| {policy.MAX_PATCH_OPERATIONS:,} operations, writing at most {policy.MAX_PATCH_VALUES:,} values |"):
        assert text in section, text
