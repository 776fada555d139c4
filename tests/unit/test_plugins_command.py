"""`kubectl desched plugins`: every plugin with its extension points, origin and args with their defaults."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kubectl_desched.cli import cli
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
    assert "minPodLifetimeSeconds=3600" in out.output
    assert rows["LowNodeUtilization"].split()[1:4] == ["balance", "in-tree", "thresholds={},"]
    assert "DESCRIPTION" not in header


def test_wide_adds_descriptions_and_json_has_everything() -> None:
    wide = CliRunner().invoke(cli, ["plugins", "-o", "wide"])
    assert wide.exit_code == 0 and wide.output.splitlines()[0].rstrip().endswith("DESCRIPTION")
    assert "Evicts Failed pods" in wide.output
    doc = json.loads(CliRunner().invoke(cli, ["plugins", "-o", "json"]).output)
    rfp = next(p for p in doc["plugins"] if p["name"] == "RemoveFailedPods")
    assert rfp["extensionPoints"] == ["deschedule"] and rfp["origin"] == "in-tree"
    assert rfp["defaultArgs"]["minPodLifetimeSeconds"] == 3600 and rfp["defaultArgs"]["reasons"] == []
