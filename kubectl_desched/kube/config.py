"""Build an API client from the user's kubeconfig with kubectl's rules.

kubectl's precedence: --kubeconfig (one file, must exist), else every file in KUBECONFIG (missing ones
skipped; for each map entry and for current-context the first file that sets it wins), else
~/.kube/config, else the in-cluster service account. --context, --cluster and --user override the
current context's parts. Auth (tokens, client certs, exec plugins, auth providers) is the kubernetes
client's; reading and merging the files is ours, bounded like every input (safeload.py), so that no error names an
entry by its content: the client's merger names entries by their repr, token and all. Every credential the files,
the flags and the client hold is handed to sanitize.hold, which takes them out of every text shown."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubectl_desched import __version__, safeload
from kubectl_desched.errors import DeschedError, UsageError
from kubectl_desched.kube import execplugin, httplog, overrides, serverurl
from kubectl_desched.model.durations import parse_duration as parse_duration
from kubectl_desched.model.shapes import printable
from kubectl_desched.sanitize import hold, mask_url, redact, short

if TYPE_CHECKING:  # the client is imported where a connection is built: reading the namespace needs none of it
    from kubernetes import client as k8s_client

_OVERRIDE_CONTEXT = "kubectl-desched/override"
_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# urllib3's (connect, read) seconds; a read of None waits as long as the server takes.
Timeout = float | tuple[float, float | None] | None

@dataclass
class KubeOptions:
    kubeconfig: str | None = None
    context: str | None = None
    cluster: str | None = None
    user: str | None = None
    namespace: str | None = None
    request_timeout: float = 0.0
    as_user: str | None = None  # kubectl's --as, --as-group, --as-uid: impersonation headers on every request
    as_groups: tuple[str, ...] = ()
    as_uid: str | None = None
    flags: overrides.ConnectionFlags = field(default_factory=overrides.ConnectionFlags)
    chunk_size: int = 500  # kubectl's --chunk-size: pods per LIST page; 0 reads each list in one answer
    verbosity: int = 0  # kubectl's -v: request logging (httplog)


def api_client(cfg: k8s_client.Configuration, opts: KubeOptions) -> k8s_client.ApiClient:
    """The client every request goes through. It sends kubectl's impersonation headers, so the server acts (and
    authorizes, the RBAC preflight included) as that identity: one Impersonate-Group header per group, as the
    apiserver reads them (the client's default headers hold one value per name). It logs what -v asks for."""
    import urllib3
    from kubernetes import client as k8s_client
    from urllib3 import HTTPHeaderDict

    if (opts.as_groups or opts.as_uid) and not opts.as_user:
        raise UsageError("--as-group and --as-uid require --as")
    groups = tuple(_utf8(g) for g in opts.as_groups)

    class KubectlClient(k8s_client.ApiClient):
        def call_api(self, method: str, url: str, header_params: Any = None, *args: Any, **kw: Any) -> Any:
            headers = HTTPHeaderDict(header_params or {})
            for group in groups:  # urllib3 sends each added value as its own header line
                headers.add("Impersonate-Group", group)
            if not httplog.enabled(6):
                return super().call_api(method, url, headers, *args, **kw)
            if httplog.enabled(7):
                httplog.request(method, url, headers.items())
            start = time.monotonic()
            try:
                resp = super().call_api(method, url, headers, *args, **kw)
            except Exception as e:
                httplog.failure(method, url, e, time.monotonic() - start)
                raise
            httplog.response(method, url, resp.status, resp.reason or "", time.monotonic() - start)
            return resp

    api = KubectlClient(cfg)
    if not cfg.verify_ssl and cfg.host.startswith("https:"):
        # urllib3 would warn at each new host in a block of several lines; once, in one line, is enough
        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
        sys.stderr.write("warning: the server's certificate is not verified (insecure-skip-tls-verify)\n")
    # The server's audit log and metrics name the client: ours, not the generated client's "OpenAPI-Generator".
    api.user_agent = f"kubectl-desched/{__version__} (python)"
    if opts.as_user:
        api.set_default_header("Impersonate-User", _utf8(opts.as_user))
        if opts.as_uid:
            api.set_default_header("Impersonate-Uid", _utf8(opts.as_uid))
    return api


def _utf8(value: str) -> str:
    """A header value that the HTTP client, which encodes header values as latin-1, sends as UTF-8 bytes: what
    kubectl sends for `--as jürgen`, and the apiserver reads as UTF-8."""
    return value.encode().decode("latin-1")


def _check_impersonation(opts: KubeOptions) -> None:
    for flag, values in (("--as", [opts.as_user]), ("--as-group", opts.as_groups), ("--as-uid", [opts.as_uid])):
        for value in values:
            if value is not None and (why := overrides.header_problem(value)):
                raise UsageError(f"{flag}: {why}")


@dataclass
class Connection:
    api: k8s_client.ApiClient
    server: str  # as shown (errors, the Source line, the report): its credentials masked (sanitize.mask_url)
    context: str
    namespace: str
    timeout: Timeout = field(default=None)
    chunk_size: int = 500
    compress: bool = True  # ask for gzip; off with --disable-compression or the cluster's disable-compression
    protobuf: bool = False  # ask for pods and nodes as protobuf (--protobuf)


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


def in_cluster() -> bool:
    """Whether the tool runs in a pod (a service account and the API server's address are there)."""
    return _in_cluster()


_ENTRIES = {"clusters": "cluster", "contexts": "context", "users": "user"}
# A string under a key with one of these in its name is a credential wherever it stands in the file.
_SECRET_KEY_PARTS = ("token", "password", "passwd", "secret", "key", "credential", "cookie")
# Under a user entry every string is taken for a credential (exec env values, auth-provider config) but these.
_PLAIN_USER_KEYS = {"name", "username", "apiVersion", "command", "installHint", "interactiveMode", "cmd-path",
                    "client-certificate", "as", "as-uid", "provideClusterInfo"}


@dataclass
class _Entry:
    """One clusters/contexts/users entry, named by its file, list and name only (a ConfigNode's parts)."""

    label: str
    value: dict
    path: str


@dataclass
class _Merged:
    """The files merged as the client's KubeConfigMerger does: `config` holds the first file's top-level keys and,
    under clusters/contexts/users, the winning _Entry of each name."""

    config: dict[str, Any]
    paths: list[str]
    config_files: dict[str, dict]
    secrets: set[str]


def _secrets(doc: dict) -> set[str]:
    found: set[str] = set()
    todo: list[tuple[object, bool]] = [(doc, False)]
    while todo:
        value, in_user = todo.pop()
        if isinstance(value, list):
            todo.extend((v, in_user) for v in value)
        elif isinstance(value, dict):
            for k, v in value.items():
                key = str(k).lower()
                user = in_user or (k == "user" and isinstance(v, dict))
                if isinstance(v, str):
                    if any(part in key for part in _SECRET_KEY_PARTS) or (in_user and k not in _PLAIN_USER_KEYS):
                        found.add(v)
                else:
                    todo.append((v, user))
    return found


def _read_kubeconfig(path: str) -> tuple[dict, set[str]]:
    where = f"invalid kubeconfig {path}"
    try:
        doc = safeload.yaml_value(safeload.read_file(path), f"kubeconfig {path}", safeload.ConfigLoader)
    except safeload.InputError as e:
        raise UsageError(f"{where}: {str(e).removeprefix(f'kubeconfig {path}: ')}") from None
    if doc is None:
        raise UsageError(f"{where}: the file is empty")
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: not a kubeconfig")
    secrets = _secrets(doc)
    for item, inner in _ENTRIES.items():
        entries = doc.get(item)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise UsageError(f"{where}: {item} must be a list")
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise UsageError(f"{where}: {item} must be a list of objects with a name")
            if entry.get(inner) is not None and not isinstance(entry[inner], dict):
                raise UsageError(f"{where}: {item}[{i}].{inner} must be an object")
    if doc.get("current-context") is not None and not isinstance(doc["current-context"], str):
        raise UsageError(f"{where}: current-context must be a string")
    return doc, secrets


def _merged(opts: KubeOptions) -> tuple[_Merged, str] | None:
    _path_string, existing = _kubeconfig_paths(opts)
    if not existing:
        return None
    merged: _Merged | None = None
    for path in existing:
        doc, secrets = _read_kubeconfig(path)
        if merged is None:
            base = {k: v for k, v in doc.items() if k not in _ENTRIES}
            base.update({item: [] for item in _ENTRIES})
            merged = _Merged(base, [], {}, set())
        merged.paths.append(path)
        merged.config_files[path] = doc
        merged.secrets |= secrets
        for item in _ENTRIES:  # kubectl: for each name the first file that has it wins
            have = {e.value["name"] for e in merged.config[item]}
            for entry in doc.get(item) or ():
                if entry["name"] not in have:
                    have.add(entry["name"])
                    name = f"kubeconfig {path}: {item}[name={printable(entry['name'])}]"
                    merged.config[item].append(_Entry(name, entry, path))
    assert merged is not None
    current = ""
    for p in merged.paths:  # kubectl: the first file that sets current-context wins
        value = merged.config_files[p].get("current-context")
        if value:
            current = value
            break
    return merged, opts.context or current


def kubeconfig_names(kubeconfig: str | None, section: str) -> list[str]:
    """The names under `contexts`, `clusters` or `users` across the kubeconfig files kubectl would read (for
    completion; an unreadable file gives none rather than an error)."""
    _path_string, existing = _kubeconfig_paths(KubeOptions(kubeconfig))
    names: list[str] = []
    for path in existing:
        try:
            doc, _secrets = _read_kubeconfig(path)
        except Exception:
            continue
        names += [e["name"] for e in doc.get(section) or () if isinstance(e, dict) and e.get("name")]
    return list(dict.fromkeys(names))


def _context_entry(merger: _Merged, name: str) -> dict:
    for ctx in merger.config["contexts"]:
        value = getattr(ctx, "value", ctx)
        if isinstance(value, dict) and value.get("name") == name:
            entry = value.get("context") or {}
            for key in ("cluster", "user", "namespace"):
                if entry.get(key) is not None and not isinstance(entry[key], str):
                    raise UsageError(f'context "{printable(name)}": {key} must be a string')
            return entry
    raise UsageError(f'context "{printable(name)}" does not exist in the kubeconfig')


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


def _exec_bound(opts: KubeOptions) -> float:
    """How long an exec credential plugin may take: --request-timeout, else longer when the client hands the
    plugin the terminal (stdout is one) for a login than when nobody can answer it."""
    if opts.request_timeout > 0:
        return opts.request_timeout
    return execplugin.INTERACTIVE_BOUND if sys.stdout.isatty() else execplugin.DEFAULT_BOUND


def _timeout(opts: KubeOptions) -> Timeout:
    if opts.request_timeout > 0:
        return (opts.request_timeout, opts.request_timeout)
    return (30.0, None)  # bounded connect, unbounded read, as kubectl without --request-timeout


def connect(opts: KubeOptions) -> Connection:
    from kubernetes import client as k8s_client

    opts.flags.check()
    _check_impersonation(opts)
    httplog.set_verbosity(opts.verbosity)
    cfg = k8s_client.Configuration()
    merged = _merged(opts)
    if merged is None:
        if not opts.flags.server:
            if not _in_cluster():
                where = opts.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
                raise UsageError(f"no kubeconfig found at {where} and not running in a cluster; pass --kubeconfig")
            return _connect_in_cluster(opts, cfg)
        # kubectl needs no kubeconfig when the flags name the server
        merged = _Merged({item: [] for item in _ENTRIES}, ["(flags)"], {}, set()), ""
    merger, ctx_name = merged
    hold(*merger.secrets, opts.flags.token)
    try:
        return _connect(opts, cfg, merger, ctx_name)
    except DeschedError as e:  # the client's words may quote the files: no credential leaves here
        raise type(e)(short(redact(str(e)), 300)) from None


def _hold_credentials(cfg: k8s_client.Configuration, source: str) -> None:
    """Hand what the client authenticates with to sanitize.hold, so that no server's text can show it: the token or
    basic-auth header (from the kubeconfig, a token file, an exec plugin or an auth provider), the client key; and
    again after each refresh (an exec plugin's next token). A token file's line end is trimmed on the way, as
    client-go trims it: the client would put it in the header, which no header may hold; a line break inside, or
    a character that is not ASCII, is refused (`source` names where the token came from)."""
    for name, value in (cfg.api_key or {}).items():
        cfg.api_key[name] = value = value.strip()
        hold(value, value.partition(" ")[2])  # "Bearer TOKEN", "Basic BASE64"
        if why := overrides.token_problem(value):
            raise UsageError(f"{source} {why}")
    hold(cfg.password)
    if cfg.key_file:
        hold(*_key_material(cfg.key_file))
    if cfg.refresh_api_key_hook is not None and not isinstance(cfg.refresh_api_key_hook, _HoldRefreshed):
        cfg.refresh_api_key_hook = _HoldRefreshed(cfg.refresh_api_key_hook, source)


class _HoldRefreshed:
    """The client's refresh hook, then what it refreshed held (the hook may put its own back: wrapped again)."""

    def __init__(self, hook: Any, source: str) -> None:
        self.hook = hook
        self.source = source

    def __call__(self, cfg: k8s_client.Configuration) -> None:
        self.hook(cfg)
        _hold_credentials(cfg, self.source)


def _key_material(path: str) -> list[str]:
    """A client key file whole and each base64 line of it (a server could echo one)."""
    try:
        text = safeload.read_file(path).strip()
    except UsageError:
        return []
    return [text, *(line.strip() for line in text.splitlines() if len(line.strip()) >= 16 and "-----" not in line)]


def _connect_in_cluster(opts: KubeOptions, cfg: k8s_client.Configuration) -> Connection:
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    try:
        # the same directory _in_cluster() checked, not the client's own copy of the path
        InClusterConfigLoader(token_filename=f"{_SA_DIR}/token",
                              cert_filename=f"{_SA_DIR}/ca.crt").load_and_set(cfg)
    except ConfigException as e:
        raise DeschedError(f"in-cluster configuration: {e}") from None
    flags = opts.flags  # client-go lays the server, token and CA flags over the service account's
    if flags.token:
        cfg.api_key = {"BearerToken": f"Bearer {flags.token}"}
        cfg.refresh_api_key_hook = None
    if flags.certificate_authority or flags.insecure_skip_tls_verify:
        cfg.ssl_ca_cert = overrides.cluster({}, flags).get("certificate-authority")
        cfg.verify_ssl = not flags.insecure_skip_tls_verify
    _hold_credentials(cfg, "--token" if flags.token else "in-cluster configuration: the service account's token")
    with open(f"{_SA_DIR}/namespace") as f:
        namespace = opts.namespace or f.read().strip() or "default"
    return Connection(api_client(cfg, opts), mask_url(cfg.host), "(in-cluster)", namespace, _timeout(opts),
                      opts.chunk_size, not flags.disable_compression, flags.protobuf)


def _connect(opts: KubeOptions, cfg: k8s_client.Configuration, merger: _Merged, ctx_name: str) -> Connection:
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader

    flags = opts.flags
    if ctx_name:
        entry = dict(_context_entry(merger, ctx_name))
    elif flags.server:
        entry = {}
    else:
        raise UsageError("the kubeconfig has no current-context; pass --context")
    if opts.cluster:
        entry["cluster"] = opts.cluster
    if opts.user:
        entry["user"] = opts.user
    found: dict[str, _Entry | None] = {}
    for kind, key in (("clusters", "cluster"), ("users", "user")):
        name = entry.get(key)
        found[key] = next((e for e in merger.config[kind] if isinstance(e, _Entry) and e.value["name"] == name),
                          None) if name else None
        if name and found[key] is None:
            if key == "user" and not opts.user:
                continue  # kubectl tolerates a context naming a missing user: no credentials
            raise UsageError(f'{key} "{printable(name)}" does not exist in the kubeconfig')
    if not entry.get("cluster") and not flags.server:
        raise UsageError(f'context "{printable(ctx_name)}" names no cluster')
    where = f"kubeconfig context {printable(ctx_name)}" if ctx_name else "the connection flags"
    cluster_entry, user_entry = found["cluster"], found["user"]
    cluster = overrides.cluster((cluster_entry.value.get("cluster") or {}) if cluster_entry else {}, flags)
    user = overrides.user((user_entry.value.get("user") or {}) if user_entry else {}, flags)
    cluster_where = f'cluster "{printable(entry.get("cluster") or "")}"'
    compress = not overrides.compression_disabled(cluster, cluster_where)
    if cluster.get("server"):
        cluster["server"] = _server(cluster, user, cluster_where, bool(flags.server))

    def node(found_entry: _Entry | None, kind: str, value: dict) -> ConfigNode:
        label, path = (found_entry.label, found_entry.path) if found_entry else (f"{kind} from the flags", None)
        return ConfigNode(label, {"name": _OVERRIDE_CONTEXT, kind: value}, path)

    tree = {"contexts": [{"name": _OVERRIDE_CONTEXT,
                          "context": {"cluster": _OVERRIDE_CONTEXT, "user": _OVERRIDE_CONTEXT}}],
            "clusters": [node(cluster_entry, "cluster", cluster)], "users": [node(user_entry, "user", user)]}
    try:
        loader = KubeConfigLoader(config_dict=ConfigNode(where, tree, merger.paths[0]),
                                  active_context=_OVERRIDE_CONTEXT, config_base_path=None)
        if "exec" in user:
            execplugin.bound(_exec_bound(opts))
        with _client_log() as logged:
            loader.load_and_set(cfg)
        if "exec" in user and (late := execplugin.timed_out()) is not None:
            raise DeschedError(str(late))
        if "exec" in user and not (cfg.api_key or cfg.cert_file):
            # The client only logs a failed exec plugin and goes on without credentials; kubectl stops.
            why = logged[0] if logged else "it returned no token or client certificate"
            raise UsageError(f'kubeconfig user "{printable(entry.get("user") or "")}": exec credential plugin failed: '
                             f'{why}')
    except ConfigException as e:
        raise UsageError(f"{where}: {e}") from None
    except DeschedError:
        raise
    except Exception as e:
        raise UsageError(f"{where}: cannot load credentials: {e or type(e).__name__}") from None
    if not cfg.host:
        raise UsageError(f'cluster of context "{printable(ctx_name)}" has no server')
    _hold_credentials(cfg, _token_source(f'user "{printable(entry.get("user") or "")}"', user))
    namespace = opts.namespace or entry.get("namespace") or "default"
    server = mask_url(cfg.host)  # what is shown: the requests go to cfg.host
    return Connection(api_client(cfg, opts), server, ctx_name or server, namespace, _timeout(opts),
                      opts.chunk_size, compress, flags.protobuf)


# What authenticates in a header, which plain http would carry in clear.
_HEADER_CREDENTIALS = ("token", "tokenFile", "username", "password", "exec", "auth-provider")


def _server(cluster: dict, user: dict, cluster_where: str, from_flag: bool) -> str:
    """The cluster's server checked and, when it is a bare host[:port], given client-go's scheme: https when the
    cluster or user has TLS settings (a CA, insecure-skip-tls-verify, a client certificate), else http. Unlike
    client-go, a bare host is never taken for plain http with a credential to send: only an explicit http:// does."""
    where = "-s/--server" if from_flag else f"{cluster_where}: server"
    server = cluster["server"]
    if why := serverurl.problem(server):
        raise UsageError(f"{where}: {why}")
    tls = overrides.boolean(cluster, "insecure-skip-tls-verify", cluster_where) \
        or any(cluster.get(k) for k in ("certificate-authority", "certificate-authority-data")) \
        or any(user.get(k) for k in ("client-certificate", "client-certificate-data"))
    if not tls and not serverurl.has_scheme(server) and any(user.get(k) for k in _HEADER_CREDENTIALS):
        raise UsageError(f"{where}: no https:// and no TLS settings, so it would be plain http with the credentials "
                         "in clear (client-go's default): write https://, or http:// if you mean it")
    return serverurl.with_scheme(server, tls)


def _token_source(user_where: str, user: dict) -> str:
    """Where the client's token came from, to say which one cannot be sent."""
    if "token" in user:
        return f"{user_where}: token"
    if "tokenFile" in user:
        return f"{user_where}: the token in its tokenFile"
    if "exec" in user:
        return f"{user_where}: the exec credential plugin's token"
    return f"{user_where}: the token"
