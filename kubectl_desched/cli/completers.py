"""Shell completion of values: the options and arguments that name things (nodes, pods, namespaces, kubeconfig
contexts, plugins, files). The entry points (kubectl_complete-desched, `completion bash|zsh|fish`) are in
cli/completion.py, above the command line.

Live names cost one short request (2 s at most) and import the kubernetes client only then; completing commands
and flags imports neither. The names come as the server's Table of the objects (as `kubectl get` prints them),
without the objects: every node of 5,000 in 1.2 MB, where the objects' first page of 500 alone is 3 MB."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import click
from click.shell_completion import CompletionItem

COMPLETE_VAR = "_KUBECTL_DESCHED_COMPLETE"  # click's default would put the space of "kubectl desched" in it
PROG = "kubectl-desched"
# cobra's ShellCompDirective values, which kubectl reads after the candidates
DEFAULT, NO_FILE_COMP = 0, 4
TIMEOUT = 2.0


def _access(ctx: click.Context) -> Any:
    """A connection built from the flags typed so far (--kubeconfig, --context, ...), or None."""
    from kubectl_desched.kube.config import KubeOptions, connect

    root = ctx.find_root()
    p = {**root.params, **ctx.params}
    namespaces = p.get("namespaces") or ()
    opts = KubeOptions(p.get("kubeconfig"), p.get("context"), p.get("cluster"), p.get("user"),
                       namespaces[0] if namespaces else None, TIMEOUT)
    return connect(opts)


# A Table without the objects; a server that cannot make one answers the plain List
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _names(path: Callable[[Any, click.Context], str]) -> Callable[[click.Context, click.Parameter, str],
                                                                   list[CompletionItem]]:
    """A completer that lists object names from the API, all of them (not a first page); quiet (no candidates) on
    any failure."""
    def complete(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        try:
            from kubectl_desched.kube.live import request_json

            conn = _access(ctx)
            found = listed_names(request_json(conn, "GET", path(conn, ctx), query=[("includeObject", "None")],
                                              accept=TABLE, timeout=(TIMEOUT, TIMEOUT)))
        except Exception:  # completion must never print a traceback into the user's shell
            return []
        last = incomplete.rsplit(",", 1)
        prefix = last[0] + "," if len(last) == 2 else ""
        wanted = last[-1]
        return [CompletionItem(prefix + name) for name in sorted(found) if name.startswith(wanted)]
    return complete


def listed_names(doc: dict[str, Any]) -> list[str]:
    """The names in a Table (its column of format "name") or in a List (each item's metadata.name)."""
    if doc.get("kind") == "Table":
        columns = doc.get("columnDefinitions") or []
        at = next((i for i, c in enumerate(columns) if c.get("format") == "name"), 0)
        return [cells[at] for r in doc.get("rows") or ()
                if len(cells := r.get("cells") or ()) > at and isinstance(cells[at], str)]
    return [n for i in doc.get("items") or () if isinstance(n := (i.get("metadata") or {}).get("name"), str)]


def _pod_namespace(conn: Any, ctx: click.Context) -> str:
    namespaces = ctx.params.get("namespaces") or ()
    return namespaces[0] if namespaces else conn.namespace or "default"


nodes = _names(lambda _conn, _ctx: "/api/v1/nodes")
namespaces = _names(lambda _conn, _ctx: "/api/v1/namespaces")
pods = _names(lambda conn, ctx: f"/api/v1/namespaces/{quote(_pod_namespace(conn, ctx), safe='')}/pods")


def _kubeconfig_names(section: str) -> Callable[[click.Context, click.Parameter, str], list[CompletionItem]]:
    def complete(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
        try:
            from kubectl_desched.kube.config import kubeconfig_names

            found = kubeconfig_names(ctx.find_root().params.get("kubeconfig") or ctx.params.get("kubeconfig"),
                                     section)
        except Exception:
            return []
        return [CompletionItem(n) for n in sorted(found) if n.startswith(incomplete)]
    return complete


contexts, clusters, users = (_kubeconfig_names(s) for s in ("contexts", "clusters", "users"))


def plugin_names(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """What this command's --plugin runs: balance and deschedule their own point's plugins, explain either."""
    from kubectl_desched.plugins import full_registry

    points = {ctx.command.name} & {"balance", "deschedule"} or {"balance", "deschedule"}
    return [CompletionItem(s.name) for s in sorted(full_registry(), key=lambda s: s.name)
            if s.name.startswith(incomplete) and points & set(s.points)]


def output_formats(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from kubectl_desched.ui.formats import FORMATS, TEMPLATED

    return [CompletionItem(f) for f in (*FORMATS, *TEMPLATED) if f.startswith(incomplete)]


def files(_ctx: click.Context, _param: click.Parameter, _incomplete: str) -> list[CompletionItem]:
    return [CompletionItem("", type="file")]
