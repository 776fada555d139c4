"""Drafts of the application workloads (Deployments, StatefulSets, Jobs, bare pods) and their sizing."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from clustergen.packing import _Draft, _Tier
from clustergen.plans import Container, NodePlan, Workload
from clustergen.units import DAY, MI, NOW, REGISTRY, fmt_cpu, fmt_mem, ts
from clustergen.words import _CPU_LADDER, _MEM_DECIMAL, _MEM_LADDER, _SIDECARS, _snap
from clustergen.workloads import new_workload


def _deployment_draft(rng: random.Random, ns: str, name: str, replicas: int) -> _Draft:
    team = ns.split("-", 1)[0]
    created = NOW - min(int(rng.expovariate(1 / (60 * DAY))), 700 * DAY) - rng.randrange(DAY)
    annotations: dict[str, str] = {}
    r = rng.random()
    if r < 0.3:
        annotations = {"prometheus.io/port": "9090", "prometheus.io/scrape": "true"}
    if rng.random() < 0.1:
        annotations["kubectl.kubernetes.io/restartedAt"] = ts(created + rng.randint(0, NOW - created))
    if rng.random() < 0.03:
        annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] = rng.choice(("true", "false"))
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": ns, "team": team}
    volumes: list[dict[str, Any]] = []
    mounts: list[tuple[str, str]] = []
    if rng.random() < 0.4:
        volumes.append({"configMap": {"defaultMode": 420, "name": f"{name}-config"}, "name": "config"})
        mounts.append(("config", "/etc/app"))
    if rng.random() < 0.2:
        volumes.append({"name": "credentials", "secret": {"defaultMode": 420, "secretName": f"{name}-credentials"}})
        mounts.append(("credentials", "/var/run/secrets/app"))
    if rng.random() < 0.15:
        ed = rng.choice(({}, {"sizeLimit": "1Gi"}, {"medium": "Memory", "sizeLimit": "256Mi"}))
        vname = rng.choice(("tmp", "cache", "scratch"))
        volumes.append({"emptyDir": ed, "name": vname})
        mounts.append((vname, f"/{vname}"))
    extra: dict[str, Any] = {}
    if replicas > 1 and rng.random() < 0.15:
        extra["topologySpreadConstraints"] = [
            {
                "labelSelector": {"matchLabels": {"app": name}},
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ]
    elif replicas > 1 and rng.random() < 0.1:
        extra["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": name}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                        "weight": 100,
                    }
                ]
            }
        }
    pc = rng.choices(("", "high-priority", "business-critical", "low-priority"), (70, 15, 5, 10))[0]
    w = new_workload(
        rng,
        "Deployment",
        ns,
        name,
        created,
        labels,
        annotations=annotations,
        volumes=volumes,
        priority_class=pc,
        replicas=replicas,
        extra_spec=extra,
        node_selector={"kubernetes.io/os": "linux"} if rng.random() < 0.3 else {},
        service_account=name if rng.random() < 0.4 else "default",
        security_context=rng.choice(({}, {}, {"fsGroup": 2000, "runAsNonRoot": True, "runAsUser": 1000})),
    )
    main = Container(
        "app" if rng.random() < 0.3 else name.rsplit("-", 1)[0],
        f"{REGISTRY}/{team}/{name}:{rng.randint(1, 4)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}",
        ports=(("http", rng.choice((8080, 8000, 3000, 9000, 5000))),),
        env=(("POD_NAME", "fieldRef:metadata.name"), ("LOG_LEVEL", rng.choice(("info", "warn", "debug")))),
        mounts=tuple(mounts),
        probes=rng.random() < 0.7,
    )
    sidecars = tuple(rng.sample(_SIDECARS, rng.choices((0, 1, 2), (80, 16, 4))[0]))
    init = rng.choices(("", "wait-for-deps", "migrate", "native-sidecar"), (80, 10, 7, 3))[0]
    return _Draft(
        w, rng.lognormvariate(0, 0.9), _qos_choice(rng), _mem_ratio(rng), rng.random() < 0.1, sidecars, init, main
    )


def _stateful_draft(rng: random.Random, ns: str, name: str, base: str, image: str, port: int, replicas: int) -> _Draft:
    created = NOW - min(int(rng.expovariate(1 / (120 * DAY))), 700 * DAY) - rng.randrange(DAY)
    w = new_workload(
        rng,
        "StatefulSet",
        ns,
        name,
        created,
        {"app.kubernetes.io/name": base, "app.kubernetes.io/instance": name},
        claim_templates=("data",),
        replicas=replicas,
        service=f"{name}-headless",
        priority_class=rng.choices(("", "high-priority", "business-critical"), (50, 35, 15))[0],
        security_context={"fsGroup": 1001, "runAsUser": 1001},
        grace=rng.choice((30, 60, 120)),
    )
    main = Container(base, image, ports=((base[:15], port),), env=(("POD_NAME", "fieldRef:metadata.name"),))
    return _Draft(
        w,
        2.5 * rng.lognormvariate(0, 0.7),
        rng.choice(("Burstable", "Burstable", "Guaranteed")),
        rng.choice((2048, 4096, 4096, 8192)),
        False,
        (),
        "",
        main,
    )


def _job_draft(rng: random.Random, ns: str, name: str, cron: str, scheduled: int) -> _Draft:
    team = ns.split("-", 1)[0]
    w = new_workload(
        rng,
        "Job",
        ns,
        name,
        scheduled,
        restart_policy=rng.choice(("Never", "OnFailure")),
        priority_class=rng.choices(("", "low-priority"), (40, 60))[0],
    )
    main = Container(
        "job",
        f"{REGISTRY}/{team}/{cron}:{rng.randint(1, 9)}.{rng.randint(0, 30)}.0",
        args=("--run", cron.rsplit("-", 1)[-1]),
    )
    return _Draft(
        w,
        rng.lognormvariate(0, 0.8),
        rng.choice(("Burstable", "Burstable", "BestEffort")),
        _mem_ratio(rng),
        False,
        (),
        "",
        main,
    )


def _bare_draft(rng: random.Random, ns: str, name: str, image: str, created: int) -> _Draft:
    w = new_workload(rng, "Bare", ns, name, created, {"run": name})
    main = Container(name, image, command=("sleep", "infinity"))
    return _Draft(w, 0.3, rng.choice(("BestEffort", "BestEffort", "Burstable")), 1024, False, (), "", main)


def _gpu_deployment(rng: random.Random, ns: str, name: str, replicas: int) -> Workload:
    team = ns.split("-", 1)[0]
    cpu, mem = rng.choice((("1500m", "6Gi"), ("2", "8Gi"), ("2500m", "10Gi")))
    w = new_workload(
        rng,
        "Deployment",
        ns,
        name,
        NOW - rng.randint(2, 90) * DAY,
        {"team": team},
        replicas=replicas,
        containers=[
            Container(
                "model-server",
                f"{REGISTRY}/{team}/{name}:{rng.randint(1, 3)}.{rng.randint(0, 9)}.0",
                {"cpu": cpu, "memory": mem, "nvidia.com/gpu": "1"},
                {"memory": mem, "nvidia.com/gpu": "1"},
                ports=(("grpc", 8001), ("http", 8000)),
                probes=True,
            )
        ],
        volumes=[{"emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}, "name": "dshm"}],
        node_selector={"nvidia.com/gpu.present": "true"},
        tolerations=[
            {"effect": "NoSchedule", "key": "dedicated", "operator": "Equal", "value": "gpu"},
            {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
        ],
        priority_class="high-priority",
    )
    w.containers[0].mounts = (("dshm", "/dev/shm"),)
    return w.finish()


def _huge_deployment(rng: random.Random, ns: str, name: str, replicas: int) -> Workload:
    team = ns.split("-", 1)[0]
    cpu, mem = rng.choice((("24", "96Gi"), ("32", "64Gi"), ("20", "160Gi")))
    return new_workload(
        rng,
        "Deployment",
        ns,
        name,
        NOW - rng.randint(600, 3 * DAY),
        {"team": team},
        replicas=replicas,
        containers=[
            Container(
                "worker",
                f"{REGISTRY}/{team}/{name}:0.{rng.randint(1, 9)}.0",
                {"cpu": cpu, "memory": mem},
                {"memory": mem},
            )
        ],
    ).finish()


def _unschedulable_message(w: Workload, nodes: Sequence[NodePlan], tiers: dict[str, _Tier]) -> str:
    total = len(nodes)
    parts: list[str] = []
    n_cp, n_gpu, n_cordon = (len(tiers[t].nodes) for t in ("control-plane", "gpu", "cordoned"))
    rest = total - n_cordon
    if n_cp and w.namespace != "kube-system":
        parts.append(f"{n_cp} node(s) had untolerated taint {{node-role.kubernetes.io/control-plane: }}")
        rest -= n_cp
    if n_gpu and not w.gpu:
        parts.append(f"{n_gpu} node(s) had untolerated taint {{dedicated: gpu}}")
        rest -= n_gpu
    if n_cordon:
        parts.append(f"{n_cordon} node(s) were unschedulable")
    if rest > 0:
        parts.append(f"{rest} Insufficient cpu")
    return (
        f"0/{total} nodes are available: {', '.join(parts)}. preemption: 0/{total} nodes are available: "
        f"{max(rest, 0)} No preemption victims found for incoming pod, {total - max(rest, 0)} Preemption is not "
        "helpful for scheduling."
    )


def _qos_choice(rng: random.Random) -> str:
    return rng.choices(("Burstable", "Guaranteed", "BestEffort"), (79, 15, 6))[0]


def _mem_ratio(rng: random.Random) -> int:
    return rng.choices((256, 512, 1024, 2048, 3072, 4096), (8, 20, 30, 25, 12, 5))[0]


def _realize(d: _Draft, scale: float) -> None:
    """Turn a draft's relative size into containers with requests/limits people write."""
    w, main = d.w, d.main
    total = d.u * scale
    side_cpu = _snap(max(5.0, 0.2 * total / len(d.sidecars)), _CPU_LADDER) if d.sidecars else 0
    cpu = min(_snap(max(5.0, total - side_cpu * len(d.sidecars)), _CPU_LADDER), 4000)
    mem_ladder = _MEM_DECIMAL if d.decimal else _MEM_LADDER
    mem = _snap(max(32 * MI, cpu / 1000 * d.ratio * MI), mem_ladder)

    def res(c: int, m: int, mult_c: float | None, mult_m: float) -> tuple[dict[str, str], dict[str, str]]:
        if d.qos == "BestEffort":
            return {}, {}
        req = {"cpu": fmt_cpu(c), "memory": fmt_mem(m, d.decimal)}
        if d.qos == "Guaranteed":
            return req, dict(req)
        lim = {"memory": fmt_mem(_snap(m * mult_m, mem_ladder), d.decimal)}
        if mult_c:
            lim["cpu"] = fmt_cpu(_snap(c * mult_c, (*_CPU_LADDER, 6000, 8000)))
        return req, lim

    mult_c = (None, None, 2.0, 4.0)[int(d.u * 1000) % 4]
    mult_m = (1.0, 1.5, 2.0)[int(d.u * 10000) % 3]
    main.requests, main.limits = res(cpu, mem, mult_c, mult_m)
    w.containers = [main]
    for sname, simage, sport in d.sidecars:
        smem = _snap(max(32 * MI, side_cpu / 1000 * 1024 * MI), _MEM_LADDER)
        sreq, slim = res(side_cpu, smem, 2.0 if mult_c else None, 2.0)
        if d.decimal and sreq:  # sidecars come from their own charts: binary units
            sreq["memory"] = fmt_mem(smem)
            slim = {**slim, "memory": fmt_mem(smem if d.qos == "Guaranteed" else smem * 2)}
        w.containers.append(Container(sname, simage, sreq, slim, ports=(("metrics", sport),)))
    w.init_containers = []
    if d.init:
        icpu, imem = min(cpu, 50), min(mem, _snap(64 * MI, mem_ladder))  # on the ladder: limit >= request
        ireq, ilim = res(icpu, imem, 1.0 if mult_c else None, 1.0)
        if d.init == "native-sidecar":
            w.init_containers.append(
                Container(
                    "cloud-sql-proxy",
                    "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.13.0",
                    ireq,
                    ilim,
                    restart_policy="Always",
                )
            )
        elif d.init == "migrate":
            w.init_containers.append(Container("migrate", main.image, ireq, ilim, args=("migrate", "--up")))
        else:
            w.init_containers.append(
                Container(
                    "wait-for-deps",
                    "docker.io/library/busybox:1.37",
                    ireq,
                    ilim,
                    command=("sh", "-c", "until nc -z db 5432; do sleep 2; done"),
                )
            )
    w.finish()


