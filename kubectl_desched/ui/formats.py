"""kubectl's other output formats over the plan document (what `-o json` prints): `-o name`, `-o jsonpath=TEMPLATE`
and `-o custom-columns=SPEC`, and `--sort-by` for the candidates. JSONPath expressions are evaluated by jsonpath-ng;
this module only reads kubectl's template syntax around them: `{.a.b}`, `{@.a}` inside a range, `{range EXPR}...{end}`,
and quoted literals such as `{"\\n"}` (kubectl's subset; functions and filters are what jsonpath-ng supports)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kubectl_desched.errors import UsageError
from kubectl_desched.term.tables import plain_table

# The one list of -o formats: -o's help, its check and its completion are made from these.
TEXT_FORMATS = ("table", "wide")  # the plan as text for people; every other format prints one document
FORMATS = (*TEXT_FORMATS, "json", "yaml", "name")
TEMPLATED = {"jsonpath=": "TEMPLATE", "jsonpath-as-json=": "TEMPLATE", "custom-columns=": "HEADER:JSONPATH,..."}


def formats_help() -> str:
    """-o's help: every format, a templated one with what follows its `=`."""
    names = [*FORMATS, *(prefix + rest for prefix, rest in TEMPLATED.items())]
    return f"{', '.join(names[:-1])} or {names[-1]} (kubectl's syntax, over the -o json document)."


def is_text(fmt: str) -> bool:
    return fmt in TEXT_FORMATS


def check_format(value: str) -> str:
    """-o as given: one of FORMATS, or a templated format with its template, checked now (before any read)."""
    if value in FORMATS:
        return value
    for prefix in TEMPLATED:
        if value.startswith(prefix):
            rest = value[len(prefix):]
            if not rest:
                raise UsageError(f"-o {prefix}: the template is missing")
            if prefix == "custom-columns=":
                columns(rest)
            else:
                _parse_template(rest)
            return value
    raise UsageError(f"-o {value}: unknown output format: "
                     + ", ".join([*FORMATS, *(f"{prefix}..." for prefix in TEMPLATED)]))


def check_sort_by(value: str | None) -> str | None:
    """--sort-by as kubectl takes it: `{.a.b}` or `.a.b`; parsed now so a bad one fails before anything is read."""
    if value is None:
        return None
    path = value.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    if not path:
        raise UsageError("--sort-by: the JSONPath is empty")
    _expr(path)
    return path


def _expr(text: str) -> Any:
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
    from jsonpath_ng.ext.parser import parse

    path = text.strip()
    if path.startswith("@"):
        path = path[1:]
    if not path.startswith("$"):
        path = "$" + ("" if path.startswith((".", "[")) else ".") + path
    try:
        return parse(path)
    except (JsonPathLexerError, JsonPathParserError, Exception) as e:
        raise UsageError(f"JSONPath {text!r}: {e}") from None


def _tokens(template: str) -> list[tuple[str, str]]:
    """("text", literal) and ("expr", inside the braces), in order."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(template):
        start = template.find("{", i)
        if start < 0:
            out.append(("text", template[i:]))
            break
        if start > i:
            out.append(("text", template[i:start]))
        end = template.find("}", start)
        if end < 0:
            raise UsageError(f"JSONPath template {template!r}: unclosed {{")
        out.append(("expr", template[start + 1:end].strip()))
        i = end + 1
    return out


def _parse_template(template: str) -> list[Any]:
    """A tree: text, ("expr", parsed), ("range", parsed, body)."""
    stack: list[list[Any]] = [[]]
    for kind, value in _tokens(template):
        if kind == "text":
            stack[-1].append(("text", value))
        elif value.startswith('"') and value.endswith('"') and len(value) >= 2:
            try:
                stack[-1].append(("text", json.loads(value, strict=False)))
            except ValueError:
                raise UsageError(f"JSONPath template {template!r}: bad literal {value}") from None
        elif value.startswith("range "):
            body: list[Any] = []
            stack[-1].append(("range", _expr(value[len("range "):]), body))
            stack.append(body)
        elif value == "end":
            if len(stack) == 1:
                raise UsageError(f"JSONPath template {template!r}: {{end}} without {{range}}")
            stack.pop()
        else:
            stack[-1].append(("expr", _expr(value)))
    if len(stack) != 1:
        raise UsageError(f"JSONPath template {template!r}: {{range}} without {{end}}")
    return stack[0]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":")) if isinstance(value, dict | list) else \
        ("true" if value is True else "false" if value is False else "" if value is None else str(value))


def _render(tree: list[Any], data: Any) -> str:
    out = []
    for node in tree:
        if node[0] == "text":
            out.append(node[1])
        elif node[0] == "expr":
            out.append(" ".join(_text(m.value) for m in node[1].find(data)))
        else:
            for m in node[1].find(data):
                out.append(_render(node[2], m.value))
    return "".join(out)


def jsonpath(template: str, doc: Any, as_json: bool = False) -> str:
    if as_json:
        found = [m.value for node in _parse_template(template) if node[0] == "expr" for m in node[1].find(doc)]
        return indented_json(found, 4)
    return _render(_parse_template(template), doc)


def columns(spec: str) -> list[tuple[str, Any]]:
    """`HEADER:.path,...` as kubectl's custom-columns."""
    out = []
    for part in spec.split(","):
        header, sep, path = part.partition(":")
        if not sep or not header or not path:
            raise UsageError(f"-o custom-columns: {part!r} is not HEADER:JSONPATH")
        out.append((header, _expr(path)))
    return out


def _cell(value: Any, inner: bool = False) -> str:
    """A value as kubectl's custom-columns prints it (Go's fmt.Sprint of decoded JSON): a list `[a b]`, a map
    `map[k:v]` with its keys sorted, a null inside them `<nil>`; JSON is for -o jsonpath."""
    if isinstance(value, list):
        return "[" + " ".join(_cell(v, True) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_cell(v, True)}" for k, v in sorted(value.items())) + "]"
    return "<nil>" if value is None and inner else _text(value)


def custom_columns(spec: str, items: Sequence[Any], headers: bool = True) -> str:
    """Several matches (`.a[*]`) are joined with commas, as kubectl does; nothing found, or null, is `<none>`."""
    cols = columns(spec)
    rows = [[",".join(_cell(m.value) for m in path.find(item)) or "<none>" for _h, path in cols] for item in items]
    return plain_table(rows, [h for h, _p in cols] if headers else ())


class LazyItems:
    """A document's list whose items are made as they are written: -o json writes them one at a time, so at 150,000
    pods the plan's 31,000 candidate dicts (43 MB) never exist at once. Every other format makes the list first."""

    def __init__(self, source: Sequence[Any], make: Callable[[Any], Any]) -> None:
        self.source, self.make = source, make

    def __len__(self) -> int:
        return len(self.source)

    def __iter__(self) -> Iterator[Any]:
        return map(self.make, self.source)


def emit(doc: dict[str, Any], fmt: str, no_headers: bool = False,
         sort_key: str | None = None) -> str | Iterator[bytes]:
    """The document in any -o format but the tables; its candidates (or an explanation's pods) are the items of
    `name` and `custom-columns`, as a List's items are for kubectl. JSON comes as UTF-8 bytes, piece by piece: at
    150,000 pods the plan is 40 MB, and a whole copy (compact, then indented) would be 65 MB more at the peak."""
    import yaml

    if fmt != "json" and any(isinstance(v, LazyItems) for v in doc.values()):
        doc = {k: list(v) if isinstance(v, LazyItems) else v for k, v in doc.items()}
    key = "candidates" if "candidates" in doc else "pods" if "pods" in doc else None
    if key and sort_key:
        doc = {**doc, key: sort_by(doc[key], sort_key)}
    items = doc[key] if key else [doc]
    if fmt == "json":
        return indented_json_pieces(doc, 2)
    if fmt == "yaml":
        # libyaml's emitter where the wheel has it: PyYAML's own took 45 s for a plan of 31,000 candidates
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return yaml.dump(doc, Dumper=dumper, sort_keys=False, default_flow_style=False).rstrip("\n")
    if fmt == "name":
        return names(items)
    if fmt.startswith("custom-columns="):
        return custom_columns(fmt[len("custom-columns="):], items, headers=not no_headers)
    if fmt.startswith("jsonpath-as-json="):
        return jsonpath(fmt[len("jsonpath-as-json="):], doc, as_json=True)
    return jsonpath(fmt[len("jsonpath="):], doc)


def indented_json_bytes(value: Any, indent: int) -> bytes:
    """json.dumps(value, indent=indent), byte for byte, encoded: Python's indenting encoder is pure Python (3-4x
    slower on a plan of 30,000 candidates), so the C encoder writes it compact and msgspec re-indents it."""
    import msgspec

    return msgspec.json.format(json.dumps(value).encode(), indent=indent)


def indented_json_pieces(value: Any, indent: int, level: int = 0, depth: int = 2) -> Iterator[bytes]:
    """indented_json_bytes(value, indent) in pieces: the top `depth` levels of dicts and lists are written here,
    each value below them whole (a plan's candidate, a node). Inside JSON a newline is always escaped, so a piece
    is moved to its level by indenting after each newline."""
    if depth == 0 or not value or not isinstance(value, dict | list | LazyItems) or \
            (isinstance(value, dict) and not all(isinstance(k, str) for k in value)):
        text = indented_json_bytes(list(value) if isinstance(value, LazyItems) else value, indent)
        yield text.replace(b"\n", b"\n" + b" " * (indent * level)) if level and b"\n" in text else text
        return
    inner, outer = b"\n" + b" " * (indent * (level + 1)), b"\n" + b" " * (indent * level)
    if isinstance(value, dict):
        yield b"{"
        for i, (k, v) in enumerate(value.items()):
            yield (b"," if i else b"") + inner + json.dumps(k).encode() + b": "
            yield from indented_json_pieces(v, indent, level + 1, depth - 1)
        yield outer + b"}"
    else:
        yield b"["
        for i, v in enumerate(value):
            yield (b"," if i else b"") + inner
            yield from indented_json_pieces(v, indent, level + 1, depth - 1)
        yield outer + b"]"


def indented_json(value: Any, indent: int) -> str:
    return indented_json_bytes(value, indent).decode()


def names(items: Sequence[Any]) -> str:
    """`-o name`: kubectl's resource/name, one per line."""
    return "\n".join(f"pod/{item['pod']}" for item in items)


def sort_key(path: str) -> Callable[[Any], tuple[int, Any]]:
    """--sort-by's order over documents: by the JSONPath's first value, numbers before text, missing ones last."""
    expr = _expr(path)

    def key(item: Any) -> tuple[int, Any]:
        found = [m.value for m in expr.find(item)]
        if not found:
            return (2, "")
        v = found[0]
        return (0, v) if isinstance(v, int | float) and not isinstance(v, bool) else (1, _text(v))
    return key


def sort_by(items: list[Any], path: str) -> list[Any]:
    return sorted(items, key=sort_key(path))
