"""Admission for the resource.k8s.io kinds, Node and PodSchedulingContext: defaulting, version
conversion and validation of the JSON objects the store keeps.

One entry point, `validate(kind, obj, gates=...)`, returns the object to store and raises
`ValidationError` naming the first wrong field with the API server's path and wording
(k8s.io/kubernetes pkg/apis/resource/validation), limits included. Normalisation:

- ResourceClaim / ResourceClaimTemplate: a request in the v1beta1 shape (deviceClassName,
  selectors, allocationMode, count, adminAccess, tolerations directly on the request) is
  moved under `exactly`; allocationMode defaults to ExactCount and count to 1; the stored
  apiVersion becomes resource.k8s.io/v1. Errors name the path the user wrote (for a v1beta1
  request `spec.devices.requests[0].selectors[0]...`, for v1 `...requests[0].exactly.selectors[0]...`).
- ResourceSlice: v1beta1 `devices[].basic.{attributes,capacity}` is flattened to the v1
  `devices[].{attributes,capacity}`; a bare capacity quantity becomes `{value: quantity}`.
- Namespaced kinds without metadata.namespace get "default".

Unknown fields are rejected as kubectl's strict field validation does. Partitionable devices and
consumable capacity are validated behind their feature gates (slice_features); upstream
fields nodeagent does not implement (device taints, binding conditions) are rejected with
`Forbidden: not supported by nodeagent` rather than silently ignored. CEL selectors are compiled at admission with
nodeagent.cel.selectors.compile_selector. Pure: no I/O.

This module holds the entry points (validate, validate_claim_status, validate_update, hooks,
validate_pod_claim_references), the kind registry (KINDS, kind_spec) and object metadata; the
per-kind rules live beside it, and the names callers use are re-exported from here:

- shared: group/versions, feature gates, limits, the validation context.
- device_class: DeviceClass, and the selectors and config a claim shares with it.
- claim: ResourceClaim / ResourceClaimTemplate spec.
- claim_status: ResourceClaim status and its update rules.
- slice: ResourceSlice; slice_features: its partitionable-device and
  consumable-capacity fields (and the claim and result fields of consumable capacity).
- nodes: PodSchedulingContext and Node.
- taint_rule: DeviceTaintRule (KEP-5055).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.kinds import BUILTIN
from nodeagent.kinds.model import version_of
from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON
from nodeagent.objects.resource import admin_access, ratchet, taint_rule
from nodeagent.objects.resource.claim import (
    request_refs,
    validate_resource_claim,
    validate_resource_claim_template,
)
from nodeagent.objects.resource.claim_status import claim_status, claim_status_update, drop_deallocated_devices
from nodeagent.objects.resource.device_class import compile_expression, validate_device_class
from nodeagent.objects.resource.nodes import validate_node, validate_pod_scheduling_context
from nodeagent.objects.resource.shared import (
    ALL,
    ALLOCATION_MODES,
    ALLOCATION_RESULTS_MAX,
    ATTRIBUTES_AND_CAPACITIES_MAX,
    CEL_EXPRESSION_MAX_LENGTH,
    CONFIG_MAX,
    CONSTRAINTS_MAX,
    DEFAULT_GATES,
    EXACT_COUNT,
    FIRST_AVAILABLE_MAX,
    FROM_CLAIM,
    FROM_CLASS,
    GATE_ADMIN_ACCESS,
    GATE_CONTROL_PLANE_CONTROLLER,
    GATE_PRIORITIZED_LIST,
    GROUP,
    NODE_LIST_MAX,
    NOT_SUPPORTED,
    OPAQUE_PARAMETERS_MAX_LENGTH,
    REQUESTS_MAX,
    RESERVED_FOR_MAX,
    SELECTORS_MAX,
    SLICE_DEVICES_MAX,
    V1,
    V1ALPHA3,
    V1BETA1,
    V1BETA2,
    Ctx,
    Gates,
    SpecMemo,
    gate,
    immutable,
    labels_annotations,
    raise_all,
)
from nodeagent.objects.resource.slice import validate_resource_slice
from nodeagent.store import validation as meta

# Callers import these from here; they are defined in the modules listed in the docstring.
__all__ = [
    "ALL",
    "ALLOCATION_MODES",
    "ALLOCATION_RESULTS_MAX",
    "ATTRIBUTES_AND_CAPACITIES_MAX",
    "CEL_EXPRESSION_MAX_LENGTH",
    "CONFIG_MAX",
    "CONSTRAINTS_MAX",
    "DEFAULT_GATES",
    "EXACT_COUNT",
    "FIRST_AVAILABLE_MAX",
    "FROM_CLAIM",
    "FROM_CLASS",
    "GATE_CONTROL_PLANE_CONTROLLER",
    "GATE_PRIORITIZED_LIST",
    "GROUP",
    "KINDS",
    "NODE_LIST_MAX",
    "NOT_SUPPORTED",
    "OPAQUE_PARAMETERS_MAX_LENGTH",
    "REQUESTS_MAX",
    "RESERVED_FOR_MAX",
    "SELECTORS_MAX",
    "SLICE_DEVICES_MAX",
    "V1",
    "V1ALPHA3",
    "V1BETA1",
    "V1BETA2",
    "Gates",
    "KindSpec",
    "compile_expression",
    "gate",
    "hooks",
    "kind_spec",
    "request_refs",
    "validate",
    "validate_claim_status",
    "validate_pod_claim_references",
    "validate_update",
]


@dataclass(frozen=True)
class KindSpec:
    """Scope and versions of one kind, for the store's registry; `versions[0]` is the storage version."""

    kind: str
    plural: str
    group: str  # "" for the core group
    versions: tuple[str, ...]
    namespaced: bool

    @property
    def api_versions(self) -> tuple[str, ...]:
        return tuple(f"{self.group}/{v}" if self.group else v for v in self.versions)

    @property
    def storage_version(self) -> str:
        return self.api_versions[0]

    @property
    def resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


KINDS: tuple[KindSpec, ...] = tuple(
    KindSpec(k.kind, k.plural, k.group, tuple(version_of(v) for v in k.store_versions), k.namespaced)
    for k in BUILTIN if k.store_hooks == "resource"
)
"""The kinds whose store hooks are this module's (their declarations say `store_hooks="resource"`)."""
_BY_KIND = {k.kind: k for k in KINDS}


def kind_spec(kind: str) -> KindSpec:
    spec = _BY_KIND.get(kind)
    if spec is None:
        raise meta.not_supported("kind", kind, _BY_KIND)
    return spec


# --- entry points ------------------------------------------------------------------------------


def validate(kind: str, obj: Mapping[str, Any], *, gates: Gates = DEFAULT_GATES, owned: bool = False,
             specs: SpecMemo | None = None) -> JSON:
    """Default, convert and validate `obj` of `kind`; returns a dict in the storage version.

    The input is left alone (a deep copy is worked on) unless `owned` says the caller hands
    over a private copy, as the store does: it already copied the object on the way in. Either
    way the document is private, so the validators below keep nested values without copying."""
    spec = kind_spec(kind)
    doc: JSON = dict(rc.as_obj(obj, "")) if owned else copy.deepcopy(dict(rc.as_obj(obj, "")))
    api_version = rc.get_str(doc, "apiVersion", "")
    if api_version and api_version not in spec.api_versions:
        raise meta.not_supported("apiVersion", api_version, spec.api_versions)
    if doc.get("kind") not in (None, kind):
        raise meta.invalid("kind", doc.get("kind"), f"must be {kind}")
    ctx = Ctx(gates, beta=api_version == V1BETA1, specs=specs)
    if kind == "PodSchedulingContext" and not gate(gates, GATE_CONTROL_PLANE_CONTROLLER):
        raise meta.forbidden("kind", f"PodSchedulingContext requires the {GATE_CONTROL_PLANE_CONTROLLER} feature gate")
    # upstream's Validate<Kind> lists ValidateObjectMeta's errors and goes on to the spec's
    metadata_errors: list[ValidationError] = []
    try:
        doc["metadata"] = _metadata(doc, spec)
    except ValidationError as err:
        metadata_errors = list(getattr(err, "errors", None) or [err])
    try:
        _VALIDATORS[kind](doc, ctx)
    except ValidationError as err:
        if not metadata_errors:
            raise
        metadata_errors.extend(getattr(err, "errors", None) or [err])
    raise_all(metadata_errors)
    doc["apiVersion"] = spec.storage_version
    doc["kind"] = kind
    return doc


def validate_claim_status(claim: Mapping[str, Any], *, gates: Gates = DEFAULT_GATES) -> JSON:
    """A status-only write of a stored ResourceClaim: only the status is checked (against the
    stored spec's request names); the scheduler and controllers write it several times per pod.

    Like `validate(owned=True)` the caller hands over a private copy (the store's): the result
    shares its nested values instead of copying them."""
    doc: JSON = dict(claim)
    if doc.get("status") is not None:
        ctx = Ctx(gates, beta=False)
        doc["status"] = claim_status(doc["status"], "status", request_refs(doc.get("spec") or {}), ctx)
    return doc


def validate_update(kind: str, new: Mapping[str, Any], old: Mapping[str, Any], *, gates: Gates = DEFAULT_GATES) -> None:
    """Transition rules for an update of a stored object (both already through `validate`)."""
    if kind in ("ResourceClaim", "ResourceClaimTemplate") and new.get("spec") != old.get("spec"):
        raise immutable("spec")
    if kind == "ResourceSlice":
        ns, os_ = new.get("spec") or {}, old.get("spec") or {}
        if (ns.get("pool") or {}).get("name") != (os_.get("pool") or {}).get("name"):
            raise immutable("spec.pool.name")
        for key in ("driver", "nodeName"):
            if ns.get(key) != os_.get(key):
                raise immutable(f"spec.{key}")
    if kind == "ResourceClaim":
        claim_status_update(new, old)


def hooks(gates: Gates = DEFAULT_GATES) -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks: `default` converts and
    validates (errors name the user's paths), `validate_update` checks transitions. There is
    no separate `validate` hook: the store runs `default` on every write, and validating the
    normalised object a second time doubled the cost of every control-plane write."""

    def make(kind: str) -> dict[str, Any]:
        specs = SpecMemo() if kind == "ResourceClaim" else None

        def default(obj: JSON) -> JSON:
            return validate(kind, obj, gates=gates, owned=True, specs=specs)

        def default_update(obj: JSON, old: JSON) -> JSON:
            # a gated field the stored object already uses survives its gate being off (ratchet.py)
            widened = ratchet.update_gates(kind, gates, old)
            if widened is gates:
                return default(obj)
            return validate(kind, obj, gates=widened, owned=True)

        def update(new: JSON, old: JSON) -> None:
            validate_update(kind, new, old, gates=gates)

        hooks: dict[str, Any] = {"default": default, "default_update": default_update, "validate_update": update}
        if kind in ("ResourceClaim", "ResourceClaimTemplate") and gate(gates, GATE_ADMIN_ACCESS):
            hooks["admit"] = lambda obj, reader: admin_access.check(kind, obj, reader)
        if kind == "ResourceClaim":
            hooks["default_status"] = lambda new, old: validate_claim_status(
                drop_deallocated_devices(new, old), gates=ratchet.update_gates(kind, gates, old))
        if kind == "DeviceTaintRule":
            hooks["default_status"] = lambda new, old: taint_rule.validate_status_write(new)
        return hooks

    return {k.kind: make(k.kind) for k in KINDS}


# --- metadata ----------------------------------------------------------------------------------


def _metadata(doc: Mapping[str, Any], spec: KindSpec) -> JSON:
    md: JSON = dict(rc.get_obj(doc, "metadata", "") or {})
    name = rc.get_str(md, "name", "metadata")
    generate = rc.get_str(md, "generateName", "metadata")
    if not name and not generate:
        raise meta.required("metadata.name", "name or generateName is required")
    if name:
        meta.check_dns_subdomain("metadata.name", name)
    elif generate:
        masked = generate[:-1] + "a" if generate.endswith("-") else generate
        meta.check_dns_subdomain("metadata.generateName", masked)
    namespace = rc.get_str(md, "namespace", "metadata")
    if spec.namespaced:
        md["namespace"] = namespace or "default"
        meta.check_dns_label("metadata.namespace", md["namespace"])
    elif namespace:
        raise meta.forbidden("metadata.namespace", "not allowed on this type")
    labels_annotations(md, "metadata")
    return md


_VALIDATORS: dict[str, Callable[[JSON, Ctx], None]] = {
    "DeviceClass": validate_device_class,
    "ResourceClaim": validate_resource_claim,
    "ResourceClaimTemplate": validate_resource_claim_template,
    "ResourceSlice": validate_resource_slice,
    "PodSchedulingContext": validate_pod_scheduling_context,
    "DeviceTaintRule": taint_rule.validate_device_taint_rule,
    "Node": validate_node,
}


# --- Pod references to claims (KEP-4816) -------------------------------------------------------


def validate_pod_claim_references(pod: Mapping[str, Any], claims_by_name: Mapping[str, Mapping[str, Any]]) -> None:
    """Containers may name only a main request of a claim, never a subrequest of firstAvailable.

    `claims_by_name` maps a pod claim name (pod.spec.resourceClaims[].name) to the resolved
    ResourceClaim, ResourceClaimTemplate, or bare claim spec; claims not in it are not checked.
    """
    spec = pod.get("spec") or {}
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or ()):
            refs = ((container or {}).get("resources") or {}).get("claims") or ()
            for j, ref in enumerate(refs):
                request = (ref or {}).get("request") or ""
                if not request:
                    continue
                path = f"spec.{group}[{i}].resources.claims[{j}].request"
                if "/" in request:
                    raise meta.invalid(path, request, "must be the name of a request in the claim, not a subrequest")
                claim = claims_by_name.get((ref or {}).get("name", ""))
                if claim is None:
                    continue
                main = {r.get("name") for r in (_claim_spec_of(claim).get("devices") or {}).get("requests") or ()}
                if request in main:
                    continue
                subs = {
                    s.get("name")
                    for r in (_claim_spec_of(claim).get("devices") or {}).get("requests") or ()
                    for s in r.get("firstAvailable") or ()
                }
                detail = "must be the name of a request in the claim"
                if request in subs:
                    detail += ", not a subrequest (the scheduler chooses among firstAvailable)"
                raise meta.invalid(path, request, detail)


def _claim_spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    if obj.get("kind") == "ResourceClaimTemplate":
        return (obj.get("spec") or {}).get("spec") or {}
    if "spec" in obj:
        return obj.get("spec") or {}
    return obj
