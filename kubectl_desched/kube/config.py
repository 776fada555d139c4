"""Build an API client from the user's kubeconfig with kubectl's rules.

kubectl's precedence: --kubeconfig (one file, must exist), else every file in KUBECONFIG (missing ones
skipped; for each map entry and for current-context the first file that sets it wins), else
~/.kube/config, else the in-cluster service account. --context, --cluster and --user override the
current context's parts. Auth (tokens, client certs, exec plugins, auth providers) is the kubernetes
client's."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from kubernetes import client as k8s_client
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader
from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

from kubectl_desched.durations import parse_duration as parse_duration
from kubectl_desched.errors import DeschedError, UsageError

_OVERRIDE_CONTEXT = "kubectl-desched/override"
_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
@dataclass
class KubeOptions:
    kubeconfig: str | None = None
    context: str | None = None
    cluster: str | None = None
    user: str | None = None
    namespace: str | None = None
    request_timeout: float = 0.0


@dataclass
class Connection:
    api: k8s_client.ApiClient
    server: str
    context: str
    namespace: str
    timeout: float | tuple[float, float] | None = field(default=None)


def _kubeconfig_paths(opts: KubeOptions) -> tuple[str, list[str]]:
    """The path string for the client's merger and the files that exist, in kubectl's order."""
    if opts.kubeconfig:
        path = os.path.expanduser(opts.kubeconfig)
        if not os.path.isfile(path):
            raise UsageError(f"kubeconfig {opts.kubeconfig}: no such file")
        return path, [path]
    env = os.environ.get("KUBECONFIG")
    if env:
        paths = [os.path.expanduser(p) for p in env.split(os.pathsep) if p]
    else:
        paths = [os.path.expanduser("~/.kube/config")]
    existing = [p for p in paths if os.path.isfile(p)]
    return os.pathsep.join(existing), existing


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.isfile(f"{_SA_DIR}/token")


def _merged(opts: KubeOptions) -> tuple[KubeConfigMerger, str] | None:
    path_string, existing = _kubeconfig_paths(opts)
    if not existing:
        return None
    try:
        merger = KubeConfigMerger(path_string)
    except (OSError, ValueError, TypeError, AttributeError) as e:
        raise UsageError(f"invalid kubeconfig {path_string}: {e}") from None
    except Exception as e:  # yaml errors carry line and column
        raise UsageError(f"invalid kubeconfig {path_string}: {str(e).splitlines()[0]}") from None
    if merger.config is None or not isinstance(merger.config.value, dict):
        raise UsageError(f"invalid kubeconfig {path_string}: not a kubeconfig")
    for item in ("clusters", "contexts", "users"):
        if not isinstance(merger.config.value.get(item), list):
            raise UsageError(f"invalid kubeconfig {path_string}: {item} must be a list")
        for entry in merger.config.value[item]:  # the merger turns a map into a list of its keys
            value = getattr(entry, "value", entry)
            if not isinstance(value, dict) or not isinstance(value.get("name"), str):
                raise UsageError(f"invalid kubeconfig {path_string}: {item} must be a list of objects with a name")
    current = ""
    for p in merger.paths:  # kubectl: the first file that sets current-context wins
        value = (merger.config_files.get(p) or {}).get("current-context")
        if value:
            current = value
            break
    return merger, opts.context or current


def _context_entry(merger: KubeConfigMerger, name: str) -> dict:
    for ctx in merger.config.value["contexts"]:
        value = ctx.value if hasattr(ctx, "value") else ctx
        if isinstance(value, dict) and value.get("name") == name:
            return value.get("context") or {}
    raise UsageError(f'context "{name}" does not exist in the kubeconfig')


def _named(merger: KubeConfigMerger, kind: str, name: str | None) -> dict | None:
    for item in merger.config.value[kind]:
        value = getattr(item, "value", item)
        if isinstance(value, dict) and value.get("name") == name:
            return value
    return None


@contextlib.contextmanager
def _client_log() -> Iterator[list[str]]:
    """Collect what the kubernetes client logs while loading credentials, instead of printing it."""
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(" ".join(record.getMessage().split())[:300])

    root = logging.getLogger()
    handler = Collect(logging.WARNING)
    root.addHandler(handler)
    try:
        yield records
    finally:
        root.removeHandler(handler)


def context_namespace(opts: KubeOptions) -> str:
    """-n, else the current context's namespace, else "default"; reads no credentials."""
    if opts.namespace:
        return opts.namespace
    merged = _merged(opts)
    if merged is None:
        if _in_cluster():
            with open(f"{_SA_DIR}/namespace") as f:
                return f.read().strip() or "default"
        return "default"
    merger, ctx_name = merged
    if not ctx_name:
        return "default"
    return _context_entry(merger, ctx_name).get("namespace") or "default"


def _timeout(opts: KubeOptions) -> float | tuple[float, float] | None:
    if opts.request_timeout > 0:
        return (opts.request_timeout, opts.request_timeout)
    return (30.0, None)  # bounded connect, unbounded read, as kubectl without --request-timeout


def connect(opts: KubeOptions) -> Connection:
    cfg = k8s_client.Configuration()
    merged = _merged(opts)
    if merged is None:
        if not _in_cluster():
            where = opts.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
            raise UsageError(f"no kubeconfig found at {where} and not running in a cluster; pass --kubeconfig")
        try:
            # the same directory _in_cluster() checked, not the client's own copy of the path
            InClusterConfigLoader(token_filename=f"{_SA_DIR}/token",
                                  cert_filename=f"{_SA_DIR}/ca.crt").load_and_set(cfg)
        except ConfigException as e:
            raise DeschedError(f"in-cluster configuration: {e}") from None
        with open(f"{_SA_DIR}/namespace") as f:
            namespace = opts.namespace or f.read().strip() or "default"
        return Connection(k8s_client.ApiClient(cfg), cfg.host, "(in-cluster)", namespace, _timeout(opts))

    merger, ctx_name = merged
    if not ctx_name:
        raise UsageError("the kubeconfig has no current-context; pass --context")
    entry = dict(_context_entry(merger, ctx_name))
    if opts.cluster:
        entry["cluster"] = opts.cluster
    if opts.user:
        entry["user"] = opts.user
    contexts = merger.config.value["contexts"]
    contexts[:] = [c for c in contexts if (getattr(c, "value", c) or {}).get("name") != _OVERRIDE_CONTEXT]
    contexts.append({"name": _OVERRIDE_CONTEXT, "context": entry})
    for kind, key in (("clusters", "cluster"), ("users", "user")):
        name = entry.get(key)
        if name and not any((getattr(c, "value", c) or {}).get("name") == name for c in merger.config.value[kind]):
            if key == "user" and not opts.user:
                continue  # kubectl tolerates a context naming a missing user: no credentials
            raise UsageError(f'{key} "{name}" does not exist in the kubeconfig')
    if not entry.get("cluster"):
        raise UsageError(f'context "{ctx_name}" names no cluster')
    try:
        loader = KubeConfigLoader(config_dict=merger.config, active_context=_OVERRIDE_CONTEXT, config_base_path=None)
        with _client_log() as logged:
            loader.load_and_set(cfg)
        user = _named(merger, "users", entry.get("user"))
        if user and "exec" in (user.get("user") or {}) and not (cfg.api_key or cfg.cert_file):
            # The client only logs a failed exec plugin and goes on without credentials; kubectl stops.
            why = logged[0] if logged else "it returned no token or client certificate"
            raise UsageError(f'kubeconfig user "{entry.get("user")}": exec credential plugin failed: {why}')
    except ConfigException as e:
        raise UsageError(f"kubeconfig context {ctx_name}: {e}") from None
    except (OSError, KeyError, TypeError, ValueError, AttributeError) as e:  # e.g. a server that is not a string
        raise UsageError(f"kubeconfig context {ctx_name}: cannot load credentials: {e}") from None
    if not cfg.host:
        raise UsageError(f'cluster of context "{ctx_name}" has no server')
    namespace = opts.namespace or entry.get("namespace") or "default"
    return Connection(k8s_client.ApiClient(cfg), cfg.host, ctx_name, namespace, _timeout(opts))
