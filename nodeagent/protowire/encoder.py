"""An object's JSON shape -> the bytes k8s.io/api's generated Marshal writes, and apimachinery's envelopes.

Why one encoder for the node and the API server: the kubelet's Pods API carries each pod as the raw
`(*v1.Pod).Marshal()` message, and kube-apiserver answers `application/vnd.kubernetes.protobuf`
with the same messages wrapped in the `k8s\\x00` runtime.Unknown envelope (apimachinery
runtime/serializer/protobuf), lists as the kind's List message and watch events as metav1.WatchEvent
frames. Both follow the same tables (nodeagent.protowire), so the rules live here once: the JSON
value a Go client would decode into the struct is encoded as that struct's Marshal encodes it.
gogo's generated code writes fields in ascending number, every non-pointer field (zero values and
empty nested messages included), pointer fields and `[]byte` fields only when set, repeated numbers
unpacked and map entries sorted by key; metav1.Time keeps whole seconds, MicroTime microseconds, a
zero Time is an empty message. JSON fields the tables do not name are left out, as a Go decoder of
the JSON would drop them. Pure: dicts in, bytes out.
"""

from __future__ import annotations

import base64
import datetime
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from nodeagent.errors import NodeAgentError
from nodeagent.protowire.notation import SCALARS, SCHEMA_OR, Field, Message

MAGIC = b"k8s\x00"
"""The prefix apimachinery's protobuf serializer writes before the runtime.Unknown envelope."""

_MASK64 = (1 << 64) - 1
_VARINT, _FIXED64, _BYTES = 0, 1, 2
_GO_ZERO = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_SMALL = tuple(bytes((i,)) for i in range(0x80))


class EncodeError(NodeAgentError):
    """The JSON cannot be encoded (a value of the wrong type); the text names the field."""


class Memo:
    """The bytes of messages already encoded, by the identity of the dict they were encoded from.

    Why: the API server encodes stored versions, and a stored version is immutable and shares every
    unchanged dict with the version it replaced (the store's version sharing) and its managedFields'
    FieldsV1 trees with other objects (their interning). One version is written several times (the
    answer to its write, one watch frame per media type and scope, every LIST and GET that includes
    it), and a new version differs from the old one in a few fields: with the bytes of each
    sub-message remembered, only the dicts that changed are walked again. An entry keeps its dict
    alive, so an id is never reused while it names an entry; only callers whose documents (and every
    dict in them) are never changed after they were encoded may pass a memo (the store's versions and
    answers built around them, not documents assembled from live mutable state). Bounded in bytes:
    past `max_bytes` the memo starts over (a parent's bytes include its children's, so the bound is
    on the sum of every level; 4 MiB holds the versions of the last few seconds at a hundred pods per
    second, which is when a version's answer, its frames and its successor are encoded)."""

    def __init__(self, max_bytes: int = 4 << 20) -> None:
        self._max_bytes = max_bytes
        self._entries: dict[tuple[int, int], tuple[Any, bytes]] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """The bytes held (the sum of every entry's)."""
        return self._bytes

    def get(self, doc: Any, plan: object) -> bytes | None:
        hit = self._entries.get((id(doc), id(plan)))
        if hit is not None and hit[0] is doc:
            return hit[1]
        return None

    def put(self, doc: Any, plan: object, data: bytes) -> None:
        if self._bytes + len(data) > self._max_bytes:
            self._entries.clear()
            self._bytes = 0
            if len(data) > self._max_bytes:
                return
        self._entries[(id(doc), id(plan))] = (doc, data)
        self._bytes += len(data)


def encode_message(package: str, name: str, doc: Mapping[str, Any], memo: Memo | None = None) -> bytes:
    """`doc` (apiVersion/kind are not part of the message) as the bytes of message `package.name`;
    `memo` (see Memo) reuses the bytes of the dicts it has seen."""
    return _message(package, name, doc, name, memo)


def encode_list(package: str, item: str, doc: Mapping[str, Any], memo: Memo | None = None) -> bytes:
    """A `<Kind>List` (or PartialObjectMetadataList): every upstream List message is
    {metadata ListMeta = 1, items repeated <item> = 2}, so one rule writes them all."""
    out = bytearray(_delimited(1, _message("meta", "ListMeta", doc.get("metadata"), "List.metadata")))
    items = doc.get("items")
    if items is not None:
        if not isinstance(items, list):
            raise EncodeError(f"List.items: expected a list, got {type(items).__name__}")
        for i, obj in enumerate(items):
            out += _delimited(2, _message(package, item, obj, f"List.items[{i}]", memo))
    return bytes(out)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """`k8s\\x00` + runtime.Unknown{typeMeta, raw, contentEncoding "", contentType ""}, field for
    field as runtime.Unknown.NestedMarshalTo writes it (both empty strings written)."""
    type_meta = _delimited(1, api_version.encode()) + _delimited(2, kind.encode())
    return MAGIC + _delimited(1, type_meta) + _delimited(2, raw) + b"\x1a\x00\x22\x00"


def watch_event(event_type: str, object_envelope: bytes) -> bytes:
    """metav1.WatchEvent{type, object: RawExtension{raw}} as the protobuf stream serializer writes it
    (no envelope of its own: the raw serializer), framed by its 4-byte big-endian length."""
    message = _delimited(1, event_type.encode()) + _delimited(2, _delimited(1, object_envelope))
    return len(message).to_bytes(4, "big") + message


def _table(package: str, name: str) -> tuple[str, Message]:
    # the tables (protowire.packages, 17 modules) are imported with the first plan built, as _PLANS says
    from nodeagent.protowire.packages import resolve

    pkg, table = resolve(package, name)
    if table is None:
        raise EncodeError(f"no protobuf table for message {pkg}.{name.rpartition('.')[2]}")
    return pkg, table


@dataclass(frozen=True)
class _Step:
    """One field as the encoder walks it: precomputed so a message costs a loop, not a table lookup."""

    field: Field
    pkg: str  # the package the field's message type resolves in
    tag: bytes  # the field's tag as a length-delimited (or varint, for scalars) field
    skip_none: bool  # absent means not written: pointers and []byte
    zero: bytes  # what an absent non-pointer scalar writes (its zero value), b"" for other fields


def _plan(package: str, name: str) -> tuple[_Step, ...]:
    pkg, table = _table(package, name)
    steps = []
    for _number, field in sorted(table.items()):  # ascending numbers, as gogo's Marshal writes
        wire = _VARINT if field.kind in SCALARS and field.kind not in ("string", "bytes") and \
            field.label != "{}" else _BYTES
        if field.kind == "double" and field.label != "{}":
            wire = _FIXED64
        zero = b""
        if field.kind in SCALARS and field.kind != "bytes" and field.label == "" and not field.pointer:
            zero = _tag(field.number, wire) + (bytes(8) if wire == _FIXED64 else b"\x00")
        steps.append(_Step(field, pkg, _tag(field.number, wire), field.pointer or field.kind == "bytes", zero))
    return tuple(steps)


def _message(package: str, name: str, doc: Any, where: str, memo: Memo | None = None) -> bytes:
    if doc is None:
        doc = {}
        memo = None  # a new dict each time: nothing to reuse
    elif not isinstance(doc, dict) and not isinstance(doc, Mapping):
        raise EncodeError(f"{where}: expected an object, got {type(doc).__name__}")
    pkg, _, short = name.rpartition(".")
    key = (pkg or package, short)
    steps = _PLANS.get(key)
    if steps is None:
        from nodeagent.protowire.packages import PACKAGES  # see _PLANS

        if short not in PACKAGES.get(key[0], ()):
            _table(package, name)  # raises, naming the message
            raise AssertionError("unreachable")
        steps = _PLANS.setdefault(key, _plan(*key))  # the stored one: Memo keys by its identity
    if memo is not None and type(doc) is dict:
        known = memo.get(doc, steps)
        if known is not None:
            return known
        data = _fields(steps, doc, where, memo)
        memo.put(doc, steps, data)
        return data
    return _fields(steps, doc, where, None)


def _fields(steps: tuple[_Step, ...], doc: Mapping[str, Any], where: str, memo: Memo | None) -> bytes:
    out = bytearray()
    get = doc.get
    for step in steps:
        field = step.field
        label = field.label
        if label == "^":
            out += _delimited(field.number, _message(step.pkg, field.kind, doc, where, memo))
            continue
        value = get(field.name)
        if label == "":
            if value is None:
                if step.skip_none:
                    continue
                if step.zero:  # an absent string, number or bool: its zero value
                    out += step.zero
                    continue
            if type(value) is str and field.kind == "string":  # the common case, inline
                data = value.encode()
                out += step.tag
                out += _varint(len(data))
                out += data
                continue
            out += _value(step.pkg, field, field.number, value, where, None, memo)
        elif label == "[]":
            if value is not None:
                if not isinstance(value, list):
                    raise EncodeError(f"{where}.{field.name}: expected a list, got {type(value).__name__}")
                for i, item in enumerate(value):
                    out += _value(step.pkg, field, field.number, item, where, i, memo)
        elif value is not None:  # "{}"
            if not isinstance(value, Mapping):
                raise EncodeError(f"{where}.{field.name}: expected an object, got {type(value).__name__}")
            for key in sorted(value):
                entry = _delimited(1, str(key).encode()) + _value(step.pkg, field, 2, value[key], where, key, memo)
                out += _delimited(field.number, entry)
    return bytes(out)


def _value(pkg: str, field: Field, number: int, value: Any, where: str, index: int | str | None = None,
           memo: Memo | None = None) -> bytes:
    """One value of `field` as field `number` (2 for a map entry's value). The error path is built
    only when needed: `where` is the message's, the field's name and `index` are added here."""
    kind = field.kind
    if kind in SCALARS:
        if kind == "string" and type(value) is str:
            data = value.encode()
            return _tag(number, _BYTES) + _varint(len(data)) + data
        return _scalar(kind, number, value, _path(where, field, index))
    if kind in ("Time", "MicroTime"):
        return _delimited(number, _timestamp(value, micro=kind == "MicroTime", where=_path(where, field, index)))
    if kind == "Quantity":
        return _delimited(number, _delimited(1, _quantity(value, _path(where, field, index)).encode()))
    if kind == "IntOrString":
        return _delimited(number, _int_or_string(value, _path(where, field, index)))
    if kind in ("FieldsV1", "RawExtension"):
        # both carry their JSON as `raw` (field 1), left out when nil
        if value is None:
            return _delimited(number, b"")
        if memo is not None and type(value) is dict:  # FieldsV1 trees are shared between objects
            raw = memo.get(value, kind)
            if raw is None:
                raw = orjson.dumps(value)
                memo.put(value, kind, raw)
            return _delimited(number, _delimited(1, raw))
        return _delimited(number, _delimited(1, orjson.dumps(value)))
    if kind == "JSON":
        # apiextensions' JSON: the value's text as `raw`; a JSON null leaves Raw nil (an empty message)
        return _delimited(number, b"" if value is None else _delimited(1, orjson.dumps(value)))
    if kind in SCHEMA_OR:
        return _delimited(number, _schema_or(pkg, kind, value, _path(where, field, index)))
    if kind == "StringList":
        if value is None:
            value = []
        here = _path(where, field, index)
        if not isinstance(value, list):
            raise EncodeError(f"{here}: expected a list, got {type(value).__name__}")
        return _delimited(number, b"".join(_scalar("string", 1, v, f"{here}[{i}]") for i, v in enumerate(value)))
    return _delimited(number, _message(pkg, kind, value, _path(where, field, index), memo))


def _schema_or(pkg: str, kind: str, value: Any, where: str) -> bytes:
    """apiextensions' JSONSchemaPropsOr{Array,Bool,StringArray} as their Marshal writes what their
    UnmarshalJSON made of `value` (marshal.go): an object is the schema (OrBool's `allows` true with
    it), an array the schemas or the strings, a boolean OrBool's `allows`; OrBool's allows is always
    written, the other fields only when set."""
    if isinstance(value, Mapping):
        schema = _delimited(2 if kind == "JSONSchemaPropsOrBool" else 1,
                            _message(pkg, "JSONSchemaProps", value, where))
        return b"\x08\x01" + schema if kind == "JSONSchemaPropsOrBool" else schema
    if kind == "JSONSchemaPropsOrBool":
        if value is not None and not isinstance(value, bool):
            raise EncodeError(f"{where}: boolean or JSON schema expected")
        return b"\x08\x01" if value else b"\x08\x00"
    if value is None:
        return b""
    if not isinstance(value, list):
        raise EncodeError(f"{where}: expected an object or a list, got {type(value).__name__}")
    if kind == "JSONSchemaPropsOrArray":
        return b"".join(_delimited(2, _message(pkg, "JSONSchemaProps", item, f"{where}[{i}]"))
                        for i, item in enumerate(value))
    return b"".join(_scalar("string", 2, item, f"{where}[{i}]") for i, item in enumerate(value))


def _path(where: str, field: Field, index: int | str | None) -> str:
    return f"{where}.{field.name}" if index is None else f"{where}.{field.name}[{index}]"


def _scalar(kind: str, number: int, value: Any, where: str) -> bytes:
    if kind == "string":
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise EncodeError(f"{where}: expected a string, got {type(value).__name__}")
        return _delimited(number, value.encode())
    if kind == "bytes":
        if value is None:
            value = ""
        try:
            raw = base64.b64decode(value, validate=True)
        except (TypeError, ValueError):
            raise EncodeError(f"{where}: expected base64 bytes") from None
        return _delimited(number, raw)
    if kind == "bool":
        if value is None:
            value = False
        if not isinstance(value, bool):
            raise EncodeError(f"{where}: expected a boolean, got {type(value).__name__}")
        return _tag(number, _VARINT) + (b"\x01" if value else b"\x00")
    if kind == "double":
        if value is None:
            value = 0.0
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise EncodeError(f"{where}: expected a number, got {type(value).__name__}")
        return _tag(number, _FIXED64) + struct.pack("<d", value)
    if value is None:
        value = 0
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise EncodeError(f"{where}: expected an integer, got {value!r}")
    return _tag(number, _VARINT) + _varint(int(value) & _MASK64)


def _quantity(value: Any, where: str) -> str:
    if value is None:
        return "0"
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise EncodeError(f"{where}: expected a quantity, got {type(value).__name__}")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _int_or_string(value: Any, where: str) -> bytes:
    if isinstance(value, str):
        kind, int_val, str_val = 1, 0, value
    elif isinstance(value, int) and not isinstance(value, bool):
        kind, int_val, str_val = 0, value, ""
    elif value is None:
        kind, int_val, str_val = 0, 0, ""
    else:
        raise EncodeError(f"{where}: expected an integer or a string, got {type(value).__name__}")
    return (_tag(1, _VARINT) + _varint(kind) + _tag(2, _VARINT) + _varint(int_val & _MASK64)
            + _delimited(3, str_val.encode()))


def _timestamp(value: Any, *, micro: bool, where: str) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, str):
        raise EncodeError(f"{where}: expected an RFC 3339 time, got {type(value).__name__}")
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise EncodeError(f"{where}: {value!r} is not an RFC 3339 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    if moment == _GO_ZERO:
        return b""
    delta = moment - _EPOCH
    seconds = delta.days * 86400 + delta.seconds
    nanos = delta.microseconds * 1000 if micro else 0
    return _tag(1, _VARINT) + _varint(seconds & _MASK64) + _tag(2, _VARINT) + _varint(nanos)


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _delimited(number: int, payload: bytes) -> bytes:
    return _tag(number, _BYTES) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_PLANS: dict[tuple[str, str], tuple[_Step, ...]] = {}
"""Each table's walk, built from the constant tables the first time a message of it is encoded (pure data,
like the tables themselves; of two threads building the same one, both use the first stored). Built on
demand, not at import: the plans of all ~520 messages cost ~77 M instructions, ~2% of a restart to
READY=1, whose start encodes none of them, and the tables they are built from (protowire.packages) ~49 M
more (issue 25)."""
