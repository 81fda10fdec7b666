"""The shared encoder against the decoder, kind by kind, and gogo's field-order and zero-value rules.

Why a generated object per kind: every served kind with a table answers protobuf now, so every
table line is on an answer's path; an object that sets every field of the kind's message tree
(non-zero values, so nothing is dropped as a zero) must come back from the decoder unchanged.
The byte-level rules are checked on small messages whose Go bytes are written out by hand from
gogo's generated Marshal (ascending numbers, non-pointer fields always, pointers when set).
"""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.protobuf import decoder, encoding
from nodeagent.apiserver.protobuf.kinds import KINDS
from nodeagent.protowire.encoder import EncodeError, encode_list, encode_message, envelope, watch_event
from nodeagent.protowire.notation import Field
from nodeagent.protowire.packages import PACKAGES

_SAMPLES: dict[str, Any] = {
    "string": "s", "bytes": "AQI=", "int32": -7, "int64": 1 << 40, "bool": True,
    "Time": "2024-05-01T10:22:00Z", "MicroTime": "2024-05-01T10:22:00.123456Z", "Quantity": "1500m",
    "RawExtension": {"a": [1, "b"]}, "FieldsV1": {"f:metadata": {}}, "StringList": ["x", "y"],
}


def _sample(pkg: str, field: Field, depth: int) -> Any:
    if field.kind == "IntOrString":
        return "50%" if depth % 2 else 3
    if field.kind in _SAMPLES:
        return _SAMPLES[field.kind]
    return _object(pkg, field.kind, depth + 1)


def _object(package: str, name: str, depth: int = 0) -> dict[str, Any]:
    """Every field of the message tree set to a non-zero value."""
    assert depth < 40, f"recursive tables at {package}.{name}"
    pkg, _, short = name.rpartition(".")
    pkg = pkg or package
    out: dict[str, Any] = {}
    for field in PACKAGES[pkg][short].values():
        if field.label == "^":
            out.update(_object(pkg, field.kind, depth + 1))
        elif field.label == "[]":
            out[field.name] = [_sample(pkg, field, depth)]
        elif field.label == "{}":
            out[field.name] = {"k": _sample(pkg, field, depth)}
        else:
            out[field.name] = _sample(pkg, field, depth)
    return out


@pytest.mark.parametrize(("api_version", "kind"), sorted(KINDS), ids=lambda v: str(v))
def test_every_kind_round_trips_through_the_decoder(api_version: str, kind: str) -> None:
    pkg, name = KINDS[(api_version, kind)]
    doc = {"apiVersion": api_version, "kind": kind, **_object(pkg, name)}
    body = encoding.encode_object(doc)
    assert decoder.decode(body)[0] == doc
    assert decoder.decode_answer(body) == doc
    listed = encoding.encode_object({"apiVersion": api_version, "kind": f"{kind}List",
                                     "metadata": {"resourceVersion": "9", "continue": "c"},
                                     "items": [_object(pkg, name)]})
    assert decoder.decode_answer(listed) == {"apiVersion": api_version, "kind": f"{kind}List",
                                             "metadata": {"resourceVersion": "9", "continue": "c"},
                                             "items": [_object(pkg, name)]}


def test_envelope_is_what_nested_marshal_writes() -> None:
    # runtime.Unknown: typeMeta{apiVersion, kind}, raw, then the empty contentEncoding and contentType
    assert envelope("v1", "Pod", b"\x0a\x00") == (
        b"k8s\x00" + b"\x0a\x09\x0a\x02v1\x12\x03Pod" + b"\x12\x02\x0a\x00" + b"\x1a\x00" + b"\x22\x00")


def test_watch_event_is_length_framed_with_the_envelope_as_raw() -> None:
    inner = envelope("v1", "Status", b"")
    frame = watch_event("ERROR", inner)
    message = b"\x0a\x05ERROR" + b"\x12" + bytes([len(inner) + 2]) + b"\x0a" + bytes([len(inner)]) + inner
    assert frame == len(message).to_bytes(4, "big") + message
    events, rest = decoder.decode_watch(frame + frame[:3])
    assert events == [("ERROR", {"apiVersion": "v1", "kind": "Status"})] and rest == frame[:3]


def test_fields_in_ascending_number_whatever_the_declaration_order() -> None:
    # OwnerReference declares apiVersion (5) first; gogo writes 1 kind, 3 name, 4 uid, 5 apiVersion
    got = encode_message("meta", "OwnerReference", {"apiVersion": "v1", "kind": "K", "name": "n", "uid": "u"})
    assert got == b"\x0a\x01K" + b"\x1a\x01n" + b"\x22\x01u" + b"\x2a\x02v1"


def test_zero_values_non_pointer_always_pointer_when_set() -> None:
    # Toleration: strings always (even empty), tolerationSeconds (*int64) only when set, zero included
    assert encode_message("core", "Toleration", {}) == b"\x0a\x00\x12\x00\x1a\x00\x22\x00"
    assert encode_message("core", "Toleration", {"tolerationSeconds": 0}).endswith(b"\x28\x00")
    # Status: its non-pointer metadata (ListMeta's three strings), details (*StatusDetails) absent, code 0
    assert encode_message("meta", "Status", {}) == (
        b"\x0a\x06\x0a\x00\x12\x00\x1a\x00" + b"\x12\x00\x1a\x00\x22\x00\x30\x00")


def test_bytes_fields_only_when_set_and_maps_sorted() -> None:
    # Secret.data is map<string, bytes>: entries by key; CSR spec.request ([]byte) left out when unset
    got = encode_message("core", "Secret", {"data": {"b": "Ag==", "a": "AQ=="}})
    assert b"\x12\x06\x0a\x01a\x12\x01\x01\x12\x06\x0a\x01b\x12\x01\x02" in got
    spec = encode_message("certificates", "CertificateSigningRequestSpec", {})
    assert not spec.startswith(b"\x0a")


def test_list_is_list_meta_then_items() -> None:
    assert encode_list("core", "ConfigMap", {"metadata": {"resourceVersion": "5"}, "items": []}) == (
        b"\x0a\x07" + b"\x0a\x00\x12\x015\x1a\x00")


def test_wrong_types_name_the_field() -> None:
    with pytest.raises(EncodeError, match=r"Lease\.spec\.leaseDurationSeconds"):
        encode_message("coordination", "Lease", {"spec": {"leaseDurationSeconds": "long"}})


def test_every_table_is_reachable_without_recursion() -> None:
    for pkg, messages in PACKAGES.items():
        for name in messages:
            _object(pkg, name)
