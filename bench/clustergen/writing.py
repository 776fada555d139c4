"""Writing the List as kubectl does: indented JSON or YAML, streamed object by object."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring_ascii as _esc
from typing import Any, TextIO

import yaml


def list_object(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dumps_indented(obj: Any, pad: str = "    ", newline: str = "\n") -> str:
    """json.dumps(obj, indent=len(pad), sort_keys=True), byte for byte, about 3x faster: the
    standard library falls back to its pure-Python generator encoder whenever indent is set.
    `newline` is the line break plus the indentation the object itself sits at."""
    parts: list[str] = []
    _enc(obj, newline, pad, parts.append)
    return "".join(parts)


def _scalar(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    return repr(v) if type(v) is int else json.dumps(v)


def _enc(o: Any, nl: str, pad: str, put: Callable[[str], None]) -> None:
    t = type(o)
    if t is dict:
        if not o:
            put("{}")
            return
        nl2 = nl + pad
        sep = nl2
        put("{")
        for k in sorted(o):
            put(sep + _esc(k) + ": ")
            sep = "," + nl2
            v = o[k]
            tv = type(v)
            if tv is str:
                put(_esc(v))
            elif tv is dict or tv is list:
                _enc(v, nl2, pad, put)
            else:
                put(_scalar(v))
        put(nl + "}")
    elif t is list:
        if not o:
            put("[]")
            return
        nl2 = nl + pad
        sep = nl2
        put("[")
        for v in o:
            put(sep)
            sep = "," + nl2
            _enc(v, nl2, pad, put)
        put(nl + "]")
    elif t is str:
        put(_esc(o))
    else:
        put(_scalar(o))


class KubectlDumper(yaml.SafeDumper):
    """Quotes like kubectl (go-yaml): "double" quotes for strings that would read back as another
    type ("0", "true", "", timestamps), 'single' ones for strings plain style cannot carry (JSON).
    Pure Python, so meant for small files; big ones go through libyaml, which single-quotes both."""

    def choose_scalar_style(self) -> str:
        style = super().choose_scalar_style()
        if style == "'" and self.event is not None and not self.event.implicit[0]:
            return '"'
        return style


def write_list(
    items: Iterable[dict[str, Any]], out: TextIO, fmt: str = "json", indent: int = 4, kubectl_quotes: bool = False
) -> int:
    """Stream a kubectl-style List, one item at a time; returns the number of items written.

    json: keys sorted and 4-space indented like kubectl (indent=0 writes compact JSON, ~3x smaller and faster).
    yaml: block style with keys sorted, like kubectl -o yaml; kubectl_quotes picks KubectlDumper."""
    n = 0
    if fmt == "yaml":
        dumper = KubectlDumper if kubectl_quotes else _Dumper
        for item in items:
            if n == 0:
                out.write("apiVersion: v1\nitems:\n")
            out.write(yaml.dump([item], Dumper=dumper, default_flow_style=False, sort_keys=True, width=1 << 30))
            n += 1
        if n == 0:
            out.write("apiVersion: v1\nitems: []\n")
        out.write('kind: List\nmetadata:\n  resourceVersion: ""\n')
        return n
    if fmt != "json":
        raise ValueError(f"unknown format {fmt!r}")
    if not indent:
        out.write('{"apiVersion":"v1","items":[')
        for item in items:
            out.write(("," if n else "") + json.dumps(item, sort_keys=True, separators=(",", ":")))
            n += 1
        out.write('],"kind":"List","metadata":{"resourceVersion":""}}\n')
        return n
    pad = " " * indent
    inner = "\n" + pad * 2
    out.write(f'{{\n{pad}"apiVersion": "v1",\n{pad}"items": [')
    for item in items:
        out.write(("," if n else "") + inner + dumps_indented(item, pad, inner))
        n += 1
    out.write(f"\n{pad}],\n" if n else "],\n")
    out.write(f'{pad}"kind": "List",\n{pad}"metadata": {{\n{pad}{pad}"resourceVersion": ""\n{pad}}}\n}}\n')
    return n


