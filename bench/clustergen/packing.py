"""The planned cluster and the packer that places pods onto nodes by their requests."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from clustergen.nodes import build_node
from clustergen.pdbs import build_pdb
from clustergen.plans import Container, Ctx, NodePlan, PdbPlan, PodPlan, Workload
from clustergen.pods import build_pod


@dataclass(slots=True, eq=False)
class Cluster:
    nodes: list[NodePlan]
    pods: list[PodPlan]
    pdbs: list[PdbPlan]
    seed: int

    def items(self, managed_fields: bool = True) -> Iterator[dict[str, Any]]:
        """The API objects in kubectl's order (nodes, pods, PDBs, each sorted), built one at a time."""
        ctx = Ctx(f"items-{self.seed}", managed_fields=managed_fields)
        for n in self.nodes:
            yield build_node(n, ctx)
        for p in self.pods:
            yield build_pod(p, ctx)
        for b in self.pdbs:
            yield build_pdb(b, ctx)


@dataclass(slots=True, eq=False)
class _Draft:
    """A workload whose container sizes wait for the cluster-wide scale: `u` is its relative size."""

    w: Workload
    u: float
    qos: str
    ratio: int  # MiB of memory per core requested
    decimal: bool
    sidecars: tuple[tuple[str, str, int], ...]
    init: str
    main: Container


class _Tier:
    __slots__ = ("boost", "name", "nodes", "open", "remaining")

    def __init__(self, name: str, boost: float) -> None:
        self.name, self.boost = name, boost
        self.nodes: list[NodePlan] = []
        self.open: list[NodePlan] = []
        self.remaining = 0

    def reopen(self) -> None:
        self.open = [n for n in self.nodes if n.t_cpu > n.band_cpu and n.band_pods < n.t_pods]
        self.remaining = sum(n.t_cpu - n.band_cpu for n in self.open)


def _fits(n: NodePlan, cpu: int, mem: int, gpu: int) -> bool:
    return (
        mem <= cpu * n.max_ratio
        and n.band_cpu + cpu <= n.t_cpu
        and n.band_mem + mem <= n.t_mem
        and n.band_pods < n.t_pods
        and n.used_cpu + cpu <= n.alloc_cpu
        and n.used_mem + mem <= n.alloc_mem
        and n.used_pods < n.alloc_pods
        and n.used_gpu + gpu <= n.alloc_gpu
    )


def _fits_alloc(n: NodePlan, cpu: int, mem: int, gpu: int) -> bool:
    return (
        n.used_cpu + cpu <= n.alloc_cpu
        and n.used_mem + mem <= n.alloc_mem
        and n.used_pods < n.alloc_pods
        and n.used_gpu + gpu <= n.alloc_gpu
    )


class _Packer:
    """Random-probe bin packing into per-node targets, with a first-fit scan as the fallback."""

    TRIES = 8

    def __init__(self, rng: random.Random, tiers: dict[str, _Tier]) -> None:
        self.rng, self.tiers = rng, tiers
        for t in tiers.values():
            t.reopen()
        self.fallbacks = 0

    def _close(self, t: _Tier, i: int) -> None:
        n = t.open[i]
        t.remaining -= max(0, n.t_cpu - n.band_cpu)
        t.open[i] = t.open[-1]
        t.open.pop()

    def _probe(self, t: _Tier, cpu: int, mem: int, gpu: int) -> NodePlan | None:
        rng, open_ = self.rng, t.open
        for _ in range(self.TRIES):
            if not open_:
                return None
            i = rng.randrange(len(open_))
            n = open_[i]
            if _fits(n, cpu, mem, gpu):
                n.add(cpu, mem, gpu)
                n.fails = 0
                t.remaining -= cpu
                if n.t_cpu - n.band_cpu < 5 or n.band_pods >= n.t_pods or n.used_pods >= n.alloc_pods:
                    self._close(t, i)
                return n
            n.fails += 1
            if n.fails > 200:
                self._close(t, i)
        return None

    def place(
        self, cpu: int, mem: int, gpu: int, allowed: Sequence[str], relax: Sequence[tuple[str, float]]
    ) -> NodePlan | None:
        tiers = [self.tiers[a] for a in allowed if self.tiers[a].open]
        while tiers:
            weights = [max(t.remaining, 1) * t.boost for t in tiers]
            t = self.rng.choices(tiers, weights)[0]
            n = self._probe(t, cpu, mem, gpu)
            if n is not None:
                return n
            tiers.remove(t)
        # every probe failed: first fit over whole tiers, letting some bands stretch up to a cap
        self.fallbacks += 1
        for name, cap in relax:
            for n in self.tiers[name].nodes:
                if (
                    n.band_cpu + cpu <= n.alloc_cpu * cap
                    and _fits_alloc(n, cpu, mem, gpu)
                    and (name != "light" or _fits(n, cpu, mem, gpu))
                ):
                    n.add(cpu, mem, gpu)
                    return n
        return None


