"""The shared encoder against the decoder, kind by kind, and gogo's field-order and zero-value rules.

Why a generated object per kind: every served kind with a table answers protobuf now, so every
table line is on an answer's path; an object that sets every field of the kind's message tree
(non-zero values, so nothing is dropped as a zero) must come back from the decoder unchanged.
The byte-level rules are checked on small messages whose Go bytes are written out by hand from
gogo's generated Marshal (ascending numbers, non-pointer fields always, pointers when set).
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from nodeagent.apiserver.protobuf import decoder, encoding
from nodeagent.apiserver.protobuf.kinds import KINDS
from nodeagent.protowire.encoder import EncodeError, Memo, encode_list, encode_message, envelope, watch_event
from nodeagent.protowire.notation import Field
from nodeagent.protowire.packages import PACKAGES

_SAMPLES: dict[str, Any] = {
    "string": "s", "bytes": "AQI=", "int32": -7, "int64": 1 << 40, "bool": True,
    "Time": "2024-05-01T10:22:00Z", "MicroTime": "2024-05-01T10:22:00.123456Z", "Quantity": "1500m",
    "RawExtension": {"a": [1, "b"]}, "FieldsV1": {"f:metadata": {}}, "StringList": ["x", "y"],
    "double": 2.5, "JSON": {"j": [1, 2.5, "s", None, True]},
}
RECURSIVE = frozenset({("apiextensions", "JSONSchemaProps")})
"""Messages that hold themselves (a CRD's schema): set fully once on a path, then empty."""


def _sample(pkg: str, field: Field, depth: int, path: frozenset[tuple[str, str]]) -> Any:
    if field.kind == "IntOrString":
        return "50%" if depth % 2 else 3
    if field.kind in _SAMPLES:
        return _SAMPLES[field.kind]
    if field.kind == "JSONSchemaPropsOrBool":  # a schema on one level, false on the next
        return _object(pkg, "JSONSchemaProps", depth + 1, path) if depth % 2 else False
    if field.kind == "JSONSchemaPropsOrArray":
        schema = _object(pkg, "JSONSchemaProps", depth + 1, path)
        return [schema, {}] if depth % 2 else schema
    if field.kind == "JSONSchemaPropsOrStringArray":
        return _object(pkg, "JSONSchemaProps", depth + 1, path) if depth % 2 else ["a", "b"]
    return _object(pkg, field.kind, depth + 1, path)


def _object(package: str, name: str, depth: int = 0,
            path: frozenset[tuple[str, str]] = frozenset()) -> dict[str, Any]:
    """Every field of the message tree set to a non-zero value (a recursive message: on its first
    visit of a path)."""
    assert depth < 40, f"recursive tables at {package}.{name}"
    pkg, _, short = name.rpartition(".")
    pkg = pkg or package
    if (pkg, short) in path:
        return {}
    if (pkg, short) in RECURSIVE:
        path = path | {(pkg, short)}
    out: dict[str, Any] = {}
    for field in PACKAGES[pkg][short].values():
        if field.label == "^":
            out.update(_object(pkg, field.kind, depth + 1, path))
        elif field.label == "[]":
            out[field.name] = [_sample(pkg, field, depth, path)]
        elif field.label == "{}":
            out[field.name] = {"k": _sample(pkg, field, depth, path)}
        else:
            out[field.name] = _sample(pkg, field, depth, path)
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


# --- apiextensions: a CRD's recursive schema and the JSON forms unlike their messages (marshal.go) ---

_NESTED_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "required": ["spec"], "x-kubernetes-validations": [{"rule": "self.spec.n >= 0"}],
                 "properties": {"spec": {"type": "object", "properties": {
                     "n": {"type": "integer", "minimum": 0, "maximum": 2.5, "default": 1},
                     "mode": {"type": "string", "enum": ["a", "b", None]},
                     "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                     "pairs": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                     "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                     "closed": {"type": "object", "additionalProperties": False, "example": {"x": [1, "y"]}},
                     "any": {"x-kubernetes-preserve-unknown-fields": True, "nullable": True},
                     "dep": {"type": "object", "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}}},
                     "ref": {"$ref": "#/definitions/x", "$schema": "http://json-schema.org/draft-04/schema#"},
                 }}}}},
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.n",
                                                          "statusReplicasPath": ".status.n"}}}]},
    "status": {"conditions": [{"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                               "message": "the initial names have been accepted",
                               "lastTransitionTime": "2026-01-02T03:04:05Z"}],
               "acceptedNames": {"plural": "widgets", "kind": "Widget"}, "storedVersions": ["v1"]},
}


def test_a_crd_with_a_nested_schema_round_trips() -> None:
    body = encoding.encode_object(_NESTED_CRD)
    assert decoder.decode(body)[0] == _NESTED_CRD
    assert encoding.encode_object(decoder.decode_answer(body)) == body


def _schema(doc: dict[str, Any]) -> bytes:
    return encode_message("apiextensions", "JSONSchemaProps", doc)


def test_json_schema_props_wire_rules() -> None:
    empty = _schema({})
    # a double is fixed64 (maximum is field 9, after the six strings 1-7); a pointer written only when
    # set, 0 included
    assert _schema({"maximum": 2.5}) == empty[:12] + b"\x49" + struct.pack("<d", 2.5) + empty[12:]
    assert b"\x59" + bytes(8) in _schema({"minimum": 0})
    # JSON: the value's text as raw (default is field 8); enum's null is an empty JSON message
    assert b"\x42\x09\x0a\x07" + b'{"a":1}' in _schema({"default": {"a": 1}})
    assert b"\xa2\x01\x00" in _schema({"enum": [None]})
    # OrBool (additionalProperties, field 30): allows always, the schema when one is given
    assert b"\xf2\x01\x02\x08\x00" in _schema({"additionalProperties": False})
    with_schema = _schema({"additionalProperties": {}})
    assert b"\xf2\x01" + bytes([len(empty) + 4]) + b"\x08\x01\x12" + bytes([len(empty)]) + empty in with_schema
    # OrArray (items, field 24): an object is field 1, an array's schemas field 2 each
    assert b"\xc2\x01" + bytes([len(empty) + 2]) + b"\x0a" + bytes([len(empty)]) + empty in _schema({"items": {}})
    two = b"\x12" + bytes([len(empty)]) + empty
    assert b"\xc2\x01" + bytes([2 * len(two)]) + two + two in _schema({"items": [{}, {}]})
    # OrStringArray (a dependencies value): the strings as field 2
    assert b"\x12\x01b\x12\x01c" in _schema({"dependencies": {"a": ["b", "c"]}})


def test_json_schema_props_decode_as_marshal_json_writes() -> None:
    for value in ({"additionalProperties": True}, {"additionalProperties": False},
                  {"items": {"type": "string"}}, {"items": [{"type": "string"}]}, {"minimum": 1.5},
                  {"dependencies": {"a": ["b"], "c": {"type": "object"}}}, {"enum": [1, "x", None, {"k": []}]}):
        assert decoder._message("apiextensions", "JSONSchemaProps", _schema(value), 0) == value
    # encoding/json writes a whole float64 as an integer
    assert decoder._message("apiextensions", "JSONSchemaProps", _schema({"maximum": 3.0}), 0) == {"maximum": 3}


def test_schema_wrappers_refuse_other_json() -> None:
    with pytest.raises(EncodeError, match=r"additionalProperties: boolean or JSON schema expected"):
        _schema({"additionalProperties": "yes"})
    with pytest.raises(EncodeError, match=r"maximum: expected a number, got str"):
        _schema({"maximum": "1"})


@pytest.mark.parametrize(("api_version", "kind"), sorted(KINDS), ids=lambda v: str(v))
def test_a_memo_gives_the_bytes_of_a_fresh_encoding(api_version: str, kind: str) -> None:
    """Every kind's full tree encoded through a memo, twice (the second time from the memo), and a
    list of it: the same bytes as without one."""
    pkg, name = KINDS[(api_version, kind)]
    doc = {"apiVersion": api_version, "kind": kind, **_object(pkg, name)}
    plain = encoding.encode_object(doc)
    memo = Memo()
    assert encoding.encode_object(doc, memo=memo) == plain
    held = len(memo)
    assert held > 0
    assert encoding.encode_object(doc, memo=memo) == plain
    assert len(memo) == held  # nothing new: every message came from the memo
    listed = {"apiVersion": api_version, "kind": f"{kind}List", "metadata": {"resourceVersion": "7"}, "items": [doc]}
    assert encoding.encode_object(listed, memo=memo) == encoding.encode_object(listed)


def test_a_new_version_reuses_its_shared_parts_and_encodes_its_changes() -> None:
    """A store-like new version: new top, metadata and spec dicts, the containers list and the
    managedFields entries (FieldsV1 included) shared with the old version. Its bytes are those of a
    fresh encoding; only the new dicts are added to the memo."""
    fields: dict[str, Any] = {"f:spec": {"f:containers": {}}}
    old: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default", "resourceVersion": "1",
                        "labels": {"app": "a"},
                        "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                                           "time": "2024-05-01T10:22:00Z", "fieldsType": "FieldsV1",
                                           "fieldsV1": fields}]},
           "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"limits": {"cpu": "1"}}}]}}
    memo = Memo()
    assert encoding.encode_object(old, memo=memo) == encoding.encode_object(old)
    held = len(memo)
    new = dict(old)
    new["metadata"] = {**old["metadata"], "resourceVersion": "2"}
    new["spec"] = {**old["spec"], "nodeName": "n1"}
    assert encoding.encode_object(new, memo=memo) == encoding.encode_object(new)
    assert len(memo) == held + 3  # the pod, its metadata and its spec; the containers and fields reused
    fresh = dict(new)  # a changed value in a dict that was never encoded
    fresh["spec"] = {**new["spec"], "nodeName": "n2"}
    assert encoding.encode_object(fresh, memo=memo) != encoding.encode_object(new, memo=memo)
    assert encoding.encode_object(fresh, memo=memo) == encoding.encode_object(fresh)


def test_one_dict_as_two_messages_is_two_entries() -> None:
    """A dict encoded as different messages (an inline `^` field encodes its parent's dict again) is
    remembered per message."""
    doc = {"name": "x", "namespace": "ns", "uid": "u", "resourceVersion": "3"}
    memo = Memo()
    as_meta = encode_message("meta", "ObjectMeta", doc, memo)
    as_partial = encode_message("meta", "PartialObjectMetadata", {"metadata": doc}, memo)
    assert as_meta == encode_message("meta", "ObjectMeta", doc)
    assert as_partial == encode_message("meta", "PartialObjectMetadata", {"metadata": doc})
    assert encode_message("meta", "ListMeta", doc, memo) == encode_message("meta", "ListMeta", doc)


def test_the_memo_is_bounded_in_bytes_and_starts_over() -> None:
    memo = Memo(max_bytes=4096)
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "default"},
             "data": {"k": "v" * 200}} for i in range(100)]
    for doc in docs:
        assert encoding.encode_object(doc, memo=memo) == encoding.encode_object(doc)
        assert memo.size <= 4096
    assert 0 < len(memo) < 100 * 3
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "v" * 10000}}
    assert encoding.encode_object(big, memo=memo) == encoding.encode_object(big)  # larger than the bound: not kept
    assert memo.size <= 4096
