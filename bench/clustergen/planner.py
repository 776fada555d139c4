"""plan_cluster: the nodes, the workloads and their pods, placed to leave the cluster imbalanced."""

from __future__ import annotations

import random
from collections.abc import Sequence

from clustergen.drafts import (
    _bare_draft,
    _deployment_draft,
    _gpu_deployment,
    _huge_deployment,
    _job_draft,
    _realize,
    _stateful_draft,
    _unschedulable_message,
)
from clustergen.nodes import node_plan
from clustergen.packing import Cluster, _Draft, _fits, _fits_alloc, _Packer, _Tier
from clustergen.plans import NodePlan, PdbPlan, PodPlan, Workload, _ip_str
from clustergen.system import _node_local_dns, _system_deployments
from clustergen.units import DAY, NOW, REGION, SAFE, ts
from clustergen.words import _BARE, _JOBWORDS, _NOUNS, _ROLES, _STATEFUL, _SUBS, _TEAMS
from clustergen.workloads import (
    _POOL,
    _WORKER_TYPES,
    _WORKER_WEIGHTS,
    FILL,
    kube_proxy,
    node_resources,
    pod_name,
    static_pod,
)


def plan_cluster(nodes: int, pods: int, seed: int = 1, zones: int = 3) -> Cluster:
    """Plan a cluster of `nodes` nodes and exactly `pods` pods (fewer daemon pods if `pods` cannot
    even hold one per node), deterministically for `seed`."""
    if nodes < 1:
        raise ValueError("nodes must be at least 1")
    if pods < 0:
        raise ValueError("pods must not be negative")
    if not 1 <= zones <= 26:
        raise ValueError("zones must be between 1 and 26")
    rng = random.Random(seed)
    zone_names = [f"{REGION}{chr(97 + i)}" for i in range(zones)]

    # --- nodes
    n_cp = 3 if nodes >= 20 else (1 if nodes >= 4 else 0)
    n_gpu = max(1, round(nodes * 0.03)) if nodes >= 8 else 0
    n_workers = nodes - n_cp - n_gpu
    n_cordon = max(1, round(n_workers * 0.02)) if nodes >= 8 else 0
    n_sched = n_workers - n_cordon
    n_heavy, n_light = round(n_sched * 0.30), round(n_sched * 0.25)
    if n_sched >= 3:
        n_heavy, n_light = max(n_heavy, 1), max(n_light, 1)
    tiers_of = (
        ["control-plane"] * n_cp
        + ["gpu"] * n_gpu
        + ["cordoned"] * n_cordon
        + ["heavy"] * n_heavy
        + ["light"] * n_light
        + ["medium"] * (n_sched - n_heavy - n_light)
    )
    zone_of = [i % zones for i in range(nodes)]
    rng.shuffle(zone_of)
    per_zone = [zone_of.count(z) for z in range(zones)]
    hosts = [rng.sample(range(254, 254 * 256), k) for k in per_zone]
    node_plans: list[NodePlan] = []
    for i, tier in enumerate(tiers_of):
        z = zone_of[i]
        h = hosts[z].pop()
        ip = f"10.{20 + z}.{h // 254}.{h % 254 + 1}"
        zone = zone_names[z]
        name = f"ip-{ip.replace('.', '-')}.{REGION}.compute.internal"
        style = "eks"
        labels: dict[str, str] = {}
        taints: list[dict[str, str]] = []
        if tier == "control-plane":
            itype, style = "m5.xlarge", "control-plane"
            created = NOW - rng.randint(90, 400) * DAY + rng.randrange(DAY)
            labels = {
                "node-role.kubernetes.io/control-plane": "",
                "node.kubernetes.io/exclude-from-external-load-balancers": "",
            }
            taints = [{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}]
            pool = f"control-plane-{zone}"
        else:
            if tier == "gpu":
                itype = rng.choice(("g4dn.xlarge", "g4dn.2xlarge"))
                labels = {"dedicated": "gpu", "nvidia.com/gpu.present": "true"}
                taints = [{"effect": "NoSchedule", "key": "dedicated", "value": "gpu"}]
            else:
                itype = rng.choices(_WORKER_TYPES, _WORKER_WEIGHTS)[0]
                labels = {"node-role.kubernetes.io/node": ""}
            created = NOW - min(int(rng.expovariate(1 / (18 * DAY))), 200 * DAY) - 3600 - rng.randrange(3600)
            pool = f"{_POOL[itype[:2]]}-{zone}"
            if tier != "gpu" and itype in ("m5.2xlarge", "m5.4xlarge") and rng.random() < 0.25:
                style, pool = "round", f"legacy-{zone}"
        labels["kops.k8s.io/instancegroup"] = pool
        capacity, allocatable = node_resources(rng, itype, style)
        base = (100 << 24 | 64 << 16) + 256 * i
        n = node_plan(
            rng,
            name,
            zone,
            itype,
            ip,
            f"{_ip_str(base)}/24",
            created,
            capacity,
            allocatable,
            role=tier if tier in ("control-plane", "gpu") else "worker",
            pool=pool,
            taints=taints,
            labels=labels,
            provider_id=f"aws:///{zone}/i-0{rng.getrandbits(64):016x}",
            tier=tier,
        )
        if tier == "cordoned":
            n.unschedulable = True
            n.taints = [
                {
                    "effect": "NoSchedule",
                    "key": "node.kubernetes.io/unschedulable",
                    "timeAdded": ts(NOW - rng.randint(3600, 5 * DAY)),
                }
            ]
        lo, hi, mem_f, pods_f = {
            "heavy": (0.74, 0.93, 0.95, 1.0),
            "medium": (0.34, 0.62, 0.90, 1.0),
            "light": (0.035, 0.11, 0.11, 0.12),
            "cordoned": (0.12, 0.45, 0.90, 1.0),
            "control-plane": (0.25, 0.45, 0.90, 1.0),
            "gpu": (1.0, 1.0, 1.0, 1.0),
        }[tier]
        n.t_cpu = int(n.alloc_cpu * rng.uniform(lo, hi))
        n.t_mem = int(n.alloc_mem * mem_f)
        n.t_pods = max(3, int(n.alloc_pods * pods_f))
        if tier == "heavy":
            n.max_ratio = 1.1 * n.alloc_mem / n.alloc_cpu
        node_plans.append(n)

    tiers = {
        name: _Tier(name, boost)
        for name, boost in (
            ("heavy", 2.5),
            ("medium", 1.0),
            ("light", 1.0),
            ("cordoned", 0.8),
            ("control-plane", 1.0),
            ("gpu", 1.0),
        )
    }
    for n in node_plans:
        tiers[n.tier].nodes.append(n)
    cps = tiers["control-plane"].nodes

    # --- system pods: mirror pods, daemon sets, kube-system deployments (truncated to `pods`)
    plans: list[PodPlan] = []
    taken: set[tuple[str, str]] = set()  # (namespace, pod name)
    budget = pods

    def add_fixed(w: Workload, node: NodePlan | None, name: str) -> bool:
        nonlocal budget
        if budget <= 0:
            return False
        budget -= 1
        plans.append(PodPlan(w, name, node))
        if node is not None:
            node.add(w.cpu, w.mem, w.gpu)
        return True

    for node in cps:
        for comp, req in (
            ("etcd", {"cpu": "100m", "memory": "100Mi"}),
            ("kube-apiserver", {"cpu": "250m"}),
            ("kube-controller-manager", {"cpu": "200m"}),
            ("kube-scheduler", {"cpu": "100m"}),
        ):
            w = static_pod(rng, comp, node, req)
            add_fixed(w, node, pod_name(w, rng, taken=taken))
    cluster_born = min(n.created for n in node_plans)
    dss = [kube_proxy(rng, cluster_born + 600), _node_local_dns(rng, cluster_born + 900)]
    for w in dss:
        for node in node_plans:
            add_fixed(w, node, pod_name(w, rng, taken=taken))

    namespaces: list[str] = []
    used_names: set[tuple[str, str]] = set()
    drafts: list[_Draft] = []
    regular: list[PodPlan] = []  # running pods placed by the packer
    system = _system_deployments(rng, nodes, cluster_born)
    for w in system:
        for _ in range(w.replicas):
            if budget <= 0:
                break
            budget -= 1
            regular.append(PodPlan(w, pod_name(w, rng, taken=taken), None))

    # --- workloads
    work = budget
    n_pending = work // 5000 + (1 if work >= 200 else 0)
    n_bare = max(1, work // 1000) if work >= 50 else 0
    n_gpu_pods = min(round(n_gpu * 0.6), max(0, work - n_pending - n_bare))
    n_jobs = round(work * 0.03)
    n_sts = round(work * 0.06)
    n_deploy = work - n_pending - n_bare - n_gpu_pods - n_jobs - n_sts
    if n_deploy < 0:  # tiny clusters: deployments only
        n_pending = n_bare = n_gpu_pods = n_jobs = n_sts = 0
        n_deploy = work

    def new_namespace() -> str:
        for _ in range(50):
            ns = f"{rng.choice(_TEAMS)}-{rng.choice(_SUBS)}"
            if ns not in namespaces:
                break
        else:
            ns = f"{rng.choice(_TEAMS)}-{rng.choice(_SUBS)}-{len(namespaces)}"
        namespaces.append(ns)
        return ns

    def unique(ns: str, name: str) -> str:
        base, k = name, 2
        while (ns, name) in used_names:
            name, k = f"{base}-{k}", k + 1
        used_names.add((ns, name))
        return name

    deployments: list[Workload] = []
    ns, left = "", 0
    remaining = n_deploy
    while remaining > 0:
        if left <= 0:
            ns, left = new_namespace(), rng.randint(30, 70)
        replicas = min(remaining, _replicas(rng))
        name = unique(ns, f"{rng.choice(_NOUNS)}-{rng.choice(_ROLES)}")
        d = _deployment_draft(rng, ns, name, replicas)
        drafts.append(d)
        deployments.append(d.w)
        for _ in range(replicas):
            regular.append(_pod_plan(rng, d.w, taken))
        remaining -= replicas
        left -= 1
    if not namespaces:
        namespaces.append(new_namespace())

    remaining = n_sts
    stateful: list[Workload] = []
    while remaining > 0:
        ns = rng.choice(namespaces)
        base, image, port = rng.choice(_STATEFUL)
        replicas = min(remaining, rng.choice((1, 1, 2, 3, 3, 3, 5)))
        name = unique(ns, base if rng.random() < 0.5 else f"{base}-{rng.choice(_NOUNS)}")
        d = _stateful_draft(rng, ns, name, base, image, port, replicas)
        drafts.append(d)
        stateful.append(d.w)
        for i in range(replicas):
            regular.append(_pod_plan(rng, d.w, taken, ordinal=i))
        remaining -= replicas

    terminal: list[PodPlan] = []
    for _ in range(n_jobs):
        ns = rng.choice(namespaces)
        cron = f"{rng.choice(_NOUNS)}-{rng.choice(_JOBWORDS)}"
        period = 3600 if "hourly" in cron else DAY
        runs_ago = rng.randint(0, 3)
        scheduled = (NOW - runs_ago * period - rng.randrange(min(period, 6 * 3600))) // 60 * 60
        name = unique(ns, f"{cron}-{scheduled // 60}")
        d = _job_draft(rng, ns, name, cron, scheduled)
        drafts.append(d)
        r = rng.random()
        phase = "Succeeded" if r < 0.65 else "Failed" if r < 0.75 else "Running"
        p = PodPlan(d.w, pod_name(d.w, rng, taken=taken), None, phase=phase)
        (regular if phase == "Running" else terminal).append(p)

    for _ in range(n_bare):
        ns = "default" if rng.random() < 0.5 else rng.choice(namespaces)
        base, image = rng.choice(_BARE)
        name = unique(ns, f"{base}-{''.join(rng.choices(SAFE, k=5))}")
        d = _bare_draft(rng, ns, name, image, NOW - rng.randint(600, 40 * DAY))
        drafts.append(d)
        taken.add((ns, name))
        regular.append(PodPlan(d.w, name, None))

    gpu_pods: list[PodPlan] = []
    remaining = n_gpu_pods
    while remaining > 0:
        ns = rng.choice(namespaces)
        replicas = min(remaining, rng.choice((1, 1, 2)))
        name = unique(ns, f"{rng.choice(('inference', 'embedding', 'training', 'vision'))}-{rng.choice(_ROLES)}")
        w = _gpu_deployment(rng, ns, name, replicas)
        deployments.append(w)
        gpu_pods += [PodPlan(w, pod_name(w, rng, taken=taken), None) for _ in range(replicas)]
        remaining -= replicas

    pending: list[PodPlan] = []
    remaining = n_pending
    while remaining > 0:
        ns = rng.choice(namespaces)
        replicas = min(remaining, rng.choice((1, 1, 2, 3)))
        name = unique(ns, f"{rng.choice(_NOUNS)}-{rng.choice(('trainer', 'batch', 'etl', 'compactor'))}")
        w = _huge_deployment(rng, ns, name, replicas)
        deployments.append(w)
        pending += [PodPlan(w, pod_name(w, rng, taken=taken), None, phase="Pending") for _ in range(replicas)]
        remaining -= replicas

    # --- sizes: scale the drafts so running pods ask for FILL of the bands' free targets
    band_tiers = ("heavy", "medium", "light", "cordoned")
    free = sum(n.t_cpu - n.band_cpu for t in band_tiers for n in tiers[t].nodes)
    free -= sum(p.w.cpu for p in regular if p.w in system)
    units = {id(d.w): 0 for d in drafts}
    for p in regular:
        if id(p.w) in units:
            units[id(p.w)] += 1
    total_units = sum(d.u * units[id(d.w)] for d in drafts) or 1.0
    scale = FILL * max(free, 0) / total_units
    for _ in range(3):
        for d in drafts:
            _realize(d, scale)
        demand = sum(p.w.cpu for p in regular if id(p.w) in units)
        if demand <= 0:
            break
        scale *= min(1.5, max(0.5, FILL * max(free, 0) / demand))
    for d in drafts:
        _realize(d, scale)

    # --- placement
    packer = _Packer(rng, tiers)
    regular.sort(key=lambda p: (p.w not in system, -p.w.cpu, -p.w.mem))
    normal = ("heavy", "medium", "light", "cordoned")
    relax_normal = (("medium", 0.68), ("cordoned", 0.6), ("heavy", 0.95), ("light", 0.15))
    unschedulable: list[PodPlan] = []
    for p in regular:
        w = p.w
        on_cp = any(t.get("key") == "node-role.kubernetes.io/control-plane" for t in w.tolerations)
        allowed = (*normal, "control-plane") if on_cp else normal
        relax = (*relax_normal, ("control-plane", 0.5)) if on_cp else relax_normal
        p.node = packer.place(w.cpu, w.mem, w.gpu, allowed, relax)
        if p.node is None:
            unschedulable.append(p)
    _top_up(
        rng,
        tiers["heavy"].nodes,
        [p for p in regular if p.node is not None and p.node.tier == "medium" and p.w not in system],
    )
    for p in gpu_pods:
        free_gpu = [n for n in tiers["gpu"].nodes if _fits_alloc(n, p.w.cpu, p.w.mem, p.w.gpu)]
        if free_gpu:
            p.node = rng.choice(free_gpu)
            p.node.add(p.w.cpu, p.w.mem, p.w.gpu)
        else:
            unschedulable.append(p)
    hosts_for_done = tiers["heavy"].nodes + tiers["medium"].nodes
    for p in terminal:
        w = p.w
        for _ in range(20):
            n = rng.choice(hosts_for_done) if hosts_for_done else None
            if n is not None and n.created < w.created - 300 and _fits_alloc(n, w.cpu, w.mem, w.gpu):
                n.add(w.cpu, w.mem, w.gpu, terminal=True)
                p.node = n
                break
        else:
            p.node = next((n for n in node_plans if n.tier in normal and _fits_alloc(n, w.cpu, w.mem, w.gpu)), None)
            if p.node is not None:
                p.node.add(w.cpu, w.mem, w.gpu, terminal=True)
            else:
                unschedulable.append(p)
    for p in unschedulable + pending:
        p.phase = "Pending"
        p.message = _unschedulable_message(p.w, node_plans, tiers)

    all_pods = plans + regular + gpu_pods + terminal + pending
    # crash loops and restarts on running controller pods
    for p in all_pods:
        if p.phase != "Running" or p.node is None:
            continue
        r = rng.random()
        if p.w.kind in ("Deployment", "StatefulSet") and r < 0.01:
            p.crashloop, p.restarts = True, rng.randint(12, 900)
        elif r < 0.12:
            p.restarts = rng.choice((1, 1, 1, 2, 3, 5, 8))
    all_pods.sort(key=lambda p: (p.w.namespace, p.name))
    node_plans.sort(key=lambda n: n.name)

    # --- PDBs: about a third of the deployments, a few stateful sets, coredns
    # PDB status counts the pods its selector matches (by the app / k8s-app label)
    count: dict[tuple[str, str, str], int] = {}
    healthy: dict[tuple[str, str, str], int] = {}
    for p in all_pods:
        for k in ("app", "k8s-app"):
            v = p.w.labels.get(k)
            if v is not None:
                key = (p.w.namespace, k, v)
                count[key] = count.get(key, 0) + 1
                if p.healthy:
                    healthy[key] = healthy.get(key, 0) + 1
    pdbs: list[PdbPlan] = []
    dns = ("kube-system", "k8s-app", "kube-dns")
    for w in system:
        if w.name == "coredns" and count.get(dns):
            pdbs.append(
                PdbPlan(
                    "kube-system",
                    "coredns",
                    {"k8s-app": "kube-dns"},
                    w.created,
                    count[dns],
                    healthy.get(dns, 0),
                    max_unavailable=1,
                )
            )
    for w in deployments + stateful:
        key = (w.namespace, "app", w.name)
        if not count.get(key) or rng.random() >= (0.33 if w.kind == "Deployment" else 0.3):
            continue
        r = rng.random()
        mn: int | str | None = None
        mx: int | str | None = None
        if r < 0.35:
            mn = rng.choice((1, max(1, w.replicas - 1), w.replicas))
        elif r < 0.5:
            mn = rng.choice(("50%", "60%", "80%"))
        elif r < 0.85:
            mx = 1
        else:
            mx = rng.choice(("25%", "33%", "50%"))
        helm = w.name if rng.random() < 0.5 else ""
        name = w.name if rng.random() < 0.5 else f"{w.name}-pdb"
        created = w.created + rng.randint(0, 600)
        pdbs.append(PdbPlan(w.namespace, name, {"app": w.name}, created, count[key], healthy.get(key, 0), mn, mx, helm))
    pdbs.sort(key=lambda b: (b.namespace, b.name))
    return Cluster(node_plans, all_pods, pdbs, seed)


def _top_up(rng: random.Random, heavy: Sequence[NodePlan], donors: list[PodPlan], floor: float = 0.72) -> None:
    """Move pods from medium nodes (keeping them above 30%) onto heavy nodes the packer left below
    `floor` of their allocatable cpu, typically nodes where memory ran out before cpu did."""
    short = [n for n in heavy if n.band_cpu < floor * n.alloc_cpu]
    if not short:
        return
    rng.shuffle(donors)
    donors.sort(key=lambda p: p.w.mem / max(p.w.cpu, 1))  # cpu-heavy pods first
    for h in short:
        for p in donors:
            if h.band_cpu >= floor * h.alloc_cpu:
                break
            src, w = p.node, p.w
            if src is None or src.tier != "medium" or not w.cpu or src.band_cpu - w.cpu < 0.30 * src.alloc_cpu:
                continue
            if _fits(h, w.cpu, w.mem, w.gpu):
                src.remove(w.cpu, w.mem, w.gpu)
                h.add(w.cpu, w.mem, w.gpu)
                p.node = h


def _replicas(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.22:
        return 1
    if r < 0.52:
        return 2
    if r < 0.77:
        return 3
    if r < 0.92:
        return rng.randint(4, 6)
    if r < 0.98:
        return rng.randint(7, 12)
    return rng.randint(13, 40)


def _pod_plan(rng: random.Random, w: Workload, taken: set[tuple[str, str]], ordinal: int = 0) -> PodPlan:
    return PodPlan(w, pod_name(w, rng, ordinal, taken), None, ordinal=ordinal if w.kind == "StatefulSet" else -1)


