"""Typed decoding straight from bytes: a LIST page of the API, or a whole JSON snapshot (a List whose items
dispatch on their `kind`), into the model (model/objects.py) through the typed shapes of model/wire.py.

This is the fast way, and it only says yes or no: input it cannot take whole (a null where a value belongs, a
kind it does not type, a List in a List, bytes that are not JSON, a value the model refuses) returns None, and
the caller reads the same bytes again the slow way (json, then model.from_json), which takes what the API
would take and names what it would not, with the object, the field and the line."""

from __future__ import annotations

import contextlib
import functools
import mmap
import operator
import re
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
    read the slow way. Each item is decoded typed and made the model at once, so memory holds the model and not
    every item's decoded shape (which would double it, and fragment it once freed). Where the items are: from the
    layout of an indented List such as kubectl writes (_indented_items), without reading the file ahead, and a
    mapped file's pages are given back behind the read; otherwise from a scan of the whole List first
    (msgspec.Raw, no copy).

    Nesting is bounded as the slow reader bounds it (safeload.MAX_DEPTH), a little below, so that anything near the
    bound is judged by the slow reader. Not thread-safe: the bound is the interpreter's recursion limit (CPython
    3.11; elsewhere msgspec's own guard)."""
    found = Objects()
    try:
        with _nesting_bounded(safeload.MAX_DEPTH - 8):
            indented = _indented_items(data, found)
            if indented is not None:
                return found if indented else None
            found = Objects()  # what the layout gave before it failed is read again
            doc = _SNAPSHOT.decode(data)
            if not doc.kind.endswith("List"):
                return None  # one object that has items: the slow reader says what it is
            items: list[Any] = doc.items  # each slot freed once its item is decoded
            del doc
            for i, raw in enumerate(items):
                _add(found, _ITEM.decode(raw))
                items[i] = None
    except _SKIPPED:  # a ParseError is a ValueError
        return None
    return found


def _add(found: Objects, w: Any) -> None:
    kind = _KIND_OF[type(w)]
    obj = model.FINISH[kind](w)
    if kind == "Pod":
        found.pods.append(obj)
    elif kind == "Node":
        found.nodes.append(obj)
    elif kind == "PodDisruptionBudget":
        found.pdbs.append(obj)
    else:
        found.extra[kind].append(obj)


# An indented List: its first key's line, then "items": [ at the same indent, its first item's "{" on a line of its
# own, indented further.
_INDENTED_HEAD = re.compile(rb'\A\s*\{\n( +)"[^"\n]*":[^\n]*\n(?:\1"[^"\n]*":[^\n]*\n)*?\1"items": \[\n( +)\{\n')
_PIECE = 16 << 20  # the items are read this many bytes at a time
_ITEMS = msgspec.json.Decoder(list[_ANY_KIND])  # a piece's items, typed in one pass


class _Around(msgspec.Struct, gc=False):
    kind: str = ""
    items: Any = msgspec.UNSET


_AROUND = msgspec.json.Decoder(_Around)


def _indented_items(data: Any, found: Objects) -> bool | None:
    """The items of an indented List, a piece of the file at a time: a piece ends where the layout says an item
    does (JSON strings hold no newline, so "},", a newline and the items' indent then "{" is only ever found
    between two items), and is decoded as a JSON array of typed items in one pass, each made the model at once. A
    mapped file's pages are given back behind each piece, so memory holds the model and a piece, not the file. A
    layout that does not hold (a piece that is not whole items) is not this: None, and the caller scans the whole
    List. True: the List's items are in found; False: it is not a List (the slow reader says what it is)."""
    head = _INDENTED_HEAD.match(data)
    if head is None:
        return None
    top, indent = head.group(1), head.group(2)
    end = data.rfind(b"\n" + top + b"]")  # the List's fields after its items are a few short lines
    if len(indent) <= len(top) or end < head.end():
        return None
    between = b"},\n" + indent + b"{"
    start = head.end() - 2  # the first item's "{"
    release = isinstance(data, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED")
    with memoryview(data) as view:
        while start < end:
            cut = -1
            if start + _PIECE < end:
                cut = data.rfind(between, start, start + _PIECE)
                if cut < 0:  # an item longer than a piece: it ends further on
                    cut = data.find(between, start, end)
            stop = cut + 1 if cut >= 0 else end  # after the piece's last "}"
            try:
                items = _ITEMS.decode(b"".join((b"[", view[start:stop], b"]")))
                for i, w in enumerate(items):
                    _add(found, w)
                    items[i] = None
            except _SKIPPED:
                return None  # not this layout after all, or an item the scan of the whole List judges
            start = cut + len(between) - 1 if cut >= 0 else end  # the next piece's first "{"
            if release:
                data.madvise(mmap.MADV_DONTNEED, 0, start - start % mmap.PAGESIZE)
        # The List around its items, decoded as one document with null for them: the array was the List's own
        # "items" only if its items are that null (not absent, as when the array was nested in another field).
        rest = _AROUND.decode(bytes(view[:head.start(2) - 2]) + b"null" + bytes(view[end + len(top) + 2:]))
    if not rest.kind.endswith("List"):
        return False
    return True if rest.items is None else None


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
