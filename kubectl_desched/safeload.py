"""Reading text nobody vouched for: bounded size, bounded nesting, bounded YAML alias expansion, and one clean
error instead of a traceback (or a crash inside libyaml) for anything else.

Every file or flag the tool parses goes through here: snapshots (--from-file), policies, --policy-patch, --args and
kubeconfigs. The limits below are documented in docs/reliability.md ("Hostile files and flags").

Policies, --args and patches are decoded as upstream decodes them (YAML 1.1): y/Y/n/N are booleans like
yes/no/on/off. Timestamps stay strings in policies and snapshots, as the API's fields are (PyYAML would make
datetime objects of them). Kubeconfigs are read as the kubernetes client reads them."""

from __future__ import annotations

import io
import json
import re
import sys
from typing import Any, TextIO

import yaml

from kubectl_desched.errors import UsageError
from kubectl_desched.sanitize import short

MAX_DEPTH = 100  # lists and objects inside each other; a Kubernetes object rarely goes past 20
MAX_CONFIG_CHARS = 16 << 20  # a policy, a patch, plugin args, one kubeconfig file
MAX_YAML_SNAPSHOT_CHARS = 1 << 30  # a YAML snapshot is read whole (~55,000 pods of `kubectl get -o yaml`)
MAX_JSON_SNAPSHOT_CHARS = 8 << 30  # streamed; `kubectl get -o json` of 150,000 pods is 3.5 GB
MAX_JSON_OBJECT_CHARS = 64 << 20  # one item of a streamed List (etcd stores at most 1.5 MiB per object)
MAX_ALIAS_VALUES = 100_000  # values that YAML aliases may repeat in one document, in all

_CHUNK = 1 << 23
_BYTES_CHUNK = 1 << 24
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # neither YAML nor JSON text has them outside strings


class InputError(UsageError):
    """Input that is not what it claims to be, too big, or too deep; the message names the input."""


# --- reading ---------------------------------------------------------------------------------------------------

def stdin_text() -> TextIO:
    """Standard input as strict UTF-8 whatever the locale: under the C locale Python reads it with
    surrogateescape, and random bytes then fail much later, when something encodes them."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        return sys.stdin  # already text (a test's StringIO)
    return io.TextIOWrapper(buffer, encoding="utf-8", errors="strict", newline=None)


def read_bounded(f: TextIO, name: str, limit: int, head: str = "") -> str:
    """All of `f` (after `head`, already read), at most `limit` characters; control characters that no text
    format allows end the read at once (`/dev/zero`, a binary file)."""
    parts = [head]
    size = len(head)
    if _CONTROL.search(head):
        raise InputError(f"{name}: not a text file (it has control characters)")
    while True:
        if size > limit:
            raise InputError(f"{name}: larger than the {describe_size(limit)} this input may have")
        try:
            chunk = f.read(min(_CHUNK, limit + 1 - size))
        except UnicodeDecodeError:
            raise InputError(f"{name}: not a text file") from None
        except OSError as e:
            raise InputError(f"cannot read {name}: {e.strerror or e}") from None
        if not chunk:
            return "".join(parts)
        if _CONTROL.search(chunk):
            raise InputError(f"{name}: not a text file (it has control characters)")
        parts.append(chunk)
        size += len(chunk)


def read_bytes(f: Any, limit: int) -> bytes:
    """At most `limit` bytes of a binary stream, read in chunks (one read of `limit` would allocate it all at
    once): a caller that asks for one byte more than it accepts knows a longer input by the length."""
    parts, size = [], 0
    while size < limit:
        chunk = f.read(min(_BYTES_CHUNK, limit - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


def describe_size(chars: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if chars >= size and chars % size == 0:
            return f"{chars // size} {unit}"
    return f"{chars} characters"


def read_file(path: str, limit: int | None = None) -> str:
    """A whole text file (or `-`, standard input), bounded (by default as configuration is)."""
    limit = MAX_CONFIG_CHARS if limit is None else limit
    if path == "-":
        f = stdin_text()
        try:
            return read_bounded(f, "<stdin>", limit)
        finally:
            if isinstance(f, io.TextIOWrapper) and f is not sys.stdin:
                f.detach()  # its buffer is standard input's, which stays open
    try:
        f = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    with f:
        return read_bounded(f, path, limit)


# --- YAML ------------------------------------------------------------------------------------------------------

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~10x faster where the wheel has it


class SnapshotLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """PyYAML's safe loader without timestamps: Kubernetes keeps them as strings (PyYAML makes datetimes)."""


SnapshotLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


class PolicyLoader(SnapshotLoader):
    """As upstream reads a policy (YAML 1.1): y, Y, n and N are booleans too, like yes/no/on/off, which PyYAML
    leaves out. Not for snapshots: PyYAML writes a `y` unquoted, and kubectl quotes it anyway."""

    bool_values = {**yaml.constructor.SafeConstructor.bool_values, "y": True, "n": False}


PolicyLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
ConfigLoader = _BaseLoader  # a kubeconfig, read as the kubernetes client reads it (yaml.safe_load)

_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _where(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f" at line {mark.line + 1}" if mark is not None else ""


def _check_yaml_events(text: str, name: str) -> None:
    """Walk the parser's events (libyaml's parser keeps its own stack; its composer and PyYAML's recurse, and
    libyaml's crashes about 25,000 levels down) and refuse, before anything is built, a document nested deeper
    than MAX_DEPTH, counting what aliases bring in, or whose aliases repeat more than MAX_ALIAS_VALUES values."""
    parser = _BaseLoader(text)
    try:
        # per open collection: [values so far, height of its deepest child, anchor]
        stack: list[list[Any]] = []
        anchors: dict[str, tuple[int, int]] = {}  # anchor -> (values, height) of the node it names
        open_anchors: set[str] = set()
        repeated = 0
        while True:
            event = parser.get_event()
            if event is None or isinstance(event, yaml.StreamEndEvent):
                return
            cls = event.__class__
            if cls in _OPEN:
                if len(stack) >= MAX_DEPTH:
                    raise InputError(f"{name}: nested more than {MAX_DEPTH} levels deep{_where(event)}")
                anchor = event.anchor
                if anchor is not None:
                    open_anchors.add(anchor)
                stack.append([1, 0, anchor])
                continue
            if cls in _CLOSE:
                values, height, anchor = stack.pop()
                node = (values, height + 1)
                if anchor is not None:
                    anchors[anchor] = node
                    open_anchors.discard(anchor)
            elif cls is yaml.ScalarEvent:
                node = (1, 0)
                if event.anchor is not None:
                    anchors[event.anchor] = node
            elif cls is yaml.AliasEvent:
                if event.anchor in open_anchors:
                    raise InputError(f"{name}: alias *{event.anchor} refers to a node that contains it"
                                     f"{_where(event)}")
                node = anchors.get(event.anchor, (1, 0))  # an undefined one is the loader's error
                repeated += node[0]
                if repeated > MAX_ALIAS_VALUES:
                    raise InputError(f"{name}: YAML aliases repeat more than {MAX_ALIAS_VALUES:,} values"
                                     f"{_where(event)}")
                if len(stack) + node[1] > MAX_DEPTH:
                    raise InputError(f"{name}: nested more than {MAX_DEPTH} levels deep (through alias "
                                     f"*{event.anchor}){_where(event)}")
            else:
                if isinstance(event, yaml.DocumentEndEvent):
                    anchors.clear()  # anchors do not cross documents
                continue
            if stack:
                parent = stack[-1]
                parent[0] += node[0]
                if node[1] > parent[1]:
                    parent[1] = node[1]
    except yaml.YAMLError as e:
        raise _yaml_error(e, name) from None
    finally:
        parser.dispose()


def _yaml_error(e: Exception, name: str) -> InputError:
    mark = getattr(e, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark is not None else ""
    problem = getattr(e, "problem", None) or (str(e).splitlines() or [type(e).__name__])[0]
    if "maximum nesting depth" in problem:
        # libyaml (PyYAML >= 6.0.4's wheels) stops far deeper than MAX_DEPTH, and may stop before the walk in
        # _check_yaml_events sees that depth (its scanner reads ahead): the same refusal either way.
        return InputError(f"{name}: nested more than {MAX_DEPTH} levels deep{where}")
    return InputError(f"{name}: not valid YAML{where}: {problem}")


def yaml_documents(text: str, name: str, loader: Any = PolicyLoader) -> list[Any]:
    """Every document of a YAML (or JSON) text, empty ones left out; InputError for anything wrong with it."""
    _check_yaml_events(text, name)
    try:
        return [d for d in yaml.load_all(text, Loader=loader) if d is not None]
    except yaml.YAMLError as e:
        raise _yaml_error(e, name) from None
    except (ValueError, OverflowError, RecursionError) as e:  # e.g. an integer of more than 4,300 digits
        raise InputError(f"{name}: not valid YAML: {short(str(e))}") from None


def yaml_value(text: str, name: str, loader: Any = PolicyLoader) -> Any:
    """A single-document YAML (or JSON) text; None when empty."""
    docs = yaml_documents(text, name, loader)
    if len(docs) > 1:
        raise InputError(f"{name}: expected one YAML document, found {len(docs)}")
    return docs[0] if docs else None


# --- JSON ------------------------------------------------------------------------------------------------------

class NotJson(ValueError):
    """A value Python's json reads but JSON does not have (NaN, Infinity)."""


class TooDeep(ValueError):
    """A JSON value nested more than the limit."""


def _refuse_constant(name: str) -> Any:
    raise NotJson(f"{name} is not a JSON value")


_decoder = json.JSONDecoder(parse_constant=_refuse_constant)


def json_value(text: str, name: str, limit: int = MAX_CONFIG_CHARS) -> Any:
    """A whole, small JSON text (an annotation, a file), with the limits of files. Thread-safe."""
    if len(text) > limit:
        raise InputError(f"{name}: larger than the {describe_size(limit)} this input may have")
    try:
        value = _decoder.decode(text)
        check_depth(value)
    except json.JSONDecodeError as e:
        raise InputError(f"{name}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}") from None
    except (RecursionError, TooDeep):
        raise InputError(f"{name}: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as e:  # NaN, an integer of more than 4,300 digits
        raise InputError(f"{name}: not valid JSON: {short(str(e))}") from None
    return value


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise TooDeep for a parsed value nested deeper than `limit` (walked without recursion)."""
    if not isinstance(value, dict | list):
        return
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        v, depth = todo.pop()
        children: Any = v.values() if isinstance(v, dict) else v
        if depth > limit:
            raise TooDeep(f"nested more than {limit} levels deep")
        todo.extend((c, depth + 1) for c in children if isinstance(c, dict | list))


_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"  # the levels above a value count: the document's depth
_DEPTH_IN_MESSAGE = re.compile(r"at the recursion depth (\d+)")


def recursion_depth() -> int | None:
    """The caller's recursion depth as the interpreter counts it (Python frames and C levels alike), on CPython
    3.11: asking for a limit below it fails with a message that says it. None elsewhere."""
    if _MARGIN is None and not _CALIBRATING:
        return None
    try:
        sys.setrecursionlimit(1)
    except RecursionError as e:
        found = _DEPTH_IN_MESSAGE.search(str(e))
        return int(found.group(1)) - 1 if found else None
    raise AssertionError("unreachable: a running frame is deeper than 1")  # pragma: no cover


def raw_decode(s: str, pos: int, *, above: int = 0, depth: int | None = None) -> tuple[Any, int]:
    """json's raw_decode at `pos`, refusing NaN and Infinity (NotJson) and a value nested more than
    MAX_DEPTH - `above` levels (TooDeep). `depth` is the caller's recursion_depth(), which a caller decoding
    many values asks once.

    On CPython 3.11 the json scanner counts its recursion against the interpreter's recursion limit, which is
    lowered for the call: the bound is then free, which matters at 150,000 pods. The limit is the interpreter's,
    not the thread's: use this only where no other thread runs (reading a snapshot). Elsewhere the parsed value
    is walked (check_depth)."""
    limit = MAX_DEPTH - above
    if _MARGIN is None:
        try:
            obj, end = _decoder.raw_decode(s, pos)
            check_depth(obj, limit)
        except (RecursionError, TooDeep):
            raise TooDeep(_TOO_DEEP) from None
        return obj, end
    saved = sys.getrecursionlimit()
    if depth is None:
        mine = recursion_depth()
        depth = saved if mine is None else mine - 1  # the caller's
    sys.setrecursionlimit(depth + 1 + limit + _MARGIN)
    try:
        return _decoder.raw_decode(s, pos)
    except RecursionError:
        raise TooDeep(_TOO_DEEP) from None
    finally:
        sys.setrecursionlimit(saved)


def _calibrate() -> int | None:
    """The frames between raw_decode's caller and the scanner's first level, found by trying (not assumed from
    the interpreter's version): None where a lowered limit does not stop the scanner exactly at the bound."""
    global _MARGIN, _CALIBRATING
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return None
    _CALIBRATING = True
    deep, deeper = "[" * MAX_DEPTH + "]" * MAX_DEPTH, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    try:
        for margin in range(12):
            _MARGIN = margin
            try:
                raw_decode(deep, 0)
            except TooDeep:
                continue  # too few frames allowed
            try:
                raw_decode(deeper, 0)
            except TooDeep:
                return margin
            return None  # the lowered limit does not reach the scanner
        return None
    finally:
        _MARGIN = None
        _CALIBRATING = False


_MARGIN: int | None = None
_CALIBRATING = False
_MARGIN = _calibrate()
