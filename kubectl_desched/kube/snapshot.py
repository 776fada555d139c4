"""Read a cluster state from files: `kubectl get nodes,pods,pdb -A -o yaml|json` output,
single objects, Lists, or multi-document YAML. `-` reads standard input."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml

from kubectl_desched.errors import UsageError
from kubectl_desched.model import ParseError, node_from_json, pdb_from_json, pod_from_json
from kubectl_desched.state import ClusterState

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~10x faster where the wheel has it


def _documents(text: str, name: str) -> list[Any]:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as e:
            raise UsageError(f"{name}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
    try:
        return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise UsageError(f"{name}: not valid YAML{where}: {problem}") from None


def _objects(doc: Any, name: str) -> Iterator[Mapping[str, Any]]:
    if isinstance(doc, list):
        for item in doc:
            yield from _objects(item, name)
        return
    if not isinstance(doc, Mapping):
        raise UsageError(f"{name}: expected Kubernetes objects, found a {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        item_kind = kind[: -len("List")]
        for item in doc["items"]:
            # `kubectl get --raw` lists (metrics.k8s.io) leave the kind off their items.
            if item_kind and isinstance(item, Mapping) and "kind" not in item:
                item = {**item, "kind": item_kind}
            yield from _objects(item, name)
    elif "kind" not in doc:
        raise UsageError(f"{name}: an object without a kind (is this a kubectl get -o yaml output?)")
    else:
        yield doc


def read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a text file") from None


def load_snapshot(paths: Iterable[str]) -> ClusterState:
    nodes, pods, pdbs = [], [], []
    extra: dict[str, list[Any]] = defaultdict(list)
    names = []
    for path in paths:
        name = "<stdin>" if path == "-" else path
        names.append(name)
        for doc in _documents(read_text(path), name):
            for obj in _objects(doc, name):
                kind = obj.get("kind")
                try:
                    if kind == "Node":
                        nodes.append(node_from_json(obj))
                    elif kind == "Pod":
                        pods.append(pod_from_json(obj))
                    elif kind == "PodDisruptionBudget":
                        pdbs.append(pdb_from_json(obj))
                    else:
                        extra[str(kind)].append(obj)
                except ParseError as e:
                    raise UsageError(f"{name}: {e}") from None
                except (AttributeError, TypeError, ValueError) as e:
                    raise UsageError(f"{name}: malformed {kind}: {e}") from None
    if not nodes:
        raise UsageError(f"{', '.join(names)}: no Node objects found (use: kubectl get nodes,pods,pdb -A -o yaml)")
    return ClusterState(nodes, pods, pdbs, source="file " + ", ".join(names), extra=extra)
