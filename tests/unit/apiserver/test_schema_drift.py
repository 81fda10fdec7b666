"""The hand-written schemas cannot drift: from upstream's OpenAPI, nor from the protobuf tables.

Why: the schemas (nodeagent/apiserver/schema/builtin/) and the protobuf tables
(nodeagent/protowire) are both written by hand from upstream's Go types. A field added to one and
not the other is a field a JSON client can write and a protobuf client loses (or the reverse);
a field upstream has and the schema lacks is pruned on write. Two checks:
- every definition's field names against the same definition in upstream's OpenAPI v3 documents
  (k8s.io/kubernetes v1.37.2's api/openapi-spec in the Go module cache; skipped without it), less
  the fields of alpha gates nodeagent does not implement, each named below with its gate;
- every protobuf table message reachable from a kind the API server decodes (and the Pod the Pods
  API encodes) against the schema at the same place, walked together from the kind down: the same
  field names, and for each field the same shape (list, map) and JSON type, at every level, down to
  where the schema keeps an object as written (`loose`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from nodeagent.apiserver.protobuf.kinds import KINDS
from nodeagent.apiserver.schema.builtin import BUILTIN_GVK, builtin_definitions
from nodeagent.apiserver.schema.model import Definitions, Schema
from nodeagent.protowire.notation import BUILTINS, SCALARS, Field
from nodeagent.protowire.packages import PACKAGES

OPENAPI = Path(os.environ.get("GOMODCACHE", "/root/go/pkg/mod")) / \
    "k8s.io/kubernetes@v1.37.2/api/openapi-spec/v3"

CORE, META = "io.k8s.api.core.v1.", "io.k8s.apimachinery.pkg.apis.meta.v1."
_DRA = [f"io.k8s.api.resource.{v}." for v in ("v1", "v1beta2", "v1beta1")]

NOT_SERVED: dict[str, dict[str, str]] = {
    META + "ListMeta": {"shardInfo": "ShardedListAndWatch (alpha)"},
    CORE + "VolumeMount": {"bindMountOptions": "VolumeBindMountOptions (alpha)"},
    CORE + "HTTPGetAction": {"protocol": "H2CContainerProbe (alpha)"},
    CORE + "GRPCAction": {"mode": "GRPCContainerProbeTLS (alpha)"},
    CORE + "EmptyDirVolumeSource": {"mode": "EmptyDirVolumeMode (alpha)"},
    **{CORE + d: {"defaultUser": "AtomicWriteVolumeUserFields (alpha)"} for d in (
        "ConfigMapVolumeSource", "SecretVolumeSource", "DownwardAPIVolumeSource", "ProjectedVolumeSource")},
    **{CORE + d: {"user": "AtomicWriteVolumeUserFields (alpha)"} for d in (
        "KeyToPath", "DownwardAPIVolumeFile", "ServiceAccountTokenProjection", "ClusterTrustBundleProjection")},
    CORE + "PodSpec": {"evictionResponders": "EvictionRequestAPI (alpha)",
                       "schedulingGroup": "GenericWorkload (alpha)"},
    CORE + "PodStatus": {"volumeHealth": "CSIVolumeHealth (alpha)"},
    "io.k8s.api.batch.v1.JobSpec": {"scheduling": "WorkloadWithJob (alpha)"},
    CORE + "VolumeMountStatus": {"volumeStatus": "ImageVolumeWithDigest (alpha)"},
    CORE + "NodeSpec": {"podPreemptionPolicy": "InPlacePodVerticalScalingSchedulerPreemption (alpha)"},
    CORE + "PersistentVolumeClaimStatus": {"healthStatus": "CSIVolumeHealth (alpha)"},
    **{p + "ResourceSliceSpec": {"partitionTypeAttribute": "DRAPartitionableDevicesType (alpha)"} for p in _DRA},
    **{p + "DeviceCounterConsumption": {"compatibilityGroups": "DRADeviceCompatibilityGroups (alpha)"}
       for p in _DRA},
    **{p + "DeviceSubRequest": {"derivedAttributes": "DRADerivedAttributes (alpha)"} for p in _DRA},
    **{p + "ExactDeviceRequest": {"derivedAttributes": "DRADerivedAttributes (alpha)"} for p in _DRA[:2]},
    _DRA[2] + "DeviceRequest": {"derivedAttributes": "DRADerivedAttributes (alpha)"},
    "io.k8s.api.storage.v1.CSINodeStatus": {"storageHealth": "CSIVolumeHealth (alpha)"},
}
"""Definition -> fields upstream documents and nodeagent does not serve -> the gate (off by default)
that governs them: with it off upstream drops them on write, and nodeagent's schema does not know them."""

NOT_UPSTREAM = "io.k8s.api.resource.v1alpha3."
"""v1alpha3's ResourceClaim and ResourceClaimTemplate (and PodSchedulingContext) are served for classic
DRA (KEP-3063), which upstream removed after 1.31: in no v1.37.2 document, so compared with nothing
(v1alpha3's DeviceTaintRule is upstream's, and compared)."""

DECODED_NOT_SERVED: set[tuple[str, str]] = {("apiregistration.k8s.io/v1", "APIService"), ("policy/v1", "Eviction"),
                                             ("policy/v1beta1", "Eviction")}
"""Kinds the protobuf tables describe that the API server serves no resource for (so no schema):
APIService, which nodeagent does not serve (no aggregation layer), is read in the real
kube-apiserver's answers (tests/integration/test_protobuf_answers.py). The access reviews are in
discovery and the OpenAPI (kinds/reviews.py), and TokenRequest, the body of
serviceaccounts/NAME/token, has its schema there too. Eviction, the body of pods/NAME/eviction, has
none yet (its two fields are ObjectMeta and DeleteOptions, whose tables are walked as Pod's and on
their own); the OpenAPI does not publish the eviction path either."""


def _loose(schema: Schema) -> bool:
    """An object the schema keeps as written (schema/builtin/dsl.py: loose): its fields are not spelled out."""
    return schema.preserve_unknown_fields and not schema.properties


def _upstream() -> dict[str, Any]:
    if not OPENAPI.is_dir():
        pytest.skip(f"upstream's OpenAPI documents are not in the Go module cache ({OPENAPI})")
    out: dict[str, Any] = {}
    for path in sorted(OPENAPI.glob("*.json")):
        for name, schema in json.loads(path.read_text()).get("components", {}).get("schemas", {}).items():
            out.setdefault(name, schema)
    return out


def test_schemas_name_upstreams_fields() -> None:
    upstream = _upstream()
    found: list[str] = []
    for name, schema in builtin_definitions().items():
        if _loose(schema):
            continue
        if name not in upstream:
            if not name.startswith(NOT_UPSTREAM):
                found.append(f"{name}: not in upstream's OpenAPI")
            continue
        theirs = set(upstream[name].get("properties", {}))
        skipped = set(NOT_SERVED.get(name, {}))
        mine = set(schema.properties)
        if mine != theirs - skipped:
            found.append(f"{name}: only here {sorted(mine - theirs)}, only upstream {sorted(theirs - skipped - mine)}")
        if skipped & mine or skipped - theirs:
            found.append(f"{name}: NOT_SERVED is stale: {sorted(skipped & mine | skipped - theirs)}")
    assert found == []


def _fields(pkg: str, message: str) -> dict[str, tuple[str, Field]]:
    """JSON name -> (package, field) of a message, with inline-embedded messages' fields in place."""
    out: dict[str, tuple[str, Field]] = {}
    for field in PACKAGES[pkg][message].values():
        if field.label == "^":
            ref_pkg, _, short = field.kind.rpartition(".")
            out.update(_fields(ref_pkg or pkg, short))
        else:
            out[field.name] = (pkg, field)
    return out


_JSON_TYPE = {
    "string": ("string", "", False), "bytes": ("string", "byte", False), "bool": ("boolean", "", False),
    "int32": ("integer", "int32", False), "int64": ("integer", "int64", False),
    "Time": ("string", "date-time", False), "MicroTime": ("string", "date-time", False),
    "Quantity": ("", "", True), "IntOrString": ("", "", True), "StringList": ("array", "", False),
    "double": ("number", "double", False), "JSON": ("", "", False), "JSONSchemaPropsOrArray": ("", "", False),
    "JSONSchemaPropsOrBool": ("", "", False), "JSONSchemaPropsOrStringArray": ("", "", False),
}
"""A table type -> the schema's (type, format, x-kubernetes-int-or-string); messages, FieldsV1 and
RawExtension are objects; apiextensions' JSON and its schema-or-array/bool wrappers are untyped (any
JSON value, a schema or an array or a boolean)."""


def _walk(defs: Definitions, pkg: str, message: str, schema: Schema | None, where: str, root: bool,
          found: list[str], path: frozenset[tuple[str, str]] = frozenset()) -> None:
    resolved = defs.resolve(schema)
    if _loose(resolved) or (pkg, message) in path:  # a recursive message (a CRD's schema): walked once
        return
    path = path | {(pkg, message)}
    table = _fields(pkg, message)
    # TypeMeta (apiVersion, kind) is never on the wire: not of a kind, nor of one embedded whole (a
    # StatefulSet's PersistentVolumeClaim templates)
    embedded = "metadata" in table and {"apiVersion", "kind"} <= set(resolved.properties)
    props = set(resolved.properties) - ({"apiVersion", "kind"} if root or embedded else set())
    if set(table) != props:
        found.append(f"{where} ({pkg}.{message}): only in the protobuf table {sorted(set(table) - props)}, "
                     f"only in the schema {sorted(props - set(table))}")
    for name, (field_pkg, field) in table.items():
        if name not in props:
            continue
        child: Schema | None = resolved.properties[name]
        node = defs.resolve(child)
        if field.label in ("[]", "{}"):
            shape = ("array", node.items) if field.label == "[]" else ("object", node.additional_properties)
            if node.type != shape[0] or shape[1] is None:
                found.append(f"{where}.{name}: the table's {field.label}{field.kind}, the schema's {node.type}")
                continue
            child = shape[1]
            node = defs.resolve(child)
        want = _JSON_TYPE.get(field.kind, ("object", "", False))
        if (node.type, node.format, node.int_or_string) != want:
            found.append(f"{where}.{name}: the table's {field.kind} is {want}, the schema's "
                         f"{(node.type, node.format, node.int_or_string)}")
        elif field.kind not in SCALARS and field.kind not in BUILTINS:
            ref_pkg, _, short = field.kind.rpartition(".")
            _walk(defs, ref_pkg or field_pkg, short, child, f"{where}.{name}", False, found, path)


def test_protobuf_tables_and_schemas_name_the_same_fields() -> None:
    defs = builtin_definitions()
    by_gvk = {(group + "/" + version if group else version, kind): name
              for name, (group, version, kind) in BUILTIN_GVK.items()}
    roots = {**KINDS, ("v1", "Pod"): ("core", "Pod"), ("v1", "DeleteOptions"): ("meta", "DeleteOptions")}
    found: list[str] = []
    walked = 0
    for (api_version, kind), (pkg, message) in sorted(roots.items()):
        definition = by_gvk.get((api_version, kind))
        if definition is None:
            assert (api_version, kind) in DECODED_NOT_SERVED, f"{api_version} {kind} has no schema"
            continue
        _walk(defs, pkg, message, Schema(ref=definition), f"{api_version} {kind}", True, found)
        walked += 1
    assert found == []
    assert walked == len(roots) - len(DECODED_NOT_SERVED)


def test_the_walk_sees_a_field_only_one_side_has() -> None:
    """The comparison itself: a table field the schema lacks, and the reverse, are each reported."""
    defs = Definitions({"T": Schema(type="object", properties={"a": Schema(type="string"),
                                                                "b": Schema(type="string")})})
    found: list[str] = []
    _walk(defs, "meta", "Preconditions", Schema(ref="T"), "x", False, found)
    assert found == ["x (meta.Preconditions): only in the protobuf table ['resourceVersion', 'uid'], "
                     "only in the schema ['a', 'b']"]
