"""Generate a realistic, deterministic Kubernetes cluster snapshot for benchmarks and tests.

The output looks like ``kubectl get nodes,pods,pdb -A -o json`` (or ``-o yaml``): a v1 ``List`` of
Node, Pod and policy/v1 PodDisruptionBudget objects, with the fields a real cluster fills in
(labels, taints, capacity/allocatable, conditions, owner references, managed fields, pod status).

Placement bin-packs pods by their requests and leaves the cluster imbalanced on purpose: about 30%
of the schedulable workers are heavily loaded (cpu requests 70-95% of allocatable), about 25% are
nearly empty (below 15% of cpu, memory and pods), the rest sit in between. No node ever gets more
requests than its allocatable cpu, memory, pods or GPUs, counting terminal pods too.

Usage::

    python bench/gencluster.py --nodes 5000 --pods 150000 [--seed 1] [-o json|yaml] [--out FILE]

or from Python: ``generate(nodes, pods, seed=1, zones=3)`` returns the List as a dict. The CLI
plans the cluster once (small records, 1-2 KB per pod) and streams the objects one by
one, so memory stays flat however large the output is. The same seed gives the same bytes.
At 5,000 nodes and 150,000 pods that takes about a minute and 250 MB of memory and writes 3.5 GB
of kubectl-style indented JSON (1.1 GB with --indent 0, 0.7 GB adding --no-managed-fields).

The builders (``NodePlan``, ``Workload``, ``PodPlan``, ``PdbPlan``, ``build_*``, ``write_list``)
are reusable: ``examples/make-demo-cluster`` hand-places a small cluster with them.

The parts, each importing only from those before it: units (constants, quantities, times), plans (the small
records), managed (managedFields), nodes, pods and pdbs (the objects), writing (kubectl-style output), workloads
and system (the cluster's own pods), words (names and size ladders), packing (placement), drafts (application
workloads), planner (plan_cluster), cli.
"""

from clustergen.cli import generate, main, summarize
from clustergen.nodes import build_node, node_plan
from clustergen.packing import Cluster
from clustergen.pdbs import build_pdb
from clustergen.planner import plan_cluster
from clustergen.plans import Container, Ctx, NodePlan, PdbPlan, PodPlan, Workload
from clustergen.pods import build_pod
from clustergen.system import coredns, metrics_server
from clustergen.units import DAY, KUBE_VERSION, NOW, REGION, REGISTRY, fmt_cpu, fmt_mem, parse_cpu, parse_mem, ts
from clustergen.workloads import kube_proxy, new_workload, pod_name, static_pod
from clustergen.writing import list_object, write_list

__all__ = [
    "DAY",
    "KUBE_VERSION",
    "NOW",
    "REGION",
    "REGISTRY",
    "Cluster",
    "Container",
    "Ctx",
    "NodePlan",
    "PdbPlan",
    "PodPlan",
    "Workload",
    "build_node",
    "build_pdb",
    "build_pod",
    "coredns",
    "fmt_cpu",
    "fmt_mem",
    "generate",
    "kube_proxy",
    "list_object",
    "main",
    "metrics_server",
    "new_workload",
    "node_plan",
    "parse_cpu",
    "parse_mem",
    "plan_cluster",
    "pod_name",
    "static_pod",
    "summarize",
    "ts",
    "write_list",
]
