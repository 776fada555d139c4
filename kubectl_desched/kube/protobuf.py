"""LIST pages of pods and nodes read as protobuf (application/vnd.kubernetes.protobuf), into the same model the JSON
read makes: the API server writes them in less than half the time it takes to write JSON.

The bytes are parsed by the protobuf package (its compiled upb backend) into the message classes protoc made of
k8s.io/api's generated.proto (k8spb/, scripts/gen-protobuf). From a message to the model the way is the JSON
read's: the message becomes the typed shapes of model/wire.py, which model.FINISH turns into the model. That step
is compiled once from the two descriptions (wire's msgspec types, the messages' descriptors): the fields wire names,
read the way the API's JSON would write them (a time as RFC 3339 seconds, a quantity as its string, a map's keys in
order, an empty list or map left out), so both reads give the same model by construction, and a field wire adds is
read from protobuf too (or the build says which field protobuf lacks).

It only says yes or no, as decode.py does: a page it cannot take whole is None, and the caller reads the list again
as JSON, which takes what the API would take and names what it would not. What the JSON read's types check (enums,
ranges, time patterns) is not checked again here: these objects come from the API server that checked them, and the
model checks the rest for both. The hand-kept parts are _INLINED and _ZERO_IS_UNSET; a test classes every optional
field of wire.py so that one added is seen to."""

from __future__ import annotations

import json
import keyword
import operator
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec.inspect as mi

from kubectl_desched.kube import httplog
from kubectl_desched.model import objects as model
from kubectl_desched.model import wire
from kubectl_desched.sanitize import one_line

ACCEPT = "application/vnd.kubernetes.protobuf, application/json"  # as client-go asks: JSON where none is served
MAGIC = b"k8s\x00"  # the first bytes of every protobuf answer, before its runtime.Unknown envelope
KINDS = ("Pod", "Node")  # the big lists; the rest (PDBs, CRDs such as NodeMetric) stay JSON

_TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.Time"
_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
# Go structs inlined in their parent's JSON (`json:",inline"`) are a message of their own in protobuf.
_INLINED = {"k8s.io.api.core.v1.Volume": "volumeSource"}
# Plain Go values (not pointers) with omitempty: protobuf always carries them, JSON leaves their zero out.
_ZERO_IS_UNSET = {"k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta.generation"}


def is_protobuf(data: bytes) -> bool:
    return data[:4] == MAGIC


# --- the first bytes of a page: its continue token and remainingItemCount, before the rest has arrived -------------

def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(data) or shift > 63:
            raise IndexError
        b = data[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return value, i
        shift += 7


def _fields(data: bytes, i: int, end: int) -> Any:
    """(field number, value, where its bytes start) of each field in data[i:end]: a length-delimited field's value is
    its end, a varint's its value. Stops short at the end of what has arrived (IndexError)."""
    while i < end:
        tag, i = _varint(data, i)
        number, kind = tag >> 3, tag & 7
        if kind == 0:
            value, i = _varint(data, i)
            yield number, value, i
        elif kind == 2:
            length, i = _varint(data, i)
            yield number, i + length, i
            i += length
        elif kind == 1:
            i += 8
        elif kind == 5:
            i += 4
        else:
            raise IndexError  # group markers: not a message of the API's


def head(first: bytes) -> tuple[str | None, int | None]:
    """The continue token ("" on the last page) and metadata.remainingItemCount that a protobuf page's first bytes
    name; (None, None) when its list metadata is not all within them. Envelope: runtime.Unknown, whose field 2 (raw)
    holds the list, whose field 1 is its ListMeta (continue: 3, remainingItemCount: 4), written before the items."""
    try:
        for number, end, start in _fields(first, len(MAGIC), len(first)):
            if number != 2:
                continue
            for inner, meta_end, meta_start in _fields(first, start, end):
                if inner != 1:
                    break
                if meta_end > len(first):
                    return None, None
                token, left = "", None
                for field, value, at in _fields(first, meta_start, meta_end):
                    if field == 3:
                        token = first[at:value].decode()
                    elif field == 4:
                        left = value if value < 1 << 63 else None  # an int64: a negative count says nothing
                return token, left
            return None, None
    except (IndexError, UnicodeDecodeError):
        pass
    return None, None


# --- a page ------------------------------------------------------------------------------------------------------

def page(data: bytes, kind: str) -> tuple[list[Any], str] | None:
    """A protobuf LIST page's objects as the model, and its continue token; None when it must be read as JSON."""
    c = _classes()
    if c is None:
        return None
    finish = model.FINISH[kind]
    out: list[Any] = []
    try:
        raw = _opened(c, data, ("", f"{kind}List"))  # a list's envelope may leave its kind out
        if raw is None:
            return None
        found = c.lists[kind]()
        found.ParseFromString(raw)
        del raw
        to_wire = c.convert[kind]
        for m in found.items:
            out.append(finish(to_wire(m)))
    except c.refused as e:
        if httplog.enabled(6):  # the JSON read names what is wrong with an object; this says why it was asked for
            httplog.log(f'"Protobuf" kind="{kind}" item={len(out)} read="again as JSON" why="{one_line(e, 300)}"')
        return None
    return out, getattr(found.metadata, "continue")


def available() -> bool:
    """Whether the protobuf package and the classes load here (else a --protobuf read asks for JSON)."""
    return _classes() is not None


def status_json(data: bytes) -> str | None:
    """An error answer written as protobuf (a metav1.Status in its envelope) as the JSON Status the same error is
    written as, so that its message is read as any other; None when it is not one."""
    c = _classes()
    if c is None:
        return None
    try:
        raw = _opened(c, data, ("Status",))
        if raw is None:
            return None
        status = c.status()
        status.ParseFromString(raw)
    except c.refused:  # DecodeError: not a Status after all
        return None
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": status.status, "message": status.message,
                       "reason": status.reason, "code": status.code})


# What makes a page one to read as JSON, besides protobuf's DecodeError: a value the model refuses, a time Go's JSON
# cannot write (ValueError, OSError, OverflowError), nesting deeper than Python goes.
_REFUSED: tuple[type[Exception], ...] = (model.ParseError, ValueError, TypeError, KeyError, OSError, OverflowError,
                                         RecursionError)
class _Classes(NamedTuple):
    envelope: Any  # runtime.Unknown, around every protobuf answer
    lists: dict[str, Any]  # PodList, NodeList by kind
    convert: dict[str, Callable[[Any], Any]]  # a message to its model/wire.py shape, by kind
    status: Any  # metav1.Status, an error answer's
    refused: tuple[type[Exception], ...]  # DecodeError and _REFUSED


_built: _Classes | None = None
_unavailable = False
_building = threading.Lock()  # the nodes and the pods are read on threads of their own


def _opened(c: _Classes, data: bytes, kinds: tuple[str, ...]) -> bytes | None:
    """The bytes of the object an answer's envelope holds; None when it names none of these kinds, or is encoded."""
    envelope = c.envelope()
    envelope.ParseFromString(memoryview(data)[len(MAGIC):])
    if envelope.contentEncoding or envelope.typeMeta.kind not in kinds:
        return None
    raw: bytes = envelope.raw
    return raw


def _classes() -> _Classes | None:
    """The message classes, compiled converters and the parse error, made on first use (the JSON paths never import
    protobuf); None when the protobuf package cannot be had (an older one than the classes need, none at all): then
    everything is read as JSON, said once at -v 6."""
    global _built, _unavailable
    if _built is not None:
        return _built
    with _building:
        if _built is None and not _unavailable:
            try:
                from google.protobuf.message import DecodeError

                from kubectl_desched.kube.k8spb import core_v1_pb2, meta_v1_pb2, runtime_pb2
            except Exception as e:  # ImportError, or the classes' runtime_version.VersionError
                _unavailable = True
                if httplog.enabled(6):
                    httplog.log(f'"Protobuf" read="as JSON" why="{one_line(e, 300)}"')
                return None
            core: Any = core_v1_pb2  # its classes are made when it is imported: a type checker sees none
            pairs = {"Pod": (wire.Pod, core.Pod), "Node": (wire.Node, core.Node)}
            lists = {"Pod": core.PodList, "Node": core.NodeList}
            envelope: Any = runtime_pb2
            meta: Any = meta_v1_pb2
            _built = _Classes(envelope.Unknown, lists,
                              {k: compile_converter(s, m.DESCRIPTOR) for k, (s, m) in pairs.items()}, meta.Status,
                              (DecodeError, *_REFUSED))
    return _built


# --- from a message to model/wire.py's shape: compiled once ---------------------------------------------------------

class NotInProtobuf(TypeError):
    """A field wire.py reads that the message has not: the converter cannot be built."""


_times: dict[int, str] = {}
_days: dict[int, str] = {}
_TWO = [f"{n:02d}" for n in range(60)]
_KEPT = 1 << 16  # formatted times and dates kept, each


def _time(seconds: int, message: Any) -> str:
    """A metav1.Time as its JSON writes it: RFC 3339 in whole seconds, UTC. Go's zero time is written as an empty
    message (JSON: null), which the JSON read takes as ""; 1970-01-01T00:00:00Z has its seconds, 0, written. A
    year Go's JSON cannot write (outside 0 to 9999) is a ValueError: the page is read as JSON."""
    if seconds == 0 and not message.HasField("seconds"):
        return ""
    day, moment = divmod(seconds, 86400)  # most times differ, most days do not: a date is formatted once a day
    date = _days.get(day)
    if date is None:
        try:
            tm = time.gmtime(day * 86400)
        except (OSError, OverflowError):
            raise ValueError(f"a time {seconds} s from 1970") from None
        if not 0 <= tm.tm_year <= 9999:
            raise ValueError(f"a time in the year {tm.tm_year}")
        date = f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d}T"
        if len(_days) < _KEPT:
            _days[day] = date
    hour, moment = divmod(moment, 3600)
    text = date + _TWO[hour] + ":" + _TWO[moment // 60] + ":" + _TWO[moment % 60] + "Z"
    if seconds and len(_times) < _KEPT:  # 0 is never kept: whether it is 1970 or no time, the message says
        _times[seconds] = text
    return text


def _empty_dir(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if m.medium:
        out["medium"] = m.medium
    if m.HasField("sizeLimit"):
        out["sizeLimit"] = m.sizeLimit.string
    return out


# Values most pods share (replicas' owners, the default tolerations, a template's requests): one shape is made
# per distinct encoding, and the pods share it (the model never changes a wire shape). Equal bytes are equal values;
# equal values with bytes in another order (a map's) are only made twice. (Not conditions: their times differ.)
_SHARED = {"k8s.io.api.core.v1.Toleration", "k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference",
           "k8s.io.api.core.v1.ResourceRequirements"}
_SHARED_LIMIT = 1 << 14  # per shape, for the process: a cache, not a copy of the cluster


# Fields wire.py keeps as plain JSON (dict[str, Any]): made as the API's JSON would have them.
_AS_JSON: dict[str, Callable[[Any], dict[str, Any]]] = {"k8s.io.api.core.v1.EmptyDirVolumeSource": _empty_dir}


class _Compiler:
    def __init__(self) -> None:
        self.names: dict[tuple[type, str], str] = {}
        self.source: list[str] = []
        self.env: dict[str, Any] = {"_time": _time, "_times": _times, "_string": operator.attrgetter("string")}

    def struct(self, cls: type, desc: Any) -> str:
        """The name of the function that makes `cls` of a `desc` message, its source added once."""
        key = (cls, desc.full_name)
        if key in self.names:
            return self.names[key]
        name = f"_{cls.__name__}_{len(self.names)}"
        self.names[key] = name
        self.env[f"{name}_type"] = cls
        args = [f"{f.name}={self.field(f, desc)}" for f in mi.type_info(cls).fields]  # type: ignore[attr-defined]
        made = f"{name}_type({', '.join(args)})"
        lines = [f"def {name}(m):"]
        if desc.full_name in _INLINED:  # read once: each read of a message field makes a new wrapper
            lines.append(f"    inline = m.{_INLINED[desc.full_name]}")
        if desc.full_name in _SHARED:
            self.env[f"{name}_made"] = {}
            lines += ["    key = m.SerializeToString()", f"    found = {name}_made.get(key)", "    if found is None:",
                      f"        found = {made}", f"        if len({name}_made) < {_SHARED_LIMIT}:",
                      f"            {name}_made[key] = found", "    return found"]
        else:
            lines.append(f"    return {made}")
        self.source.append("\n".join(lines) + "\n")
        return name

    def field(self, f: Any, desc: Any) -> str:
        holder, pd = "m", desc.fields_by_name.get(f.encode_name)
        if pd is None and desc.full_name in _INLINED:
            inline = _INLINED[desc.full_name]
            holder, pd = "inline", desc.fields_by_name[inline].message_type.fields_by_name.get(f.encode_name)
        if pd is None:
            raise NotInProtobuf(f"{desc.full_name} has no field {f.encode_name}")
        name = pd.name
        value = f"getattr({holder}, {name!r})" if keyword.iskeyword(name) else f"{holder}.{name}"
        has = f"{holder}.HasField({name!r})"
        t, optional = _unwrap(f.type)
        message = pd.message_type
        # Python 3.11 runs each comprehension as a call of its own: what is made here is made by map(), zip() and
        # the containers' own constructors, and an empty field (most are) costs one length check.
        if message is not None and message.GetOptions().map_entry:
            item = message.fields_by_name["value"]
            if item.message_type is not None and item.message_type.full_name == _QUANTITY:
                values = "map(_string, map(_m.__getitem__, _k))"
            elif item.message_type is None:
                values = "map(_m.__getitem__, _k)"
            else:
                raise NotInProtobuf(f"{desc.full_name}.{name}: a map of {item.message_type.full_name}")
            # keys sorted, as Go's JSON writes them (upb keeps a hash order)
            return f"(dict(zip(_k := sorted(_m), {values})) if (_m := {value}) else {None if optional else {}})"
        if _is_repeated(pd):
            made = "tuple" if isinstance(t, mi.VarTupleType) else "list"
            empty = "None" if optional else f"{made}()"
            if message is not None:
                item_type = _unwrap(t.item_type)[0]
                return f"({made}(map({self.struct(item_type.cls, message)}, _r)) if (_r := {value}) else {empty})"
            return f"({made}(_r) if (_r := {value}) else {empty})"
        if message is not None:
            if message.full_name == _TIME:
                # no HasField: an absent time reads as an empty message, Go's zero time, which is ""
                return f"(_times.get(_s := {value}.seconds) or _time(_s, {value}))"
            if message.full_name == _QUANTITY:
                expr = f"{value}.string"
            elif message.full_name in _AS_JSON:
                fn = f"_json_{len(self.env)}"
                self.env[fn] = _AS_JSON[message.full_name]
                expr = f"{fn}({value})"
            elif isinstance(t, mi.StructType):
                expr = f"{self.struct(t.cls, message)}({value})"
            else:
                raise NotInProtobuf(f"{desc.full_name}.{name}: {message.full_name} as {t}")
            return f"({expr} if {has} else None)" if optional else expr
        if f"{desc.full_name}.{name}" in _ZERO_IS_UNSET:
            return f"({value} or None)"
        return f"({value} if {has} else None)" if optional else value


def _unwrap(t: Any) -> tuple[Any, bool]:
    """A field's type without its constraints, and whether it may be None."""
    optional = False
    if isinstance(t, mi.UnionType) and any(isinstance(u, mi.NoneType) for u in t.types):
        rest = [u for u in t.types if not isinstance(u, mi.NoneType)]
        optional, t = True, rest[0] if len(rest) == 1 else mi.UnionType(tuple(rest))
    while isinstance(t, mi.Metadata):
        t = t.type
    return t, optional


def _is_repeated(pd: Any) -> bool:
    flag = getattr(pd, "is_repeated", None)  # protobuf 6.31 and later; `label` is deprecated there
    return bool(flag) if flag is not None else pd.label == pd.LABEL_REPEATED


def compile_converter(cls: type, desc: Any) -> Callable[[Any], Any]:
    """A function from a message of `desc` to `cls` (a model/wire.py Struct), as straight-line code."""
    c = _Compiler()
    top = c.struct(cls, desc)
    exec(compile("\n".join(c.source), f"<protobuf to {cls.__name__}>", "exec"), c.env)
    fn: Callable[[Any], Any] = c.env[top]
    return fn
