"""bench/plugins.py stays runnable as plugins come and go: on a small generated cluster every Deschedule and Balance
plugin of the registry gets a row, with candidates found or a line saying why it was not run. (The figures
themselves come from running the benchmark at 5,000 nodes, not from a test.)"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubectl_desched.errors import ConfigError
from kubectl_desched.framework import BalancePlugin, PluginArgs
from kubectl_desched.framework.registry import PluginSpec
from kubectl_desched.model.objects import Node
from kubectl_desched.model.state import ClusterState
from kubectl_desched.plugins import full_registry

# Loaded by path under its own name: `plugins` alone is also the repository's folder of plugin distributions.
BENCH = Path(__file__).resolve().parents[3] / "bench" / "plugins.py"
_spec = importlib.util.spec_from_file_location("bench_plugins", BENCH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_plugins"] = bench
_spec.loader.exec_module(bench)


@dataclass
class NeedsArgs(PluginArgs):
    level: int = 0

    def validate(self, path: str) -> None:
        if self.level < 1:
            raise ConfigError(f"{path}.level" if path else "level", "must be at least 1")


class NewPlugin(BalancePlugin):
    name = "NewPluginWithoutBenchArgs"
    args_type = NeedsArgs

    def balance(self, nodes: list[Node]) -> None:
        pass


@pytest.fixture(scope="module")
def state() -> ClusterState:
    built, times = bench.build_state(60, 1500, seed=3)
    assert set(times) == {"plan", "generate", "parse", "index"} and times["parse"] > 0
    return built


def test_every_plugin_gets_a_row(state: ClusterState) -> None:
    registry = full_registry()
    registry.register(PluginSpec.of(NewPlugin, origin="test"))
    rows = {r["plugin"]: r for r in bench.bench(registry, state, None, runs=2, seed=3)}
    runnable = {s.name for s in registry if {"deschedule", "balance"} & set(s.points)}
    assert set(rows) == runnable
    assert "DefaultEvictor" not in rows  # filters run inside every other row
    skipped = rows.pop("NewPluginWithoutBenchArgs")["skipped"]
    assert skipped.startswith("no bench args: ") and "level: must be at least 1" in skipped
    assert "BENCH_ARGS" in skipped
    for name, row in rows.items():
        assert "skipped" not in row, (name, row.get("skipped"))
        assert len(row["seconds"]) == 2 and row["median"] > 0 and row["errors"] == []
    assert "NodeMetric" in state.extra  # LowNodeLoad's objects came from EXTRA_KINDS
    found = {name for name, row in rows.items() if row["candidates"]}
    # the seasoning gives these work even in a small cluster
    assert {"LowNodeUtilization", "RemovePodsViolatingNodeTaints", "RemovePodsHavingTooManyRestarts"} <= found


def test_missing_kind_is_a_line_not_a_failure(state: ClusterState, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = full_registry()
    if "LowNodeLoad" not in registry:
        pytest.skip("LowNodeLoad is not in this tree")
    monkeypatch.setattr(bench, "EXTRA_KINDS", {})
    monkeypatch.setattr(state, "extra", {})
    (row,) = bench.bench(registry, state, ["LowNodeLoad"], runs=1, seed=3)
    assert row["skipped"] == "no bench data: needs NodeMetric (add a builder to EXTRA_KINDS)"
