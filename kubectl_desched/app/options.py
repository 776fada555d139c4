"""What a command was asked to do, in typed groups: cluster access, scope, acting (and how its evictor works),
output. cli/groups.py builds each from its own flags; app reads them. Nothing here parses text."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from kubectl_desched.evictors.choose import DEFAULT_TIMEOUT
from kubectl_desched.kube.overrides import ConnectionFlags

if TYPE_CHECKING:  # the kubernetes client loads with kube.config: only for a command that connects
    from kubectl_desched.evictors.migration.options import MigrationOptions
    from kubectl_desched.kube.config import KubeOptions



@dataclass(frozen=True)
class PrometheusAccess:
    """How a Prometheus query (LowNodeUtilization's metricsUtilization) is asked: --prometheus-url (else the
    policy's metricsProviders url), a bearer token file, a CA file, or no verification."""

    url: str | None = None
    token_file: str | None = None
    ca_file: str | None = None
    insecure_skip_tls_verify: bool = False


@dataclass(frozen=True)
class ClusterAccess:
    """Where the state comes from: the kubeconfig's cluster, or snapshot files."""

    kubeconfig: str | None = None
    context: str | None = None
    cluster: str | None = None
    user: str | None = None
    namespace: str | None = None  # the first -n: kubectl's namespace override
    request_timeout: float = 0.0
    from_files: tuple[str, ...] = ()
    as_user: str | None = None
    as_groups: tuple[str, ...] = ()
    as_uid: str | None = None
    flags: ConnectionFlags = field(default_factory=ConnectionFlags)  # -s/--server, --token, TLS files and names
    chunk_size: int = 500
    verbosity: int = 0  # -v/--v
    now: datetime | None = None  # --now: the clock age rules read on a snapshot
    prometheus: PrometheusAccess = field(default_factory=PrometheusAccess)

    def kube(self) -> KubeOptions:
        from kubectl_desched.kube.config import KubeOptions
        return KubeOptions(self.kubeconfig, self.context, self.cluster, self.user, self.namespace,
                           self.request_timeout, self.as_user, self.as_groups, self.as_uid, self.flags,
                           self.chunk_size, self.verbosity)


@dataclass(frozen=True)
class ScopeOptions:
    """Which pods may be candidates and which nodes are considered; names are split and checked."""

    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = False
    exclude_namespaces: tuple[str, ...] = ()
    selector: str | None = None
    field_selector: str | None = None
    nodes: tuple[str, ...] = ()
    node_selector: str | None = None


@dataclass(frozen=True)
class ActOptions:
    """Whether and how the confirmed candidates are evicted. The explain commands act on nothing: defaults."""

    yes: bool = False
    dry_run: str = "none"  # none, client, server
    grace_period: int | None = None  # None: the pod's own
    max_in_flight: int = 1
    interval: float = 0.0
    wait_ready: bool = False
    timeout: float = DEFAULT_TIMEOUT  # per pod: retries on a PodDisruptionBudget; per wait: --wait-ready
    record_events: bool = False
    report: str | None = None
    evictor: str = "eviction"  # a key of evictors/choose.py's EVICTORS: --evictor
    migration: MigrationOptions | None = None  # --evictor migration's settings
    wait_landing: bool = True  # after evicting, wait for the replacements to be bound and show where
    rounds: int = 1  # plan, confirm, evict, wait, read again: at most this many times


@dataclass(frozen=True)
class OutputOptions:
    """-o and whether a long plan goes through a pager on a terminal (--no-pager, as git)."""

    format: str = "table"  # table, wide, json, yaml, name, jsonpath=..., jsonpath-as-json=..., custom-columns=...
    pager: bool = True
    no_headers: bool = False
    sort_by: str | None = None  # a JSONPath over each candidate's document
    show_labels: bool = False
    bars: bool | None = None  # the nodes table's bars: --bars, --no-bars; None: on a terminal where they fit


@dataclass(frozen=True)
class Options:
    access: ClusterAccess = field(default_factory=ClusterAccess)
    scope: ScopeOptions = field(default_factory=ScopeOptions)
    acting: ActOptions = field(default_factory=ActOptions)
    output: str = "table"
    pager: bool = False  # only the commands that print a plan turn it on
    view: OutputOptions = field(default_factory=OutputOptions)  # the rest of the output group
