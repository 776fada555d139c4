"""The policy decoder: upstream's DeschedulerPolicy and Koordinator's DeschedulerConfiguration (both
descheduler/v1alpha2), decoded into profiles of configured plugins (the types: framework/policy.py; reading
files: app/policy_files.py). Errors name the file and the field path. Flags are turned into a DeschedulerPolicy
too, so one path validates everything."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jsonpatch

from kubectl_desched import safeload
from kubectl_desched.errors import ConfigError, UsageError
from kubectl_desched.framework.args import check_selector_fields, decode_args, field_hint
from kubectl_desched.framework.plan import Limits
from kubectl_desched.framework.policy import PluginUse, Policy, Profile, PrometheusProvider
from kubectl_desched.framework.registry import Registry
from kubectl_desched.model.label_selectors import Matcher, label_selector, parse_selector
from kubectl_desched.model.shapes import policy_value, yaml_hint
from kubectl_desched.sanitize import short

API_VERSION = "descheduler/v1alpha2"
UPSTREAM_KIND = "DeschedulerPolicy"
KOORD_KIND = "DeschedulerConfiguration"
DEFAULT_EVICTOR = "DefaultEvictor"
KOORD_DEFAULT_FILTER = "MigrationController"

# Top-level fields that configure the in-cluster daemon, not a one-shot run: accepted without a warning.
# Upstream's are v0.36.0's DeschedulerPolicy fields (pkg/api/v1alpha2/types.go); Koordinator's, v1.8.0's
# DeschedulerConfiguration (pkg/descheduler/apis/config/v1alpha2/types.go) with component-base's inline
# DebuggingConfiguration.
_DAEMON_FIELDS = {
    UPSTREAM_KIND: {"gracePeriodSeconds", "metricsCollector", "metricsProviders", "evictionFailureEventNotification"},
    KOORD_KIND: {"leaderElection", "clientConnection", "healthzBindAddress", "metricsBindAddress",
                 "deschedulingInterval", "dryRun", "enableProfiling", "enableContentionProfiling"},
}
# koord-descheduler decodes its whole configuration strictly, these daemon objects included (component-base v0.35).
_KOORD_OBJECT_FIELDS = {
    "leaderElection": ("leaderElect", "leaseDuration", "renewDeadline", "retryPeriod", "resourceLock",
                       "resourceName", "resourceNamespace"),
    "clientConnection": ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"),
}
# A profile's fields: Koordinator's; upstream's lack nodeSelector, which is read here for both kinds.
_PROFILE_FIELDS = ("name", "pluginConfig", "plugins", "nodeSelector")
_KOORD_POINTS = ("deschedule", "balance", "evict", "filter")
_PLUGIN_SET_FIELDS = ("enabled", "disabled")
_PLUGIN_CONFIG_FIELDS = ("name", "args")
# The plugins koord-descheduler decodes with its own strict scheme (MigrationControllerArgs, LowNodeLoadArgs and
# CustomPriorityArgs are registered there); it decodes its copies of upstream's plugins, DefaultEvictor included,
# with client-go's lenient scheme, which ignores unknown fields.
_KOORD_STRICT_ARGS = {"LowNodeLoad", "MigrationController", "CustomPriority"}


MAX_PATCH_OPERATIONS = 1000
MAX_PATCH_VALUES = 100_000  # values a patch may write, copies included: a few `copy` operations double a policy


def apply_patch(raw: dict[str, Any], patch_text: str) -> dict[str, Any]:
    """RFC 6902 JSON Patch, like `kubectl patch --type json -p` (the text: app/policy_files.patch_text reads `@FILE`).
    Operations apply one by one; each value one writes is measured, so no patch nests the policy past
    safeload.MAX_DEPTH or copies it into millions of values, and the result must still be an object."""
    text = patch_text
    try:
        ops = safeload.yaml_value(text, "--policy-patch")
    except safeload.InputError as e:
        raise UsageError(str(e).replace("--policy-patch: not valid YAML", "--policy-patch: not valid JSON/YAML", 1)) \
            from None
    if not isinstance(ops, list):
        raise UsageError("--policy-patch: a JSON Patch is a list of operations, e.g. "
                         '[{"op": "replace", "path": "/profiles/0/name", "value": "x"}]')
    if len(ops) > MAX_PATCH_OPERATIONS:
        raise UsageError(f"--policy-patch: more than {MAX_PATCH_OPERATIONS} operations")
    doc: Any = copy.deepcopy(raw)
    written = 0
    for op in ops:
        try:
            doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
            if isinstance(op, dict) and op.get("op") in ("add", "replace", "copy", "move"):
                pointer = jsonpatch.JsonPointer(str(op.get("path")))
                written += _measure(pointer.resolve(doc), len(pointer.parts), MAX_PATCH_VALUES - written)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError,
                ValueError, AttributeError, RecursionError) as e:
            raise UsageError(f"--policy-patch: {_patch_error(e)}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"--policy-patch: the patched policy must be an object, not {policy_value(doc)}")
    return doc


class _TooMuch(ValueError):
    pass


def _measure(value: Any, depth: int, budget: int) -> int:
    """How many values `value` holds (walked without recursion); _TooMuch past `budget` values or when, placed
    `depth` levels down, it nests deeper than safeload.MAX_DEPTH."""
    count = 0
    todo: list[tuple[Any, int]] = [(value, depth)]
    while todo:
        v, level = todo.pop()
        count += 1
        if count > budget:
            raise _TooMuch(f"the patch writes more than {MAX_PATCH_VALUES:,} values")
        if isinstance(v, dict | list):
            if level + 1 > safeload.MAX_DEPTH:
                raise _TooMuch(f"the patched policy would nest more than {safeload.MAX_DEPTH} levels deep")
            todo.extend((c, level + 1) for c in (v.values() if isinstance(v, dict) else v))
    return count


def _patch_error(e: Exception) -> str:
    if isinstance(e, RecursionError):
        return f"the patched policy would nest more than {safeload.MAX_DEPTH} levels deep"
    if isinstance(e, _TooMuch | jsonpatch.JsonPatchException | jsonpatch.JsonPointerException):
        return short(str(e), 200)
    return f"invalid operation: {short(str(e) or type(e).__name__, 200)}"


def _limit(raw: Mapping[str, Any], key: str, source: str) -> int | None:
    v = raw.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ConfigError(key, f"must be a whole number >= 0, not {policy_value(v)}", source)
    return v


def _names(value: Any, path: str, source: str, strict: bool = False) -> list[str]:
    """A plugin list: upstream writes names, Koordinator writes {name: ...} objects; accept both (strict: an
    object's other keys are unknown fields, as koord-descheduler decodes them)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(path, "must be a list of plugin names", source)
    out = []
    for i, item in enumerate(value):
        if strict and isinstance(item, Mapping):
            for key in item:
                if key != "name":
                    raise ConfigError(f"{path}[{i}].{key}", f"unknown field{field_hint(key, ['name'])}", source)
        name = item.get("name") if isinstance(item, Mapping) else item
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{path}[{i}]", "must be a plugin name", source)
        out.append(name)
    return out


def _selector_object(value: Any, path: str, source: str, strict: bool = False) -> Matcher | None:
    if value is None:
        return None
    try:
        if strict:
            check_selector_fields(value, path)
        return label_selector(value)
    except ConfigError as e:
        raise ConfigError(e.path, e.message, source) from None
    except ValueError as e:
        raise ConfigError(path, str(e), source) from None


class _Decoder:
    def __init__(self, raw: dict[str, Any], registry: Registry, source: str) -> None:
        self.raw, self.registry, self.source = raw, registry, source
        self.kind = raw.get("kind")
        self.warnings: list[str] = []

    def err(self, path: str, message: str) -> ConfigError:
        return ConfigError(path, message, self.source)

    @property
    def strict(self) -> bool:
        """koord-descheduler decodes its whole configuration strictly; upstream only the plugins' args, and
        ignores unknown fields elsewhere (here they are warned about)."""
        return self.kind == KOORD_KIND

    def _fields(self, value: Mapping[Any, Any], known: Any, path: str) -> None:
        for key in value:
            if key not in known:
                sub = f"{path}.{key}" if path else str(key)
                if self.strict:
                    raise self.err(sub, f"unknown field{field_hint(key, known)}")
                self.warnings.append(f"{self.source}: {sub}: unknown field, ignored")

    def decode(self) -> Policy:
        raw = self.raw
        api = raw.get("apiVersion")
        if self.kind not in (UPSTREAM_KIND, KOORD_KIND):
            raise self.err("kind", f"must be {UPSTREAM_KIND} or {KOORD_KIND}, not {policy_value(self.kind)}")
        if api != API_VERSION:
            hint = " (v1alpha1 strategies are not supported: convert the policy to profiles)" \
                if api == "descheduler/v1alpha1" else ""
            raise self.err("apiVersion", f"must be {API_VERSION}, not {policy_value(api)}{hint}")
        known = {"apiVersion", "kind", "profiles", "nodeSelector", "maxNoOfPodsToEvictPerNode",
                 "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal"} | _DAEMON_FIELDS[self.kind]
        self._fields(raw, known, "")
        if self.strict:
            for key, fields in _KOORD_OBJECT_FIELDS.items():
                if isinstance(raw.get(key), Mapping):
                    self._fields(raw[key], fields, key)
        limits = Limits(
            per_node=_limit(raw, "maxNoOfPodsToEvictPerNode", self.source),
            per_namespace=_limit(raw, "maxNoOfPodsToEvictPerNamespace", self.source),
            total=_limit(raw, "maxNoOfPodsToEvictTotal", self.source),
        )
        node_selector = self._top_node_selector(raw.get("nodeSelector"))
        profiles_raw = raw.get("profiles")
        if profiles_raw is None and self.kind == KOORD_KIND:
            profiles_raw = [{}]  # Koordinator defaults one profile
        if not isinstance(profiles_raw, list) or not profiles_raw:
            raise self.err("profiles", "at least one profile is required")
        profiles, evicts, seen = [], [], set()
        for i, p in enumerate(profiles_raw):
            prof, evict = self._profile(p, f"profiles[{i}]", len(profiles_raw))
            if prof.name in seen:
                raise self.err(f"profiles[{i}].name", f"duplicate profile name {prof.name!r}")
            seen.add(prof.name)
            profiles.append(prof)
            evicts += evict
        policy = Policy(self.kind, self.source, profiles, limits, node_selector, self.raw, self.warnings,
                        list(dict.fromkeys(evicts)))
        if self.kind == UPSTREAM_KIND:
            policy.prometheus = self._metrics_providers(raw.get("metricsProviders"), raw.get("metricsCollector"))
        return policy

    def _metrics_providers(self, value: Any, collector: Any) -> PrometheusProvider | None:
        """Upstream's checks of `metricsProviders` when the policy loads: each source once, KubernetesMetrics not
        beside an enabled metricsCollector, and a Prometheus entry with a url and, if it has an authToken, a
        secretReference naming both namespace and name."""
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.err("metricsProviders", f"must be a list, not {policy_value(value)}")
        seen: set[Any] = set()
        found: PrometheusProvider | None = None
        for i, entry in enumerate(value):
            path = f"metricsProviders[{i}]"
            if not isinstance(entry, Mapping):
                raise self.err(path, f"must be an object, not {policy_value(entry)}")
            source = entry.get("source")
            if not isinstance(source, str | type(None)):
                raise self.err(f"{path}.source", f"must be a string, not {policy_value(source)}")
            if source in seen:
                raise self.err(f"{path}.source", f"metrics provider {source!r} is already configured: each source "
                                                 "can be configured only once")
            seen.add(source)
            if source == "KubernetesMetrics" and isinstance(collector, Mapping) and collector.get("enabled") is True:
                raise self.err(f"{path}.source", "KubernetesMetrics may not be combined with metricsCollector.enabled")
            if source == "Prometheus":
                found = self._prometheus_provider(entry.get("prometheus"), f"{path}.prometheus")
        return found

    def _prometheus_provider(self, value: Any, path: str) -> PrometheusProvider:
        if value is None:
            raise self.err(path, "required when the source is Prometheus")
        if not isinstance(value, Mapping):
            raise self.err(path, f"must be an object, not {policy_value(value)}")
        url = value.get("url")
        if url is None or url == "":
            raise self.err(f"{path}.url", "required when the source is Prometheus")
        if not isinstance(url, str):
            raise self.err(f"{path}.url", f"must be a string, not {policy_value(url)}")
        token = value.get("authToken")
        if token is None:
            return PrometheusProvider(url, path=path)
        ref = token.get("secretReference") if isinstance(token, Mapping) else None
        if not isinstance(token, Mapping) or ref is None:
            raise self.err(f"{path}.authToken.secretReference", "required when authToken is set")
        if not isinstance(ref, Mapping) or not all(isinstance(ref.get(k), str) and ref.get(k)
                                                   for k in ("namespace", "name")):
            raise self.err(f"{path}.authToken.secretReference", "must set both namespace and name")
        return PrometheusProvider(url, ref["namespace"], ref["name"], path)

    def _top_node_selector(self, value: Any) -> Matcher | None:
        if value is None:
            return None
        if isinstance(value, str):
            try:
                return parse_selector(value)
            except ValueError as e:
                raise self.err("nodeSelector", str(e)) from None
        return _selector_object(value, "nodeSelector", self.source, self.strict)

    def _profile(self, p: Any, path: str, count: int) -> tuple[Profile, list[str]]:
        if not isinstance(p, Mapping):
            raise self.err(path, "must be an object")
        self._fields(p, _PROFILE_FIELDS, path)
        name = p.get("name")
        if name is not None and not isinstance(name, str):
            raise self.err(f"{path}.name", f"must be a string, not {policy_value(name)}{yaml_hint('a string', name)}")
        if not name:
            if self.kind == KOORD_KIND and count == 1:
                name = "koord-descheduler"
            else:
                raise self.err(f"{path}.name", "a profile needs a name")
        configs = self._plugin_configs(p.get("pluginConfig"), f"{path}.pluginConfig")
        plugins = p.get("plugins") or {}
        if not isinstance(plugins, Mapping):
            raise self.err(f"{path}.plugins", "must be an object")
        points: dict[str, list[str]] = {}
        for key, sets in plugins.items():
            point = {"preevictionfilter": "preEvictionFilter"}.get(key, key)
            if self.strict and point not in _KOORD_POINTS:
                raise self.err(f"{path}.plugins.{key}", f"unknown field{field_hint(key, _KOORD_POINTS)} "
                                                       f"(Koordinator's extension points: {', '.join(_KOORD_POINTS)})")
            if point not in ("deschedule", "balance", "filter", "preEvictionFilter", "evict", "sort"):
                self.warnings.append(f"{self.source}: {path}.plugins.{key}: unknown extension point, ignored")
                continue
            if not isinstance(sets, Mapping):
                raise self.err(f"{path}.plugins.{key}", "must be an object with enabled")
            self._fields(sets, _PLUGIN_SET_FIELDS, f"{path}.plugins.{key}")
            enabled = _names(sets.get("enabled"), f"{path}.plugins.{key}.enabled", self.source, self.strict)
            disabled = _names(sets.get("disabled"), f"{path}.plugins.{key}.disabled", self.source, self.strict)
            if self.kind == KOORD_KIND:
                enabled = self._koord_merge(point, enabled, disabled)
            elif disabled:
                self.warnings.append(f"{self.source}: {path}.plugins.{key}.disabled: ignored, as upstream does")
            points[point] = points.get(point, []) + enabled
        if self.kind == KOORD_KIND:
            for point in ("filter", "evict"):
                points.setdefault(point, [KOORD_DEFAULT_FILTER])
        else:
            for point in ("filter", "preEvictionFilter"):
                if DEFAULT_EVICTOR not in points.get(point, []):
                    points[point] = [DEFAULT_EVICTOR, *points.get(point, [])]
        if self.kind == KOORD_KIND:
            # Koordinator's filter plugin answers both Filter and PreEvictionFilter.
            points["preEvictionFilter"] = points.get("preEvictionFilter", []) + points.get("filter", [])
        prof = Profile(name, node_selector=_selector_object(p.get("nodeSelector"), f"{path}.nodeSelector",
                                                                 self.source, self.strict))
        for point, target in (("deschedule", prof.deschedule), ("balance", prof.balance),
                              ("filter", prof.filters), ("preEvictionFilter", prof.pre_eviction_filters)):
            for j, plugin in enumerate(dict.fromkeys(points.get(point, []))):
                target.append(self._use(plugin, point, configs, f"{path}.plugins.{point}.enabled[{j}]"))
        used = {u.spec.name for u in (*prof.deschedule, *prof.balance, *prof.filters, *prof.pre_eviction_filters)}
        for name, (args_raw, args_path) in configs.items():
            if name not in used:  # decoded all the same, as upstream decodes every pluginConfig entry
                self._args(self.registry.get(name), args_raw, args_path)
        return prof, [n for n in points.get("evict", []) if n]

    def _koord_merge(self, point: str, enabled: list[str], disabled: list[str]) -> list[str]:
        defaults = [KOORD_DEFAULT_FILTER] if point in ("filter", "evict") else []
        if "*" in disabled:
            defaults = []
        kept = [d for d in defaults if d not in disabled and d not in enabled]
        return kept + enabled

    def _plugin_configs(self, value: Any, path: str) -> dict[str, tuple[Any, str]]:
        if value is None:
            return {}
        if not isinstance(value, list):
            raise self.err(path, "must be a list of {name, args}")
        out: dict[str, tuple[Any, str]] = {}
        for j, pc in enumerate(value):
            p = f"{path}[{j}]"
            if isinstance(pc, Mapping):
                self._fields(pc, _PLUGIN_CONFIG_FIELDS, p)
            if not isinstance(pc, Mapping) or not isinstance(pc.get("name"), str):
                raise self.err(p, "needs a name")
            name = pc["name"]
            if name not in self.registry:
                raise self._unknown(f"{p}.name", name, f"plugin {name} is not registered")
            if name in out:
                raise self.err(f"{p}.name", f"plugin {name} is configured twice")
            out[name] = (pc.get("args"), f"{p}.args")
        return out

    def _unknown(self, path: str, name: str, message: str) -> ConfigError:
        """An installed plugin that failed to load says why; any other unknown name lists the known ones."""
        if self.registry.is_broken(name):
            return self.err(path, self.registry.why_unknown(name))
        return self.err(path, f"{message}; known: {', '.join(s.name for s in self.registry)}")

    def _use(self, name: str, point: str, configs: dict[str, tuple[Any, str]], path: str) -> PluginUse:
        if name not in self.registry:
            raise self._unknown(path, name, f"unknown plugin {name}")
        spec = self.registry.get(name)
        if point not in spec.points:
            raise self.err(path, f"plugin {name} does not implement {point} (it implements "
                                 f"{', '.join(spec.points)})")
        args_raw, args_path = configs.get(name, (None, f"pluginConfig[{name}].args"))
        if name not in configs and self.kind == UPSTREAM_KIND and point in ("deschedule", "balance"):
            raise self.err(path, f"plugin {name} is enabled but has no pluginConfig entry")
        return PluginUse(spec, self._args(spec, args_raw, args_path), args_path)

    def _args(self, spec: Any, args_raw: Any, args_path: str) -> Any:
        if spec.args_type is None:
            return None
        warnings: list[str] = []
        try:
            args = decode_args(spec.args_type, args_raw, "", warnings, strict=self._strict_args(spec))
        except ConfigError as e:
            sub = f"{args_path}.{e.path}" if e.path else args_path
            raise self.err(sub, e.message) from None
        for w in warnings:  # a filter plugin's args are decoded for filter and preEvictionFilter: warn once
            if f"{self.source}: {args_path}.{w}" not in self.warnings:
                self.warnings.append(f"{self.source}: {args_path}.{w}")
        return args


    def _strict_args(self, spec: Any) -> bool:
        """Upstream decodes every plugin's args strictly; koord-descheduler its own plugins' only. A plugin
        neither knows (an out-of-tree one) is decoded strictly, as upstream's framework would."""
        if self.kind == KOORD_KIND and spec.origin == "in-tree":
            return spec.name in _KOORD_STRICT_ARGS
        return True


def decode_policy(raw: dict[str, Any], registry: Registry, source: str) -> Policy:
    return _Decoder(raw, registry, source).decode()


def policy_from_plugins(plugins: list[tuple[str, str, dict[str, Any]]], evictor_args: dict[str, Any],
                        limits: Mapping[str, int | None], profile: str = "kubectl-desched") -> dict[str, Any]:
    """The DeschedulerPolicy that flags describe: one profile with the named (plugin, point, args)."""
    raw: dict[str, Any] = {"apiVersion": API_VERSION, "kind": UPSTREAM_KIND}
    raw.update({k: v for k, v in limits.items() if v is not None})
    enabled: dict[str, dict[str, list[str]]] = {}
    configs: list[dict[str, Any]] = [{"name": DEFAULT_EVICTOR, "args": evictor_args}]
    for name, point, args in plugins:
        configs.append({"name": name, "args": args})
        enabled.setdefault(point, {"enabled": []})["enabled"].append(name)
    raw["profiles"] = [{"name": profile, "pluginConfig": configs, "plugins": enabled}]
    return raw


__all__ = ["PluginUse", "Policy", "Profile", "apply_patch", "decode_policy", "policy_from_plugins"]
