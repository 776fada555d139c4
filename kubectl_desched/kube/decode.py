"""Typed decoding straight from bytes: a LIST page of the API, or a whole JSON snapshot (a List whose items
dispatch on their `kind`), into the model (model/objects.py) through the typed shapes of model/wire.py.

This is the fast way, and it only says yes or no: input it cannot take whole (a null where a value belongs, a
kind it does not type, a List in a List, bytes that are not JSON, a value the model refuses) returns None, and
the caller reads the same bytes again the slow way (json, then model.from_json), which takes what the API
would take and names what it would not, with the object, the field and the line."""

from __future__ import annotations

import contextlib
import functools
import operator
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubectl_desched import safeload
from kubectl_desched.model import objects as model
from kubectl_desched.model import wire

_SKIPPED = (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError, KeyError, RecursionError)

_PAGES = {kind: msgspec.json.Decoder(wire.list_type(t)) for kind, t in wire.BY_KIND.items()}
_KIND_OF = {t: kind for kind, t in wire.BY_KIND.items()}


def page(data: bytes, kind: str) -> tuple[list[Any], str] | None:
    """A LIST answer's objects as the model, and its continue token; None when it must be read the slow way.
    (List items carry no kind: the decoder is the kind's.)"""
    finish = model.FINISH[kind]
    try:
        decoded = _PAGES[kind].decode(data)
        items = decoded.items
        out = [finish(w) for w in items]
    except _SKIPPED:
        return None
    return out, decoded.metadata.continue_


_ONE = {kind: msgspec.json.Decoder(t) for kind, t in wire.BY_KIND.items()}


def one(data: bytes, kind: str) -> Any:
    """A single object's answer (GET of one node) as the model; None when it must be read the slow way."""
    try:
        return model.FINISH[kind](_ONE[kind].decode(data))
    except _SKIPPED:
        return None


_ANY_KIND: Any = functools.reduce(operator.or_, wire.BY_KIND.values())  # a union tagged by `kind`


class _Snapshot(msgspec.Struct, gc=False):
    kind: str = ""
    items: list[msgspec.Raw] = msgspec.field(default_factory=list)  # each item's bytes, in the mapped file


_SNAPSHOT = msgspec.json.Decoder(_Snapshot)
_ITEM = msgspec.json.Decoder(_ANY_KIND)


@dataclass
class Objects:
    """What a snapshot held, as the model, in the order read."""

    nodes: list[model.Node] = field(default_factory=list)
    pods: list[model.Pod] = field(default_factory=list)
    pdbs: list[model.PodDisruptionBudget] = field(default_factory=list)
    extra: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))


def snapshot(data: Any) -> Objects | None:
    """A whole `kubectl get -o json` List (bytes, or a buffer such as an mmap) as the model; None when it must be
    read the slow way. The List is scanned first for where its items are (msgspec.Raw, no copy), then each item is
    decoded typed and made the model at once: only one item's decoded shape is alive at a time, so memory holds
    the model and not every item's shape (which would double it, and fragment it once freed).

    Nesting is bounded as the slow reader bounds it (safeload.MAX_DEPTH), a little below, so that anything near the
    bound is judged by the slow reader. Not thread-safe: the bound is the interpreter's recursion limit (CPython
    3.11; elsewhere msgspec's own guard)."""
    found = Objects()
    finish = model.FINISH
    try:
        with _nesting_bounded(safeload.MAX_DEPTH - 8):
            doc = _SNAPSHOT.decode(data)
            if not doc.kind.endswith("List"):
                return None  # one object that has items: the slow reader says what it is
            items: list[Any] = doc.items  # each slot freed once its item is decoded
            del doc
            for i, raw in enumerate(items):
                w = _ITEM.decode(raw)
                items[i] = None
                kind = _KIND_OF[type(w)]
                obj = finish[kind](w)
                if kind == "Pod":
                    found.pods.append(obj)
                elif kind == "Node":
                    found.nodes.append(obj)
                elif kind == "PodDisruptionBudget":
                    found.pdbs.append(obj)
                else:
                    found.extra[kind].append(obj)
    except _SKIPPED:  # a ParseError is a ValueError
        return None
    return found


@contextlib.contextmanager
def _nesting_bounded(levels: int) -> Iterator[None]:
    """msgspec counts each array and object it enters against the recursion limit, skipped fields too."""
    depth = safeload.recursion_depth()
    if depth is None:
        yield
        return
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + levels)
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)
