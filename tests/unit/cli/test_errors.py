"""Bad input on the command line: click's CliRunner on the command group, main() in-process for what reaches stderr
(one `error:` line, exit code 2 for usage errors, no traceback), and `python -m kubectl_desched` in a subprocess for
two smoke cases of the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubectl_desched.cli.main import cli, main
from kubectl_desched.errors import DeschedError, UsageError
from tests import builders as b

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with a snapshot, a broken snapshot and a broken policy; no kubeconfig anywhere."""
    objs = [b.node("n1", cpu="4"), b.node("n2", cpu="4"),
            *(b.pod(f"web-{i}", "n1", cpu="1", namespace="shop") for i in range(4))]
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(b.cluster(*objs)))
    (tmp_path / "bad-snap.yaml").write_text("kind: List\nitems: [\n")
    (tmp_path / "bad-policy.yaml").write_text("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
                                              "profiles: [\n")
    b.isolate_from_the_user(tmp_path, monkeypatch)
    return tmp_path


SNAP = ["--from-file", "snap.yaml", "-A"]

# (args, exit code, a fragment of the one-line message)
BAD_INPUT: list[tuple[list[str], int, str]] = [
    (["balance", "--bogus"], 2, "No such option '--bogus'"),
    (["frobnicate"], 2, "No such command 'frobnicate'"),
    (["balance", *SNAP, "-o", "xml"], 2, "-o xml: unknown output format: table, wide, json, yaml, name, jsonpath="),
    (["explain", "node"], 2, "Missing argument 'NODE'"),
    (["balance", *SNAP, "--thresholds", "cpu"], 2, "--thresholds: expected RESOURCE=PERCENT"),
    (["balance", *SNAP, "--target-thresholds", "cpu=lots"], 2, "--target-thresholds: expected RESOURCE=PERCENT"),
    (["balance", *SNAP, "--thresholds", "cpu=60", "--target-thresholds", "cpu=50"], 2,
     "thresholds.cpu: 60 is greater than targetThresholds.cpu 50"),
    (["balance", *SNAP, "--thresholds", "cpu=120", "--target-thresholds", "cpu=150"], 2,
     "thresholds.cpu: must be between 0 and 100"),
    (["balance", *SNAP, "--plugin", "NoSuchPlugin"], 2,
     "unknown plugin 'NoSuchPlugin'; --plugin takes: HighNodeUtilization, LowNodeLoad, LowNodeUtilization, "
     "RemoveDuplicates,"),
    (["deschedule", *SNAP, "--plugin", "NoSuchPlugin"], 2,
     "unknown plugin 'NoSuchPlugin'; --plugin takes: PodLifeTime"),
    (["balance", *SNAP, "--plugin", "DefaultEvictor"], 2, "--plugin DefaultEvictor"),
    (["balance", *SNAP, "--max-pods", "-1"], 2, "must be from 0 to 2147483647, not '-1'"),
    (["balance", *SNAP, "--args", "LowNodeUtilization=[1]"], 2, "--args: expected PLUGIN={...}"),
    (["run", "--policy", "missing.yaml", *SNAP], 2, "cannot read missing.yaml"),
    (["run", "--policy", "bad-policy.yaml", *SNAP], 2, "bad-policy.yaml: not valid YAML at line"),
    (["balance", "--policy", "snap.yaml", "--args", "LowNodeUtilization={}", *SNAP], 2,
     "does not combine with --policy"),
    (["balance", "--from-file", "bad-snap.yaml", "-A"], 2, "bad-snap.yaml: not valid YAML at line"),
    (["balance", "--from-file", "missing-snap.yaml", "-A"], 2, "cannot read missing-snap.yaml"),
    (["balance", *SNAP, "--yes"], 2, "cannot evict from a snapshot"),
    (["balance", *SNAP, "--dry-run=server"], 2,
     "--dry-run=server needs a cluster: the API server checks each eviction, and a snapshot (--from-file) has no"),
    (["balance", *SNAP, "-n", "shop"], 2, "-A/--all-namespaces and -n/--namespace cannot be used together"),
    (["balance", "--from-file", "snap.yaml", "--kubeconfig", "x"], 2, "--from-file reads a snapshot"),
    (["explain", "node", "nope", *SNAP], 1, 'node "nope" not found'),
    (["run", *SNAP], 2, "run needs --policy FILE"),
    (["balance", "--kubeconfig", "missing-kubeconfig"], 2, "kubeconfig missing-kubeconfig: no such file"),
    (["balance"], 2, "no kubeconfig found at"),
    (["balance", *SNAP, "--request-timeout", "5x"], 2, "--request-timeout: '5x' is not a duration"),
    (["balance", *SNAP, "-l", "app in (web"], 2, "-l/--selector: invalid label selector term"),
    (["balance", *SNAP, "--node-selector", "a b"], 2, "--node-selector: invalid label selector term"),
    (["balance", *SNAP, "--nodes", "n1,ghost"], 2, "--nodes: no node named ghost (the nodes: n1, n2)"),
    (["balance", *SNAP, "--node-selector", "pool=a"], 2,
     "--node-selector pool=a matches none of the 2 nodes (none has the label pool)"),
    (["balance", *SNAP, "--nodes", "n2", "--node-selector", "kubernetes.io/hostname=n1"], 2,
     "--node-selector kubernetes.io/hostname=n1 matches none of the 1 nodes --nodes names (their "
     "kubernetes.io/hostname: n2)"),
    (["balance", *SNAP, "--thresholds", "cpu=120"], 2, "--thresholds: thresholds.cpu: must be between 0 and 100"),
    (["balance", *SNAP, "--min-replicas", "-2"], 2, "must be from 0 to 2147483647, not '-2'"),
    (["balance", *SNAP, "--args", 'DefaultEvictor={"nodeFit": "yes"}'], 2,
     "--args DefaultEvictor: nodeFit: must be a boolean"),
    (["balance", *SNAP, "--plugin", "LowNodeLoad"], 2,
     "the policy needs NodeMetric objects: add them to the snapshot (kubectl get nodemetrics.slo.koordinator.sh"),
    (["balance", *SNAP, "--use-metrics"], 2,
     "the policy needs NodeMetrics objects: add them to the snapshot (kubectl get --raw /apis/metrics.k8s.io"),
    (["balance", *SNAP, "--plugin", "LowNodeLoad", "--thresholds", "cpu=80", "--target-thresholds", "cpu=70"], 2,
     "--thresholds: lowThresholds.cpu: 80 is greater than highThresholds.cpu 70"),
    (["balance", *SNAP, "--use-metrics", "--thresholds", "nvidia.com/gpu=10"], 2,
     "thresholds.nvidia.com/gpu: metrics.k8s.io measures only cpu and memory"),
    (["balance", "--from-file", "snap.yaml", "--token", "t"], 2, "--from-file reads a snapshot: the flags that reach"),
    (["balance", "--from-file", "snap.yaml", "--disable-compression"], 2, "--from-file reads a snapshot: the flags"),
    (["balance", "--from-file", "snap.yaml", "-s", "https://x"], 2, "--from-file reads a snapshot"),
    (["balance", "-s", ""], 2, "-s/--server must not be empty"),
    (["balance", "-s", "ftp://api:6443"], 2, "-s/--server: the scheme must be https or http, not 'ftp'"),
    (["balance", "-s", "https://api server"], 2, "-s/--server: the host must not contain spaces"),
    (["balance", "-s", "https://admin:PW@api:99999"], 2, "-s/--server: not a URL: Port out of range 0-65535"),
    (["balance", "-s", "https://"], 2, "-s/--server: the URL names no host"),
    (["balance", "--certificate-authority", "nope.crt"], 2, "--certificate-authority nope.crt: no such file"),
    (["balance", "--client-certificate", "nope.crt"], 2, "--client-certificate nope.crt: no such file"),
    (["balance", "--certificate-authority", "snap.yaml", "--insecure-skip-tls-verify"], 2, "cannot be used together"),
    (["balance", "--token", "abc"], 2, "no kubeconfig found at"),
    (["balance", *SNAP, "--chunk-size", "-1"], 2, "must be from 0 to"),
    (["balance", *SNAP, "-v", "11"], 2, "must be from 0 to 10, not '11'"),
    (["balance", *SNAP, "--field-selector", "status.phase"], 2, "--field-selector: invalid selector: 'status.phase'"),
    (["balance", *SNAP, "--field-selector", "spec.hostNetwork=true"], 2,
     "--field-selector: field spec.hostNetwork cannot be matched in a snapshot"),
]
IDS = [" ".join(a) for a, _, _ in BAD_INPUT]


@pytest.mark.parametrize(("args", "code", "fragment"), BAD_INPUT, ids=IDS)
def test_cli_runner_bad_input(workdir: Path, args: list[str], code: int, fragment: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    if isinstance(result.exception, DeschedError):  # main() turns these into one line and their exit code
        assert result.exception.exit_code == code
        assert code != 2 or isinstance(result.exception, UsageError)
        message = str(result.exception)
        assert "\n" not in message
        assert fragment in message
    else:  # click's own usage errors end the command group with exit code 2 (main() says them as `FLAG: why`)
        assert code == 2
        assert result.exit_code == 2
        assert fragment in result.output


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "kubectl_desched", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize(("args", "code", "fragment"), BAD_INPUT, ids=IDS)
def test_main_bad_input_is_one_line(workdir: Path, args: list[str], code: int, fragment: str,
                                    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """main() in-process: what it writes to stderr and the code it exits with, as a shell sees them."""
    monkeypatch.setattr(sys, "argv", ["kubectl-desched", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert fragment in lines[0]
    assert exited.value.code == code
    assert out == ""


def test_server_urls_are_checked_as_client_go_takes_them_and_never_echoed(workdir: Path) -> None:
    """A URL client-go would take passes (a bare host[:port] too); a refused one is not quoted: it may hold a
    password."""
    from kubectl_desched.cli import checks

    for fine in ("api:6443", "10.0.0.1", "https://[::1]:6443/prefix", "HTTP://api"):
        assert checks.server_url(fine) == fine
    for bad in ("https://admin:PW@api:99999", "ftp://admin:PW@api", "https://admin:PW@api server", "https://[PW"):
        result = CliRunner().invoke(cli, ["balance", "-s", bad])
        assert isinstance(result.exception, UsageError) and "PW" not in str(result.exception), bad


# The real entry point in a fresh interpreter, for a usage error and a bad file; the in-process runs cover the rest
SMOKE = [case for case in BAD_INPUT
         if case[0] in (["balance", "--bogus"], ["run", "--policy", "bad-policy.yaml", *SNAP])]


@pytest.mark.parametrize(("args", "code", "fragment"), SMOKE, ids=[" ".join(a) for a, _, _ in SMOKE])
def test_entry_point_bad_input_is_one_line(workdir: Path, args: list[str], code: int, fragment: str) -> None:
    proc = _run(args, workdir)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    assert fragment in lines[0]
    assert proc.returncode == code
    assert proc.stdout == ""


def test_main_succeeds_on_a_snapshot(workdir: Path) -> None:
    """The same setup without the mistake works, so the failures above are about the bad input."""
    proc = _run(["balance", *SNAP, "-o", "json"], workdir)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [c["pod"] for c in doc["candidates"]] == ["web-0", "web-1"]
    assert doc["mode"] == "snapshot"


def test_cli_runner_explain_node(workdir: Path) -> None:
    result = CliRunner().invoke(cli, ["explain", "node", "n1", *SNAP])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Node n1: Ready; schedulable")
    assert "LowNodeUtilization: over-utilized" in result.output


def test_no_arguments_prints_help_and_exits_0() -> None:
    """As kubectl: `kubectl desched` alone, or a command group alone, is a request for help, not an error."""
    import subprocess
    import sys

    for args in ([], ["explain"]):
        proc = subprocess.run([sys.executable, "-m", "kubectl_desched", *args], capture_output=True, text=True,
                              check=False, timeout=60)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert proc.stdout.startswith(f"Usage: kubectl desched {' '.join(args)}".rstrip() + " [OPTIONS] COMMAND")
        assert "Commands:" in proc.stdout
