"""Read a cluster state from files: `kubectl get nodes,pods,pdb -A -o yaml|json` output,
single objects, Lists, or multi-document YAML. `-` reads standard input.

A JSON List is decoded whole and typed (kube/decode.py): straight from the file's bytes (mapped, not copied) into
the model, skipping every field no plugin reads, several times faster than json.load. What the typed decoder does
not take whole (other kinds, Lists in Lists, nulls, errors) is read again the slow way: JSON streamed
(kube/jsonstream.py, one item's dicts alive at a time) and each object checked by the full schema, which names
the file, line, object and field at fault. YAML is read whole by a YAML parser and converted into the same types.
All are bounded in size and depth (safeload.py)."""

from __future__ import annotations

import contextlib
import io
import json
import mmap
import os
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TextIO

from kubectl_desched import safeload
from kubectl_desched.errors import UsageError
from kubectl_desched.kube import decode, jsonstream
from kubectl_desched.kube.jsonstream import Refused, stream_json
from kubectl_desched.model import shapes
from kubectl_desched.model.objects import (
    Node,
    ParseError,
    Pod,
    PodDisruptionBudget,
    cycle_collector_paused,
    extra_from_json,
    node_from_json,
    pdb_from_json,
    pod_from_json,
)
from kubectl_desched.model.state import ClusterState
from kubectl_desched.sanitize import short


def _objects(doc: Any, name: str) -> Iterator[Mapping[str, Any]]:
    if isinstance(doc, list):
        for item in doc:
            yield from _objects(item, name)
        return
    if not isinstance(doc, Mapping):
        raise UsageError(f"{name}: expected Kubernetes objects, found a {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _objects(_with_list_kind(item, kind), name)
    elif "kind" not in doc:
        raise UsageError(f"{name}: an object without a kind (is this a kubectl get -o yaml output?)")
    else:
        yield doc


def _with_list_kind(item: Any, list_kind: Any) -> Any:
    """`kubectl get --raw` lists (metrics.k8s.io) leave the kind off their items: an XList's item is an X."""
    if (isinstance(item, Mapping) and "kind" not in item and isinstance(list_kind, str)
            and list_kind.endswith("List") and list_kind != "List"):
        return {**item, "kind": list_kind[: -len("List")]}
    return item


@contextlib.contextmanager
def _opened(path: str) -> Iterator[TextIO]:
    if path == "-":
        f = safeload.stdin_text()
        try:
            yield f
        finally:
            if isinstance(f, io.TextIOWrapper) and f is not sys.stdin:
                f.detach()  # leave standard input open
        return
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115 - closed below, errors named by the caller
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    with f:
        yield f


def _typed(path: str) -> tuple[decode.Objects | None, bytes | None]:
    """The fast read of a JSON List (see decode.snapshot): the objects, or None to read it the slow way. A file
    is mapped, not copied; standard input is read into memory (bounded), and its bytes are handed back for the
    slow read, since they cannot be read twice. The whole input is bounded as the streamed read bounds it; the
    streamed read's bound on one item (MAX_JSON_OBJECT_CHARS) limits the dicts it holds at a time, which the
    typed decode never builds."""
    if path == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:
            return None, None  # already text (a test's StringIO): the slow way reads it
        data = safeload.read_bytes(buffer, jsonstream.MAX_JSON_SNAPSHOT_CHARS + 1)
        if data.lstrip()[:1] != b"{" or len(data) > jsonstream.MAX_JSON_SNAPSHOT_CHARS:
            return None, data
        return decode.snapshot(data), data
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if f.read(4096).lstrip()[:1] != b"{" or size > jsonstream.MAX_JSON_SNAPSHOT_CHARS:
                return None, None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                return decode.snapshot(mapped), None
    except (OSError, ValueError):  # not a regular file (a pipe, a directory), or empty: the slow way says
        return None, None


@contextlib.contextmanager
def _text(path: str, data: bytes | None) -> Iterator[TextIO]:
    """The input as text for the slow read: standard input's bytes when the fast read took them."""
    if data is None:
        with _opened(path) as f:
            yield f
        return
    try:
        yield io.StringIO(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{'<stdin>' if path == '-' else path}: not a text file") from None


def read_text(path: str) -> str:
    """A policy or a patch file (`-`: standard input), at most safeload.MAX_CONFIG_CHARS."""
    return safeload.read_file(path)


class _Collector:
    """Turns raw objects into the lean model as they arrive, so no raw dict outlives its object."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.pods: list[Pod] = []
        self.pdbs: list[PodDisruptionBudget] = []
        self.extra: dict[str, list[Any]] = defaultdict(list)

    def add(self, doc: Any, name: str) -> None:
        for obj in _objects(doc, name):
            kind = obj.get("kind")
            try:
                if kind == "Node":
                    self.nodes.append(node_from_json(obj))
                elif kind == "Pod":
                    self.pods.append(pod_from_json(obj))
                elif kind == "PodDisruptionBudget":
                    self.pdbs.append(pdb_from_json(obj))
                elif isinstance(kind, str):
                    self.extra[kind].append(extra_from_json(kind, obj))
                else:
                    raise UsageError(f"{name}: kind must be a string, not {shapes.describe(kind)}")
            except ParseError as e:
                raise UsageError(f"{name}: {e}") from None
            except (AttributeError, TypeError, ValueError) as e:  # the model's checks should have said why
                raise UsageError(f"{name}: malformed {kind}: {short(str(e))}") from None

    def merge(self, other: _Collector | decode.Objects) -> None:
        self.nodes += other.nodes
        self.pods += other.pods
        self.pdbs += other.pdbs
        for kind, objs in other.extra.items():
            self.extra[kind] += objs


def _read_json(f: TextIO, head: str, name: str, into: _Collector) -> None:
    """Stream a JSON file: a List's items (or a top-level array's elements) become lean objects one by one."""
    items = _Collector()
    bad: list[UsageError] = []
    kindless: list[Any] = []  # items of a `kubectl get --raw` list (metrics.k8s.io): their List names their kind

    def add(item: Any) -> None:
        if isinstance(item, Mapping) and "kind" not in item:
            kindless.append(item)
        elif not bad:
            try:
                items.add(item, name)
            except UsageError as e:
                bad.append(e)  # a syntax error further on is named first, as a whole-file parse would

    try:
        rest = stream_json(f, head, add)
    except json.JSONDecodeError as e:
        raise UsageError(f"{name}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
    except Refused as e:
        raise UsageError(f"{name}: line {e.lineno} column {e.colno}: {e.msg}") from None
    if bad:
        raise bad[0]
    list_kind = rest.get("kind") if rest is not None else None
    for item in kindless:
        items.add(_with_list_kind(item, list_kind), name)  # without a List kind: the usual error
    if rest is None or (isinstance(list_kind, str) and list_kind.endswith("List")):
        into.merge(items)
    else:
        # Not a List after all (its kind came after its items): it is one object, as json.load would read it;
        # only its "items" field is not kept.
        into.add(rest, name)


@cycle_collector_paused()
def load_snapshot(paths: Iterable[str]) -> ClusterState:
    found = _Collector()
    names = []
    for path in paths:
        name = "<stdin>" if path == "-" else path
        names.append(name)
        typed, data = _typed(path)
        if typed is not None:
            found.merge(typed)
            continue
        with _text(path, data) as f:
            try:
                head = f.read(4096)
                if head.lstrip()[:1] in ("{", "["):
                    _read_json(f, head, name, found)
                else:
                    text = safeload.read_bounded(f, name, safeload.MAX_YAML_SNAPSHOT_CHARS, head)
                    for doc in safeload.yaml_documents(text, name, safeload.SnapshotLoader):
                        found.add(doc, name)
                    del text
            except UnicodeDecodeError:
                raise UsageError(f"{name}: not a text file") from None
            except OSError as e:
                raise UsageError(f"cannot read {path}: {e.strerror}") from None
    if not found.nodes:
        raise UsageError(f"{', '.join(names)}: no Node objects found (use: kubectl get nodes,pods,pdb -A -o yaml)")
    return ClusterState(found.nodes, found.pods, found.pdbs, source="file " + ", ".join(names), extra=found.extra)
