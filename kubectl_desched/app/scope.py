"""Which namespaces, pods and nodes a command covers, from -n/-A/-l/--field-selector/--nodes/--node-selector."""

from __future__ import annotations

from kubectl_desched.app.options import Options
from kubectl_desched.errors import UsageError
from kubectl_desched.framework.runner import Scope
from kubectl_desched.model import field_selectors as fieldselectors
from kubectl_desched.model.label_selectors import parse_selector


def default_namespace(opts: Options) -> str:
    """The context's namespace, as kubectl uses it; "default" for a snapshot when no kubeconfig can be read."""
    from kubectl_desched.kube.config import context_namespace
    try:
        return context_namespace(opts.access.kube())
    except UsageError:
        if not opts.access.from_files:
            raise
        return "default"  # a snapshot needs no kubeconfig


def resolve_scope(opts: Options, *, policy_given: bool) -> tuple[Scope, str]:
    given = opts.scope
    scope = Scope(excluded_namespaces=set(given.exclude_namespaces))
    if given.all_namespaces and given.namespaces:
        raise UsageError("-A/--all-namespaces and -n/--namespace cannot be used together")
    if given.namespaces:
        scope.namespaces = set(given.namespaces)
        text = "namespace " + ",".join(sorted(scope.namespaces))
    elif given.all_namespaces or policy_given:
        text = "all namespaces"
    else:
        ns = default_namespace(opts)
        scope.namespaces = {ns}
        text = f"namespace {ns} (-A for all namespaces)"
    if scope.excluded_namespaces:
        text += ", excluding " + ",".join(sorted(scope.excluded_namespaces))
    if given.selector:
        try:
            scope.pod_selector = parse_selector(given.selector)
        except ValueError as e:
            raise UsageError(f"-l/--selector: {e}") from None
        scope.pod_selector_text = given.selector
        text += f", pods -l {given.selector}"
    if given.field_selector:
        try:
            if opts.access.from_files:
                scope.pod_fields = fieldselectors.local_matcher(given.field_selector)
            else:
                fieldselectors.parse(given.field_selector)  # the server matches it once connected (app/loading)
        except ValueError as e:
            raise UsageError(f"--field-selector: {e}") from None
        scope.pod_fields_text = given.field_selector
        text += f", pods --field-selector {given.field_selector}"
    if given.nodes:
        scope.node_names = set(given.nodes)
        text += f", nodes {','.join(sorted(scope.node_names))}"
    if given.node_selector:
        try:
            scope.node_selector = parse_selector(given.node_selector)
        except ValueError as e:
            raise UsageError(f"--node-selector: {e}") from None
        text += f", nodes -l {given.node_selector}"
    return scope, text
