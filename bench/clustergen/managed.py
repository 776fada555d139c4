"""metadata.managedFields as the API server writes them (fieldsV1 trees per manager)."""

from __future__ import annotations

import json
from typing import Any

from clustergen.units import ts

_LIST_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "ports": ("containerPort", "protocol"),
    "volumeMounts": ("mountPath",),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "podIPs": ("ip",),
    "hostIPs": ("ip",),
    "addresses": ("type",),
}


def fields_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """The FieldsV1 set of a (partial) object: f:<field> for fields, k:{...} for keyed list items."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if type(v) is dict:  # metadata, spec, status: no "." entry of their own
            if v:
                out["f:" + k] = {"f:" + k2: _fv(k2, v2) for k2, v2 in v.items()}
        else:
            out["f:" + k] = _fv(k, v)
    return out


def _fv(key: str, v: Any) -> dict[str, Any]:
    t = type(v)
    if t is dict:
        if not v:
            return {}
        out: dict[str, Any] = {".": {}}
        for k, x in v.items():
            tx = type(x)
            out["f:" + k] = _fv(k, x) if tx is dict or tx is list else {}
        return out
    if t is list and v:
        keys = _LIST_KEYS.get(key)
        if keys:
            out = {}
            for el in v:
                item: dict[str, Any] = {".": {}}
                for f, x in el.items():
                    if f not in keys:
                        tx = type(x)
                        item["f:" + f] = _fv(f, x) if tx is dict or tx is list else {}
                out["k:{" + ",".join(f'"{kf}":{_json_scalar(el.get(kf))}' for kf in keys) + "}"] = item
            return out
    return {}


def _json_scalar(v: Any) -> str:
    if type(v) is str and '"' not in v and "\\" not in v:
        return '"' + v + '"'
    return json.dumps(v)


def managed(manager: str, when: int, fields: dict[str, Any], subresource: str = "", api: str = "v1") -> dict[str, Any]:
    entry = {
        "apiVersion": api,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(fields),
        "manager": manager,
        "operation": "Update",
        "time": ts(when),
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


