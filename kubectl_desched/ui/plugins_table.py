"""`kubectl desched plugins`: each plugin's extension points, origin and args, one arg per line in YAML's flow style
(`thresholds: {cpu: 20, memory: 20, pods: 20}`), so a value is never cut in the middle of a word. The value shown
is what a run from flags uses; where a policy that leaves the arg out gets another, `(policy: ...)` follows."""

from __future__ import annotations

import json
import re
from typing import Any

from kubectl_desched.framework.args import encode_args
from kubectl_desched.framework.registry import Registry
from kubectl_desched.term.tables import plain_table

_PLAIN = re.compile(r"[A-Za-z0-9_./-]+")


def flow(value: Any) -> str:
    """A value in YAML's flow style, as kubectl's users read it: unset for null, no quotes where none are needed."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return value if _PLAIN.fullmatch(value) and value not in ("true", "false", "null") else json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{flow(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    return json.dumps(value)


def args_lines(flag_args: dict[str, Any], policy_args: dict[str, Any]) -> str:
    lines = [f"{k}: {flow(v)}" + ("" if policy_args.get(k) == v else f" (policy: {flow(policy_args.get(k))})")
             for k, v in flag_args.items()]
    return "\n".join(lines) or "-"


def rows(registry: Registry) -> list[dict[str, Any]]:
    return [{"name": spec.name, "extensionPoints": list(spec.points), "origin": spec.origin,
             "description": spec.description,
             "defaultArgs": encode_args(spec.args_type()) if spec.args_type else {},
             "flagDefaultArgs": encode_args(spec.args_from_flags()) if spec.args_type else {},
             "flags": [f.name for f in spec.cli.flags]} for spec in registry]


def table(found: list[dict[str, Any]], *, wide: bool) -> str:
    headers = ["NAME", "EXTENSION POINTS", "ORIGIN", "ARGS (DEFAULTS)"]
    cells = [[r["name"], ",".join(r["extensionPoints"]), r["origin"].split(" (entry point")[0],
              args_lines(r["flagDefaultArgs"], r["defaultArgs"])] for r in found]
    widths: list[int | None] = [None, None, None, None]
    if wide:
        headers.append("DESCRIPTION")
        widths.append(50)
        for row, r in zip(cells, found, strict=True):
            row.append(r["description"])
    lines = plain_table(cells, headers, maxcolwidths=widths).splitlines()
    out = lines[:2]
    for line in lines[2:]:  # a blank line between plugins: each one's args take several lines
        if not line.startswith(" "):
            out.append("")
        out.append(line.rstrip())
    return "\n".join(out)
