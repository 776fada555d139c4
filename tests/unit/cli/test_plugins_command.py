"""`kubectl desched plugins`: every plugin with its extension points, origin and args with their defaults."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kubectl_desched.cli.main import cli
from kubectl_desched.plugins import in_tree_registry


def _rows(text: str) -> dict[str, str]:
    """First line of each plugin's row, by name (the args column wraps onto the following lines)."""
    return {line.split()[0]: line for line in text.splitlines()[1:] if line and not line.startswith(" ")}


def test_table_lists_every_in_tree_plugin_with_points_origin_and_args() -> None:
    out = CliRunner().invoke(cli, ["plugins"])
    assert out.exit_code == 0, out.output
    header = out.output.splitlines()[0]
    assert header.split() == ["NAME", "EXTENSION", "POINTS", "ORIGIN", "ARGS", "(DEFAULTS)"]
    rows = _rows(out.output)
    assert {s.name for s in in_tree_registry()} <= set(rows)
    assert rows["RemoveFailedPods"].split()[1:3] == ["deschedule", "in-tree"]
    lines = [line.strip() for line in out.output.splitlines()]
    assert "minPodLifetimeSeconds: 3600" in lines
    # The args a run from flags uses, one per line in flow style, and a policy's default where that differs.
    assert rows["LowNodeUtilization"].split(None, 3)[1:] == ["balance", "in-tree",
                                                             "thresholds: {cpu: 20, memory: 20, pods: 20} (policy: {})"]
    assert "podRestartThreshold: 100 (policy: 0)" in lines
    assert "podProtections: {extraEnabled: [], defaultDisabled: [], config: unset}" in lines  # never cut mid-word
    assert "DESCRIPTION" not in header


def test_flow_style_values() -> None:
    from kubectl_desched.ui.plugins_table import flow

    assert flow({"cpu": 20.0, "memory": 12.5, "on": True, "x": None}) == "{cpu: 20, memory: 12.5, on: true, x: unset}"
    assert flow(["Pending", "", "a b", "true"]) == '[Pending, "", "a b", "true"]'
    assert flow("requiredDuringSchedulingIgnoredDuringExecution") == "requiredDuringSchedulingIgnoredDuringExecution"


def test_wide_adds_descriptions_and_json_has_everything() -> None:
    wide = CliRunner().invoke(cli, ["plugins", "-o", "wide"])
    assert wide.exit_code == 0 and wide.output.splitlines()[0].rstrip().endswith("DESCRIPTION")
    assert "Evicts Failed pods" in wide.output
    doc = json.loads(CliRunner().invoke(cli, ["plugins", "-o", "json"]).output)
    rfp = next(p for p in doc["plugins"] if p["name"] == "RemoveFailedPods")
    assert rfp["extensionPoints"] == ["deschedule"] and rfp["origin"] == "in-tree"
    assert rfp["defaultArgs"]["minPodLifetimeSeconds"] == 3600 and rfp["defaultArgs"]["reasons"] == []
    assert rfp["flagDefaultArgs"] == rfp["defaultArgs"] and rfp["flags"] == []


def test_defaults_agree_with_help() -> None:
    """`plugins` and a command's --help show the same default from flags: both come from the plugin's declaration."""
    doc = json.loads(CliRunner().invoke(cli, ["plugins", "-o", "json"]).output)
    restarts = next(p for p in doc["plugins"] if p["name"] == "RemovePodsHavingTooManyRestarts")
    assert restarts["flags"] == ["--pod-restart-threshold"]
    policy, flags = restarts["defaultArgs"], restarts["flagDefaultArgs"]
    assert (policy["podRestartThreshold"], flags["podRestartThreshold"]) == (0, 100)
    help_text = " ".join(CliRunner().invoke(cli, ["deschedule", "--help"]).output.split())
    assert "--pod-restart-threshold N RemovePodsHavingTooManyRestarts: podRestartThreshold [default: 100]." in help_text
    lifetime = next(p for p in doc["plugins"] if p["name"] == "PodLifeTime")["flagDefaultArgs"]
    assert (lifetime["maxPodLifeTimeSeconds"], lifetime["states"]) == (86400, ["Pending"])
    assert "[default: Pending pods older than 24h]" in help_text
