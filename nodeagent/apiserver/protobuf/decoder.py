"""Kubernetes protobuf request bodies decoded into the JSON dicts the JSON path produces.

Why: client-go's typed clientsets (and kubectl's `create` generators, and every typed Delete with
its DeleteOptions body) send `application/vnd.kubernetes.protobuf` for built-in kinds unless told
otherwise, so a DRA driver on the upstream kubeletplugin helper could not write a ResourceSlice
against a JSON-only server. The wire format is apimachinery's: the magic `k8s\\x00`, then a
runtime.Unknown {typeMeta{apiVersion, kind}, raw, contentEncoding, contentType} whose `raw` is the
typed message. The typed messages are read through hand-written tables (nodeagent.protowire:
field number -> JSON name, type, presence); the value each field yields is what Go's
encoding/json would write for the struct the Go decoder fills, so the registry sees the same
object a JSON client would have sent. Pure: bytes in, dicts out, no I/O.
"""

from __future__ import annotations

import base64
import datetime
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from nodeagent.apiserver.protobuf.kinds import kind_message
from nodeagent.protowire.notation import BUILTINS, SCALARS, SCHEMA_OR, Field

MAGIC = b"k8s\x00"
_MASK64 = (1 << 64) - 1
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
# Go's zero time.Time as Unix seconds: a Time that carries it is "unset" for encoding/json's
# point of view as much as an empty Time message is.
_GO_ZERO_SECONDS = -62135596800
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class ProtobufError(ValueError):
    """The body is not a protobuf message this server can read; the text names the problem."""


class UnknownKind(ProtobufError):
    """A well-formed envelope for a kind the tables do not describe (the caller answers 415)."""

    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(f"the server cannot decode protobuf for kind {kind!r} in version {api_version!r}")
        self.api_version = api_version
        self.kind = kind


def decode(body: bytes) -> tuple[dict[str, Any], str, str]:
    """One protobuf request body -> (object as a JSON dict with apiVersion and kind, apiVersion, kind)."""
    if not body:
        raise ProtobufError("empty data")
    if not body.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, expected prefix "
                            f"[{' '.join(str(b) for b in MAGIC)}]")
    if len(body) == len(MAGIC):
        raise ProtobufError("empty body")
    api_version, kind, raw, raw_at = _envelope(body[len(MAGIC):], len(MAGIC))
    if not kind:
        raise ProtobufError("the protobuf envelope names no kind")
    target = kind_message(api_version, kind)
    if target is None:
        raise UnknownKind(api_version, kind)
    package, name = target
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    obj.update(_message(package, name, raw, raw_at))
    return obj, api_version, kind


def decode_answer(body: bytes) -> dict[str, Any]:
    """One protobuf answer of an API server (an object, a `<Kind>List`, a Status, PartialObjectMetadata
    or its List) -> its JSON dict. Why apart from decode(): a request body is only ever one object of
    a kind the registry takes, while clients of the API (the node's, the tests comparing servers) read
    lists and errors too."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the answer does not start with the protobuf prefix")
    api_version, kind, raw, raw_at = _envelope(body[len(MAGIC):], len(MAGIC))
    out: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    if kind in ("Status", "PartialObjectMetadata"):
        out.update(_message("meta", kind, raw, raw_at))
        return out
    item = ("meta", "PartialObjectMetadata") if kind == "PartialObjectMetadataList" else \
        kind_message(api_version, kind[:-4]) if kind.endswith("List") else None
    if item is None:
        target = kind_message(api_version, kind)
        if target is None:
            raise UnknownKind(api_version, kind)
        out.update(_message(target[0], target[1], raw, raw_at))
        return out
    out["metadata"], out["items"] = {}, []
    for num, wire, _ival, bval, at in _fields(raw, raw_at):
        _expect(wire, _BYTES, f"{kind} field {num}", at)
        if num == 1:
            out["metadata"] = _message("meta", "ListMeta", bval, at)
        elif num == 2:
            out["items"].append(_message(item[0], item[1], bval, at))
    return out


def decode_watch(data: bytes) -> tuple[list[tuple[str, dict[str, Any]]], bytes]:
    """A protobuf watch stream's complete frames (4-byte big-endian length, metav1.WatchEvent) ->
    (type, object) pairs, and the bytes of an incomplete last frame."""
    events: list[tuple[str, dict[str, Any]]] = []
    pos = 0
    while len(data) - pos >= 4:
        size = int.from_bytes(data[pos:pos + 4], "big")
        if len(data) - pos - 4 < size:
            break
        typ, obj = "", b""
        for num, wire, _ival, bval, at in _fields(data[pos + 4:pos + 4 + size], pos + 4):
            _expect(wire, _BYTES, f"WatchEvent field {num}", at)
            if num == 1:
                typ = bval.decode("utf-8", "replace")
            elif num == 2:
                for rnum, rwire, _i, rval, rat in _fields(bval, at):
                    if rnum == 1:
                        _expect(rwire, _BYTES, "RawExtension.raw", rat)
                        obj = rval
        events.append((typ, decode_answer(obj)))
        pos += 4 + size
    return events, data[pos:]


def _envelope(data: bytes, base: int) -> tuple[str, str, bytes, int]:
    api_version = kind = ""
    raw, raw_at = b"", base
    for num, wire, _ival, bval, at in _fields(data, base):
        if num == 1:
            _expect(wire, _BYTES, "Unknown.typeMeta", at)
            for tnum, twire, _i, tval, tat in _fields(bval, at):
                if tnum in (1, 2):
                    _expect(twire, _BYTES, "TypeMeta", tat)
                    if tnum == 1:
                        api_version = tval.decode("utf-8", "replace")
                    else:
                        kind = tval.decode("utf-8", "replace")
        elif num == 2:
            _expect(wire, _BYTES, "Unknown.raw", at)
            raw, raw_at = bval, at
        elif num == 3:
            _expect(wire, _BYTES, "Unknown.contentEncoding", at)
            if bval:
                raise ProtobufError(f"unsupported content encoding {bval.decode('utf-8', 'replace')!r}")
    return api_version, kind, raw, raw_at


# --- the wire ---


def _varint(data: bytes, pos: int, base: int) -> tuple[int, int]:
    start, result, shift = pos, 0, 0
    while True:
        if pos >= len(data):
            raise ProtobufError(f"truncated varint at offset {base + start}")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError(f"varint longer than 10 bytes at offset {base + start}")


def _fields(data: bytes, base: int) -> Iterator[tuple[int, int, int, bytes, int]]:
    """(field number, wire type, integer value, bytes value, absolute offset of the value).

    A one-byte varint (every tag of these tables, most lengths and small numbers) is read in line: the
    walk runs once per field of every request body (issue 23: kube-scheduler's claim PUTs, bindings and
    Events), and the call per varint was a third of it."""
    pos, end = 0, len(data)
    while pos < end:
        tag_at = pos
        tag = data[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = _varint(data, pos, base)
        num, wire = tag >> 3, tag & 7
        if num == 0:
            raise ProtobufError(f"illegal field number 0 at offset {base + tag_at}")
        at = base + pos
        if wire == _VARINT:
            if pos < end and data[pos] < 0x80:
                value = data[pos]
                pos += 1
            else:
                value, pos = _varint(data, pos, base)
            yield num, wire, value, b"", at
        elif wire == _BYTES:
            if pos < end and data[pos] < 0x80:
                size = data[pos]
                pos += 1
            else:
                size, pos = _varint(data, pos, base)
            if size > end - pos:
                raise ProtobufError(f"truncated length-delimited field {num} at offset {base + pos}: "
                                    f"{size} bytes announced, {len(data) - pos} left")
            yield num, wire, 0, data[pos:pos + size], base + pos
            pos += size
        elif wire in (_FIXED64, _FIXED32):
            width = 8 if wire == _FIXED64 else 4
            if width > len(data) - pos:
                raise ProtobufError(f"truncated {width * 8}-bit field {num} at offset {at}")
            yield num, wire, int.from_bytes(data[pos:pos + width], "little"), b"", at
            pos += width
        else:
            raise ProtobufError(f"unsupported wire type {wire} for field {num} at offset {base + tag_at}")


def _expect(wire: int, want: int, where: str, at: int) -> None:
    if wire != want:
        raise ProtobufError(f"{where}: wire type {wire} where {want} was expected, at offset {at}")


# --- typed messages ---


_NOTHING = object()


@dataclass(frozen=True)
class _Plan:
    """What _message needs of one table, worked out once per (package, message name) instead of per field
    of every body: the table's package, its fields with the names errors give them, and how _finish
    treats each field in declaration order."""

    pkg: str
    fields: dict[int, tuple[Field, str, bool]]
    """Per field number: the field, its name in errors, whether it is a string (read in line)."""
    finish: tuple[tuple[str, Any, bool, bool], ...]
    """(JSON name, the zero written when absent or _NOTHING, inline struct, omitempty scalar)."""


_PLANS: dict[tuple[str, str], _Plan] = {}


def _plan(package: str, name: str) -> _Plan:
    plan = _PLANS.get((package, name))
    if plan is not None:
        return plan
    # the tables (protowire.packages) are imported with the first protobuf body, not into every start (issue 25)
    from nodeagent.protowire.packages import resolve

    pkg, table = resolve(package, name)
    if table is None:
        raise ProtobufError(f"no protobuf table for message {pkg}.{name.rpartition('.')[2]}")
    short = name.rpartition(".")[2]
    scalar = [f.label == "" and f.kind in SCALARS for f in table.values()]
    plan = _Plan(pkg, {num: (f, f"{short}.{f.name}", f.kind == "string") for num, f in table.items()}, tuple(
        (f.name, _zero(f.kind) if plain and f.presence == "!" else _NOTHING, f.label == "^", plain and f.presence == "")
        for f, plain in zip(table.values(), scalar, strict=True)))
    _PLANS[(package, name)] = plan
    return plan


def _message(package: str, name: str, data: bytes, base: int) -> dict[str, Any]:
    plan = _plan(package, name)
    pkg, fields = plan.pkg, plan.fields
    out: dict[str, Any] = {}
    for num, wire, ival, bval, at in _fields(data, base):
        known = fields.get(num)
        if known is None:
            continue  # unknown fields are skipped, as the Go decoder does
        field, where, string = known
        if string and wire == _BYTES and field.label != "{}":
            if field.label:
                out.setdefault(field.name, []).append(bval.decode("utf-8", "replace"))
            else:
                out[field.name] = bval.decode("utf-8", "replace")
        elif field.label == "[]":
            out.setdefault(field.name, []).extend(_repeated(pkg, field, wire, ival, bval, at, where))
        elif field.label == "{}":
            _expect(wire, _BYTES, where, at)
            key, value = _entry(pkg, field, bval, at, where)
            out.setdefault(field.name, {})[key] = value
        else:
            out[field.name] = _single(pkg, field, wire, ival, bval, at, where)
    return _finish(plan, out)


def _finish(plan: _Plan, out: dict[str, Any]) -> dict[str, Any]:
    """Presence as encoding/json sees the Go struct: omitempty zeros dropped, pointers kept,
    non-omitempty scalars always written, unset times dropped, inline structs flattened."""
    done: dict[str, Any] = {}
    for name, zero, inline, omitempty in plan.finish:
        if name not in out:
            if zero is not _NOTHING:
                done[name] = zero
            continue
        value = out[name]
        if value is None:
            continue
        if inline:
            done.update(value)
            continue
        if omitempty and value in ("", 0, False):
            continue
        done[name] = value
    return done


def _zero(kind: str) -> Any:
    return {"string": "", "bytes": "", "bool": False}.get(kind, 0)


def _repeated(pkg: str, field: Field, wire: int, ival: int, bval: bytes, at: int, where: str) -> list[Any]:
    if field.kind in SCALARS and field.kind not in ("string", "bytes") and wire == _BYTES:
        # packed encoding of a repeated number: a run of varints in one length-delimited field
        values, pos = [], 0
        while pos < len(bval):
            raw, pos = _varint(bval, pos, at)
            values.append(_scalar(field.kind, _VARINT, raw, b"", at, where))
        return values
    return [_single(pkg, field, wire, ival, bval, at, where)]


def _entry(pkg: str, field: Field, data: bytes, base: int, where: str) -> tuple[str, Any]:
    key, value, seen = "", None, False
    for num, wire, ival, bval, at in _fields(data, base):
        if num == 1:
            _expect(wire, _BYTES, f"{where} key", at)
            key = bval.decode("utf-8", "replace")
        elif num == 2:
            value, seen = _single(pkg, field, wire, ival, bval, at, f"{where}[{key}]"), True
    if not seen:
        value = _single(pkg, field, _VARINT if field.kind in SCALARS and field.kind not in ("string", "bytes")
                        else _BYTES, 0, b"", base, where)
    return key, value


def _single(pkg: str, field: Field, wire: int, ival: int, bval: bytes, at: int, where: str) -> Any:
    if field.kind in SCALARS:
        return _scalar(field.kind, wire, ival, bval, at, where)
    _expect(wire, _BYTES, where, at)
    if field.kind in SCHEMA_OR:
        return _schema_or(pkg, field.kind, bval, at, where)
    if field.kind in BUILTINS:
        return _builtin(field.kind, bval, at, where)
    return _message(pkg, field.kind, bval, at)


def _schema_or(pkg: str, kind: str, data: bytes, base: int, where: str) -> Any:
    """apiextensions' JSONSchemaPropsOr{Array,Bool,StringArray} as their MarshalJSON writes them
    (marshal.go): OrBool the schema when set, else its `allows`; the others their array when it
    has items, else the schema (null when neither)."""
    schema: dict[str, Any] | None = None
    many: list[Any] = []
    allows = False
    schema_field = 2 if kind == "JSONSchemaPropsOrBool" else 1
    for num, wire, ival, bval, at in _fields(data, base):
        if num == schema_field:
            _expect(wire, _BYTES, where, at)
            schema = _message(pkg, "JSONSchemaProps", bval, at)
        elif kind == "JSONSchemaPropsOrBool" and num == 1:
            allows = _scalar("bool", wire, ival, bval, at, where)
        elif kind == "JSONSchemaPropsOrArray" and num == 2:
            _expect(wire, _BYTES, where, at)
            many.append(_message(pkg, "JSONSchemaProps", bval, at))
        elif kind == "JSONSchemaPropsOrStringArray" and num == 2:
            many.append(_scalar("string", wire, ival, bval, at, where))
    if kind == "JSONSchemaPropsOrBool":
        return schema if schema is not None else allows
    return many if many else schema


def _scalar(kind: str, wire: int, ival: int, bval: bytes, at: int, where: str) -> Any:
    if kind == "string":
        _expect(wire, _BYTES, where, at)
        return bval.decode("utf-8", "replace")
    if kind == "bytes":
        _expect(wire, _BYTES, where, at)
        return base64.b64encode(bval).decode("ascii")
    if kind == "double":
        _expect(wire, _FIXED64, where, at)
        number = struct.unpack("<d", ival.to_bytes(8, "little"))[0]
        # encoding/json writes a float64 without a fraction as an integer (1, not 1.0)
        return int(number) if number.is_integer() and abs(number) < 1e21 else number
    _expect(wire, _VARINT, where, at)
    if kind == "bool":
        return ival != 0
    signed = ival - (1 << 64) if ival >= 1 << 63 else ival
    if kind == "int32":
        signed &= 0xFFFFFFFF
        return signed - (1 << 32) if signed >= 1 << 31 else signed
    return signed


def _builtin(kind: str, data: bytes, base: int, where: str) -> Any:
    if kind == "Quantity":
        text = "0"  # an empty Quantity message is the zero Quantity, written "0"
        for num, wire, _i, bval, at in _fields(data, base):
            if num == 1:
                _expect(wire, _BYTES, where, at)
                text = bval.decode("utf-8", "replace")
        return text
    if kind in ("Time", "MicroTime"):
        return _time(kind, data, base, where)
    if kind == "IntOrString":
        return _int_or_string(data, base, where)
    if kind == "StringList":
        # a Go []string type of its own (ExtraValue): message {repeated string items = 1}, JSON a plain list
        return [_scalar("string", wire, ival, bval, at, where)
                for num, wire, ival, bval, at in _fields(data, base) if num == 1]
    raw = b""
    for num, wire, _i, bval, at in _fields(data, base):
        if num == 1:
            _expect(wire, _BYTES, where, at)
            raw = bval
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise ProtobufError(f"{where}: the embedded {kind} is not JSON: {err}") from None


def _int_or_string(data: bytes, base: int, where: str) -> int | str:
    """intstr.IntOrString {type, intVal, strVal}: its JSON is the string when type is 1, else the int."""
    typ, int_val, str_val = 0, 0, ""
    for num, wire, ival, bval, at in _fields(data, base):
        if num == 1:
            typ = _scalar("int64", wire, ival, bval, at, where)
        elif num == 2:
            int_val = _scalar("int32", wire, ival, bval, at, where)
        elif num == 3:
            str_val = _scalar("string", wire, ival, bval, at, where)
    return str_val if typ == 1 else int_val


_TIMES: dict[tuple[str, bytes], str | None] = {}
"""Times decoded before, by kind and message bytes: a body's times repeat (creation, managedFields, conditions
within a second), and each decode made a datetime. Emptied when it reaches _TIMES_KEPT entries."""
_TIMES_KEPT = 4096


def _time(kind: str, data: bytes, base: int, where: str) -> str | None:
    if not data:
        return None
    known = _TIMES.get((kind, data), _NOTHING)
    if known is not _NOTHING:
        return known  # type: ignore[return-value]
    text = _read_time(kind, data, base, where)
    if len(_TIMES) >= _TIMES_KEPT:
        _TIMES.clear()
    _TIMES[(kind, data)] = text
    return text


def _read_time(kind: str, data: bytes, base: int, where: str) -> str | None:
    seconds = nanos = 0
    for num, wire, ival, bval, at in _fields(data, base):
        if num == 1:
            seconds = _scalar("int64", wire, ival, bval, at, where)
        elif num == 2:
            nanos = _scalar("int32", wire, ival, bval, at, where)
    if seconds == _GO_ZERO_SECONDS and nanos == 0:
        return None
    try:
        moment = _EPOCH + datetime.timedelta(seconds=seconds)
    except OverflowError:
        raise ProtobufError(f"{where}: time {seconds}s is out of range") from None
    stamp = (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
             f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}")
    if kind == "Time":
        # metav1.Time keeps whole seconds only, as its Go decoder does
        return f"{stamp}Z"
    micros = max(0, min(nanos, 999_999_999)) // 1000
    return f"{stamp}.{micros:06d}Z"
