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

Unknown fields are rejected as kubectl's strict field validation does. Upstream fields that
nodeagent does not implement (partitionable devices, device taints, consumable capacity,
per-device node selection) are rejected with `Forbidden: not supported by nodeagent` rather than
silently ignored. CEL selectors are compiled at admission with
nodeagent.controlplane.cel.compile_selector. Pure: no I/O.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects import meta
from nodeagent.objects import resource_common as rc
from nodeagent.objects.resource_common import JSON, join

GROUP = "resource.k8s.io"
V1 = f"{GROUP}/v1"
V1BETA2 = f"{GROUP}/v1beta2"
V1BETA1 = f"{GROUP}/v1beta1"
V1ALPHA3 = f"{GROUP}/v1alpha3"

GATE_PRIORITIZED_LIST = "DRAPrioritizedList"
GATE_CONTROL_PLANE_CONTROLLER = "DRAControlPlaneController"
DEFAULT_GATES: Mapping[str, bool] = {GATE_PRIORITIZED_LIST: True, GATE_CONTROL_PLANE_CONTROLLER: False}

# Limits of pkg/apis/resource (types.go constants).
FIRST_AVAILABLE_MAX = 8
SELECTORS_MAX = 32
REQUESTS_MAX = 32
CONSTRAINTS_MAX = 32
CONFIG_MAX = 32
ALLOCATION_RESULTS_MAX = 32
SLICE_DEVICES_MAX = 128
ATTRIBUTES_AND_CAPACITIES_MAX = 32
NODE_LIST_MAX = 128
RESERVED_FOR_MAX = 256
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024

EXACT_COUNT = "ExactCount"
ALL = "All"
ALLOCATION_MODES = (ALL, EXACT_COUNT)
FROM_CLAIM = "FromClaim"
FROM_CLASS = "FromClass"

NOT_SUPPORTED = "not supported by nodeagent"

Gates = Mapping[str, bool]


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


KINDS: tuple[KindSpec, ...] = (
    KindSpec("DeviceClass", "deviceclasses", GROUP, ("v1", "v1beta2", "v1beta1"), namespaced=False),
    KindSpec("ResourceClaim", "resourceclaims", GROUP, ("v1", "v1beta2", "v1beta1"), namespaced=True),
    KindSpec("ResourceClaimTemplate", "resourceclaimtemplates", GROUP, ("v1", "v1beta2", "v1beta1"), namespaced=True),
    KindSpec("ResourceSlice", "resourceslices", GROUP, ("v1", "v1beta2", "v1beta1"), namespaced=False),
    KindSpec("PodSchedulingContext", "podschedulingcontexts", GROUP, ("v1alpha3",), namespaced=True),
    KindSpec("Node", "nodes", "", ("v1",), namespaced=False),
)
_BY_KIND = {k.kind: k for k in KINDS}


def gate(gates: Gates, name: str) -> bool:
    return bool(gates.get(name, DEFAULT_GATES.get(name, False)))


def kind_spec(kind: str) -> KindSpec:
    spec = _BY_KIND.get(kind)
    if spec is None:
        raise meta.not_supported("kind", kind, _BY_KIND)
    return spec


# --- entry points ------------------------------------------------------------------------------


def validate(kind: str, obj: Mapping[str, Any], *, gates: Gates = DEFAULT_GATES, owned: bool = False) -> JSON:
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
    ctx = _Ctx(gates, beta=api_version == V1BETA1)
    if kind == "PodSchedulingContext" and not gate(gates, GATE_CONTROL_PLANE_CONTROLLER):
        raise meta.forbidden("kind", f"PodSchedulingContext requires the {GATE_CONTROL_PLANE_CONTROLLER} feature gate")
    doc["metadata"] = _metadata(doc, spec)
    _VALIDATORS[kind](doc, ctx)
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
        ctx = _Ctx(gates, beta=False)
        doc["status"] = _claim_status(doc["status"], "status", request_refs(doc.get("spec") or {}), ctx)
    return doc


def validate_update(kind: str, new: Mapping[str, Any], old: Mapping[str, Any], *, gates: Gates = DEFAULT_GATES) -> None:
    """Transition rules for an update of a stored object (both already through `validate`)."""
    if kind in ("ResourceClaim", "ResourceClaimTemplate") and new.get("spec") != old.get("spec"):
        raise _immutable("spec")
    if kind == "ResourceSlice":
        ns, os_ = new.get("spec") or {}, old.get("spec") or {}
        if (ns.get("pool") or {}).get("name") != (os_.get("pool") or {}).get("name"):
            raise _immutable("spec.pool.name")
        for key in ("driver", "nodeName"):
            if ns.get(key) != os_.get(key):
                raise _immutable(f"spec.{key}")
    if kind == "ResourceClaim":
        _claim_status_update(new, old)


def _immutable(path: str) -> ValidationError:
    return meta.invalid(path, "<value omitted>", "field is immutable")


def hooks(gates: Gates = DEFAULT_GATES) -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks: `default` converts and
    validates (errors name the user's paths), `validate_update` checks transitions. There is
    no separate `validate` hook: the store runs `default` on every write, and validating the
    normalised object a second time doubled the cost of every control-plane write."""

    def make(kind: str) -> dict[str, Any]:
        def default(obj: JSON) -> JSON:
            return validate(kind, obj, gates=gates, owned=True)

        def update(new: JSON, old: JSON) -> None:
            validate_update(kind, new, old, gates=gates)

        hooks: dict[str, Any] = {"default": default, "validate_update": update}
        if kind == "ResourceClaim":
            hooks["default_status"] = lambda new, old: validate_claim_status(new, gates=gates)
        return hooks

    return {k.kind: make(k.kind) for k in KINDS}


# --- shared pieces -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    gates: Gates
    beta: bool  # the object came as resource.k8s.io/v1beta1 (messages of that version)


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
    _labels_annotations(md, "metadata")
    return md


def _labels_annotations(md: Mapping[str, Any], path: str) -> None:
    for key in ("labels", "annotations"):
        raw = rc.get_obj(md, key, path) or {}
        for k, v in raw.items():
            if not isinstance(v, str):
                raise rc.type_error(f"{path}.{key}[{k}]", v, "string")
        if key == "labels":
            meta.check_labels(f"{path}.labels", raw)
        else:
            meta.check_annotations(f"{path}.annotations", raw)


def _selectors(obj: Mapping[str, Any], path: str) -> list[JSON]:
    out: list[JSON] = []
    for k, raw in enumerate(rc.get_list(obj, "selectors", path, SELECTORS_MAX)):
        spath = f"{path}.selectors[{k}]" if path else f"selectors[{k}]"
        sel = rc.as_obj(raw, spath)
        rc.fields(sel, spath, ("cel",))
        cel = rc.get_obj(sel, "cel", spath)
        if cel is None:
            raise meta.required(join(spath, "cel"))
        cpath = join(spath, "cel")
        rc.fields(cel, cpath, ("expression",))
        expression = rc.get_str(cel, "expression", cpath)
        compile_expression(join(cpath, "expression"), expression)
        out.append({"cel": {"expression": expression}})
    return out


def compile_expression(path: str, expression: str) -> None:
    """Compile a CEL selector at admission; a compile error is `Invalid value` with the compiler's text."""
    if not expression:
        raise meta.required(path)
    if len(expression) > CEL_EXPRESSION_MAX_LENGTH:
        raise rc.too_long_bytes(path, CEL_EXPRESSION_MAX_LENGTH)
    # Imported here: the control plane imports this module, and the CEL layer sits beside it.
    from nodeagent.controlplane.cel import CelError, compile_selector

    try:
        compile_selector(expression)
    except CelError as err:
        raise meta.invalid(path, expression, err.detail) from None


def _opaque(raw: object, path: str) -> JSON:
    opaque = rc.as_obj(raw, path)
    rc.fields(opaque, path, ("driver", "parameters"))
    driver = rc.get_str(opaque, "driver", path)
    rc.check_driver_name(join(path, "driver"), driver)
    params = opaque.get("parameters")
    ppath = join(path, "parameters")
    if params is None:
        raise meta.required(ppath)
    if not isinstance(params, Mapping):
        raise meta.invalid(ppath, "<value omitted>", "parameters must be a valid JSON object")
    if len(json.dumps(params, separators=(",", ":"), default=str)) > OPAQUE_PARAMETERS_MAX_LENGTH:
        raise rc.too_long_bytes(ppath, OPAQUE_PARAMETERS_MAX_LENGTH)
    return {"driver": driver, "parameters": dict(params)}


def _config_list(
    obj: Mapping[str, Any], path: str, limit: int, refs: set[str] | None, *, source: bool = False
) -> list[JSON]:
    """DeviceClass / claim / allocation `config[]`: optional requests, an opaque config, a source."""
    out: list[JSON] = []
    allowed = ["opaque"]
    if refs is not None:
        allowed.append("requests")
    if source:
        allowed.append("source")
    for i, raw in enumerate(rc.get_list(obj, "config", path, limit)):
        cpath = f"{path}.config[{i}]" if path else f"config[{i}]"
        entry = rc.as_obj(raw, cpath)
        rc.fields(entry, cpath, allowed)
        item: JSON = {}
        if source:
            src = rc.get_str(entry, "source", cpath)
            if not src:
                raise meta.required(join(cpath, "source"))
            if src not in (FROM_CLAIM, FROM_CLASS):
                raise meta.not_supported(join(cpath, "source"), src, (FROM_CLAIM, FROM_CLASS))
            item["source"] = src
        if refs is not None:
            requests = _request_refs(entry, cpath, refs)
            if requests:
                item["requests"] = requests
        if entry.get("opaque") is None:
            raise meta.required(join(cpath, "opaque"))
        item["opaque"] = _opaque(entry["opaque"], join(cpath, "opaque"))
        out.append(item)
    return out


def _request_refs(obj: Mapping[str, Any], path: str, refs: set[str]) -> list[str]:
    names = rc.get_list(obj, "requests", path, REQUESTS_MAX)
    for j, name in enumerate(names):
        if not isinstance(name, str):
            raise rc.type_error(f"{path}.requests[{j}]", name, "string")
        rc.check_request_ref(f"{path}.requests[{j}]", name, refs)
    rc.check_set(names, join(path, "requests"))
    return list(names)


# --- DeviceClass -------------------------------------------------------------------------------


def _device_class(doc: JSON, ctx: _Ctx) -> None:
    spec = rc.as_obj(doc.get("spec") or {}, "spec")
    rc.fields(spec, "spec", ("selectors", "config", "extendedResourceName", "suitableNodes"))
    out: JSON = {}
    if "selectors" in spec:
        out["selectors"] = _selectors(spec, "spec")
    if "config" in spec:
        out["config"] = _config_list(spec, "spec", CONFIG_MAX, None)
    ext = rc.get_str(spec, "extendedResourceName", "spec")
    if "extendedResourceName" in spec and spec["extendedResourceName"] is not None:
        if not _is_extended_resource_name(ext):
            raise meta.invalid("spec.extendedResourceName", ext, "must be a valid extended resource name")
        out["extendedResourceName"] = ext
    if spec.get("suitableNodes") is not None:
        rc.check_node_selector("spec.suitableNodes", spec["suitableNodes"])
        out["suitableNodes"] = spec["suitableNodes"]
    doc["spec"] = out


def _is_extended_resource_name(name: str) -> bool:
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    try:
        meta.check_qualified_name("", "requests." + name)
    except ValidationError:
        return False
    return True


# --- ResourceClaim / ResourceClaimTemplate -----------------------------------------------------

_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations")
_UNSUPPORTED_REQUEST_FIELDS = ("capacity",)
_REQUEST_FIELDS = ("name", "exactly", "firstAvailable", *_EXACT_FIELDS, *_UNSUPPORTED_REQUEST_FIELDS)
_SUBREQUEST_FIELDS = (
    "name",
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "tolerations",
    "firstAvailable",
    "capacity",
)
_MSG_V1 = "exactly one of `exactly` or `firstAvailable` is required"
_MSG_V1BETA1 = "exactly one of `deviceClassName` or `firstAvailable` must be specified"


def _resource_claim(doc: JSON, ctx: _Ctx) -> None:
    doc["spec"] = _claim_spec(doc.get("spec") or {}, "spec", ctx)
    if doc.get("status") is not None:
        refs = request_refs(doc["spec"])
        doc["status"] = _claim_status(doc["status"], "status", refs, ctx)


def _resource_claim_template(doc: JSON, ctx: _Ctx) -> None:
    spec = rc.as_obj(doc.get("spec") or {}, "spec")
    rc.fields(spec, "spec", ("metadata", "spec"))
    out: JSON = {}
    if spec.get("metadata") is not None:
        md = rc.as_obj(spec["metadata"], "spec.metadata")
        _labels_annotations(md, "spec.metadata")
        out["metadata"] = dict(md)
    out["spec"] = _claim_spec(spec.get("spec") or {}, "spec.spec", ctx)
    doc["spec"] = out


def _claim_spec(raw: object, path: str, ctx: _Ctx) -> JSON:
    spec = rc.as_obj(raw, path)
    rc.fields(spec, path, ("devices", "controllerName"))
    out: JSON = {}
    controller = rc.get_str(spec, "controllerName", path)
    if controller:
        if not gate(ctx.gates, GATE_CONTROL_PLANE_CONTROLLER):
            raise meta.forbidden(
                join(path, "controllerName"), f"requires the {GATE_CONTROL_PLANE_CONTROLLER} feature gate"
            )
        rc.check_driver_name(join(path, "controllerName"), controller)
        out["controllerName"] = controller
    dpath = join(path, "devices")
    devices = rc.get_obj(spec, "devices", path) or {}
    rc.fields(devices, dpath, ("requests", "constraints", "config"))
    requests = [
        _request(r, f"{dpath}.requests[{i}]", ctx)
        for i, r in enumerate(rc.get_list(devices, "requests", dpath, REQUESTS_MAX))
    ]
    rc.check_set(requests, join(dpath, "requests"), key="name")
    refs = request_refs({"devices": {"requests": requests}})
    constraints = [
        _constraint(c, f"{dpath}.constraints[{i}]", refs)
        for i, c in enumerate(rc.get_list(devices, "constraints", dpath, CONSTRAINTS_MAX))
    ]
    config = _config_list(devices, dpath, CONFIG_MAX, refs)
    dout: JSON = {}
    if requests or "requests" in devices:
        dout["requests"] = requests
    if constraints:
        dout["constraints"] = constraints
    if config:
        dout["config"] = config
    out["devices"] = dout
    return out


def request_refs(claim_spec: Mapping[str, Any]) -> set[str]:
    """Names a constraint, config or result may use: every request and every `request/subrequest`."""
    out: set[str] = set()
    for req in (claim_spec.get("devices") or {}).get("requests") or ():
        out.add(req.get("name", ""))
        for sub in req.get("firstAvailable") or ():
            out.add(f"{req.get('name', '')}/{sub.get('name', '')}")
    return out


def _request(raw: object, path: str, ctx: _Ctx) -> JSON:
    req = rc.as_obj(raw, path)
    rc.fields(req, path, _REQUEST_FIELDS)
    for key in _UNSUPPORTED_REQUEST_FIELDS:
        if req.get(key) is not None:
            raise meta.forbidden(join(path, key), NOT_SUPPORTED)
    name = rc.get_str(req, "name", path)
    rc.check_request_name(join(path, "name"), name)
    flat = [k for k in _EXACT_FIELDS if req.get(k) is not None]
    exactly = rc.get_obj(req, "exactly", path)
    has_first = req.get("firstAvailable") is not None and req.get("firstAvailable") != []
    if has_first and not gate(ctx.gates, GATE_PRIORITIZED_LIST):
        raise meta.forbidden(join(path, "firstAvailable"), f"the {GATE_PRIORITIZED_LIST} feature gate is disabled")
    out: JSON = {"name": name}
    if exactly is not None and flat:
        raise meta.forbidden(
            join(path, flat[0]), "must not be set beside `exactly` (v1beta1 puts it on the request, v1 in `exactly`)"
        )
    if flat:  # the v1beta1 shape
        if has_first:
            if "deviceClassName" in flat:
                raise meta.invalid(path, "null", _MSG_V1BETA1)
            raise meta.invalid(join(path, flat[0]), req[flat[0]], "must not be specified when firstAvailable is set")
        if not rc.get_str(req, "deviceClassName", path):
            raise meta.required(path, _MSG_V1BETA1)
        out["exactly"] = _exact({k: req[k] for k in flat}, path, sub=False)
        return out
    if exactly is not None and has_first:
        raise meta.invalid(path, "null", _MSG_V1 + ", but multiple fields are set")
    if exactly is not None:
        epath = join(path, "exactly")
        rc.fields(exactly, epath, (*_EXACT_FIELDS, *_UNSUPPORTED_REQUEST_FIELDS))
        if exactly.get("capacity") is not None:
            raise meta.forbidden(join(epath, "capacity"), NOT_SUPPORTED)
        out["exactly"] = _exact(exactly, epath, sub=False)
        return out
    if not has_first:
        raise meta.required(path, _MSG_V1BETA1 if ctx.beta else _MSG_V1)
    subs = rc.get_list(req, "firstAvailable", path, FIRST_AVAILABLE_MAX)
    out["firstAvailable"] = [_subrequest(s, f"{path}.firstAvailable[{i}]") for i, s in enumerate(subs)]
    rc.check_set(out["firstAvailable"], join(path, "firstAvailable"), key="name")
    return out


def _subrequest(raw: object, path: str) -> JSON:
    sub = rc.as_obj(raw, path)
    rc.fields(sub, path, _SUBREQUEST_FIELDS)
    if sub.get("firstAvailable") is not None:
        raise meta.forbidden(
            join(path, "firstAvailable"), "a subrequest cannot have firstAvailable: nesting is not allowed"
        )
    if sub.get("capacity") is not None:
        raise meta.forbidden(join(path, "capacity"), NOT_SUPPORTED)
    name = rc.get_str(sub, "name", path)
    rc.check_request_name(join(path, "name"), name)
    body = {k: v for k, v in sub.items() if k != "name"}
    return {"name": name, **_exact(body, path, sub=True)}


def _exact(obj: Mapping[str, Any], path: str, *, sub: bool) -> JSON:
    """The body of an exact request (v1 `exactly`, a v1beta1 request, or a subrequest)."""
    class_name = rc.get_str(obj, "deviceClassName", path)
    rc.check_class_name(join(path, "deviceClassName"), class_name)
    out: JSON = {"deviceClassName": class_name}
    selectors = _selectors(obj, path)
    if selectors:
        out["selectors"] = selectors
    mode = rc.get_str(obj, "allocationMode", path) or EXACT_COUNT
    count = rc.get_int(obj, "count", path)
    if mode == EXACT_COUNT:
        count = 1 if count is None else count
        if count <= 0:
            raise meta.invalid(join(path, "count"), count, "must be greater than zero")
        out["allocationMode"] = mode
        out["count"] = count
    elif mode == ALL:
        if count:
            raise meta.invalid(join(path, "count"), count, f"must not be specified when allocationMode is '{ALL}'")
        out["allocationMode"] = mode
    else:
        raise meta.not_supported(join(path, "allocationMode"), mode, ALLOCATION_MODES)
    if not sub:
        admin = rc.get_bool(obj, "adminAccess", path)
        if admin is not None:
            out["adminAccess"] = admin
    tolerations = [
        _toleration(t, f"{path}.tolerations[{i}]") for i, t in enumerate(rc.get_list(obj, "tolerations", path))
    ]
    if tolerations:
        out["tolerations"] = tolerations
    return out


def _toleration(raw: object, path: str) -> JSON:
    tol = rc.as_obj(raw, path)
    rc.fields(tol, path, ("key", "operator", "value", "effect", "tolerationSeconds"))
    key = rc.get_str(tol, "key", path)
    operator = rc.get_str(tol, "operator", path) or "Equal"
    value = rc.get_str(tol, "value", path)
    effect = rc.get_str(tol, "effect", path)
    seconds = rc.get_int(tol, "tolerationSeconds", path)
    if key:
        meta.check_qualified_name(join(path, "key"), key)
    if operator not in ("Equal", "Exists"):
        raise meta.not_supported(join(path, "operator"), operator, ("Equal", "Exists"))
    if operator == "Exists" and value:
        raise meta.invalid(join(path, "operator"), value, "value must be empty when `operator` is 'Exists'")
    if operator == "Equal":
        if not key:
            raise meta.invalid(join(path, "operator"), operator, "operator must be Exists when `key` is empty")
        meta.check_labels(join(path, "value"), {"k": value})
    if effect not in ("", "NoSchedule", "NoExecute"):
        raise meta.not_supported(join(path, "effect"), effect, ("NoExecute", "NoSchedule"))
    if seconds is not None and effect != "NoExecute":
        raise meta.invalid(join(path, "effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
    out: JSON = {"operator": operator}
    for k, v in (("key", key), ("value", value), ("effect", effect)):
        if v:
            out[k] = v
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


def _constraint(raw: object, path: str, refs: set[str]) -> JSON:
    con = rc.as_obj(raw, path)
    rc.fields(con, path, ("requests", "matchAttribute", "distinctAttribute"))
    out: JSON = {}
    requests = _request_refs(con, path, refs)
    if requests:
        out["requests"] = requests
    match = rc.get_str(con, "matchAttribute", path)
    distinct = rc.get_str(con, "distinctAttribute", path)
    if match and distinct:
        raise meta.invalid(path, "null", "at most one of `matchAttribute` or `distinctAttribute` may be set")
    if not match and not distinct:
        raise meta.required(path, "exactly one of `matchAttribute` or `distinctAttribute` is required")
    key = "matchAttribute" if match else "distinctAttribute"
    rc.check_fully_qualified_name(join(path, key), match or distinct)
    out[key] = match or distinct
    return out


def _claim_status(raw: object, path: str, refs: set[str], ctx: _Ctx) -> JSON:
    status = rc.as_obj(raw, path)
    rc.fields(status, path, ("allocation", "reservedFor", "deallocationRequested", "devices"))
    out: JSON = {}
    allocation = rc.get_obj(status, "allocation", path)
    if allocation is not None:
        out["allocation"] = _allocation(allocation, join(path, "allocation"), refs, ctx)
    reserved = rc.get_list(status, "reservedFor", path, RESERVED_FOR_MAX)
    out_reserved: list[JSON] = []
    for i, raw_ref in enumerate(reserved):
        rpath = f"{path}.reservedFor[{i}]"
        ref = rc.as_obj(raw_ref, rpath)
        rc.fields(ref, rpath, ("apiGroup", "resource", "name", "uid"))
        item: JSON = {}
        for key in ("apiGroup", "resource", "name", "uid"):
            value = rc.get_str(ref, key, rpath)
            if not value and key != "apiGroup":
                raise meta.required(join(rpath, key))
            if value:
                item[key] = value
        out_reserved.append(item)
    rc.check_set(out_reserved, join(path, "reservedFor"), key="uid")
    if out_reserved:
        if allocation is None:
            raise meta.forbidden(join(path, "reservedFor"), "may not be specified when `allocated` is not set")
        out["reservedFor"] = out_reserved
    dealloc = rc.get_bool(status, "deallocationRequested", path)
    if dealloc:
        dpath = join(path, "deallocationRequested")
        if not gate(ctx.gates, GATE_CONTROL_PLANE_CONTROLLER):
            raise meta.forbidden(dpath, f"requires the {GATE_CONTROL_PLANE_CONTROLLER} feature gate")
        if allocation is None:
            raise meta.forbidden(dpath, "deallocation cannot be requested for claims which are not allocated")
        if out_reserved:
            raise meta.forbidden(dpath, "deallocation cannot be requested while `reservedFor` is set")
        out["deallocationRequested"] = True
    if status.get("devices") is not None:
        out["devices"] = rc.get_list(status, "devices", path)
    return out


_RESULT_FIELDS = (
    "request",
    "driver",
    "pool",
    "device",
    "adminAccess",
    "tolerations",
    "bindingConditions",
    "bindingFailureConditions",
    "shareID",
    "consumedCapacity",
)


def _allocation(alloc: Mapping[str, Any], path: str, refs: set[str], ctx: _Ctx) -> JSON:
    rc.fields(alloc, path, ("devices", "nodeSelector", "controller", "allocationTimestamp"))
    out: JSON = {}
    dpath = join(path, "devices")
    devices = rc.get_obj(alloc, "devices", path) or {}
    rc.fields(devices, dpath, ("results", "config"))
    results: list[JSON] = []
    for i, raw in enumerate(rc.get_list(devices, "results", dpath, ALLOCATION_RESULTS_MAX)):
        rpath = f"{dpath}.results[{i}]"
        res = rc.as_obj(raw, rpath)
        rc.fields(res, rpath, _RESULT_FIELDS)
        rc.check_request_ref(join(rpath, "request"), rc.get_str(res, "request", rpath), refs)
        rc.check_driver_name(join(rpath, "driver"), rc.get_str(res, "driver", rpath))
        rc.check_pool_name(join(rpath, "pool"), rc.get_str(res, "pool", rpath))
        rc.check_device_name(join(rpath, "device"), rc.get_str(res, "device", rpath))
        rc.get_bool(res, "adminAccess", rpath)
        results.append(dict(res))
    out["devices"] = {"results": results}
    config = _config_list(devices, dpath, 2 * CONFIG_MAX, refs, source=True)
    if config:
        out["devices"]["config"] = config
    if alloc.get("nodeSelector") is not None:
        rc.check_node_selector(join(path, "nodeSelector"), alloc["nodeSelector"])
        out["nodeSelector"] = alloc["nodeSelector"]
    controller = rc.get_str(alloc, "controller", path)
    if controller:
        if not gate(ctx.gates, GATE_CONTROL_PLANE_CONTROLLER):
            raise meta.forbidden(join(path, "controller"), f"requires the {GATE_CONTROL_PLANE_CONTROLLER} feature gate")
        rc.check_driver_name(join(path, "controller"), controller)
        out["controller"] = controller
    if alloc.get("allocationTimestamp") is not None:
        out["allocationTimestamp"] = rc.get_str(alloc, "allocationTimestamp", path)
    return out


def _claim_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    ns, os_ = new.get("status") or {}, old.get("status") or {}
    if ns.get("allocation") is not None and os_.get("allocation") is not None and ns["allocation"] != os_["allocation"]:
        raise _immutable("status.allocation")
    deleting = bool((new.get("metadata") or {}).get("deletionTimestamp")) or bool(ns.get("deallocationRequested"))
    if deleting:
        before = {r.get("uid") for r in os_.get("reservedFor") or ()}
        if any(r.get("uid") not in before for r in ns.get("reservedFor") or ()):
            raise meta.forbidden(
                "status.reservedFor",
                "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
            )


# --- ResourceSlice -----------------------------------------------------------------------------

_SLICE_UNSUPPORTED = ("perDeviceNodeSelection", "sharedCounters")
_DEVICE_FIELDS = ("name", "attributes", "capacity", "basic")
_DEVICE_UNSUPPORTED = (
    "consumesCounters",
    "nodeName",
    "nodeSelector",
    "allNodes",
    "taints",
    "bindsToNode",
    "bindingConditions",
    "bindingFailureConditions",
    "allowMultipleAllocations",
)


def _resource_slice(doc: JSON, ctx: _Ctx) -> None:
    spec = rc.as_obj(doc.get("spec") or {}, "spec")
    rc.fields(spec, "spec", ("driver", "pool", "nodeName", "nodeSelector", "allNodes", "devices", *_SLICE_UNSUPPORTED))
    for key in _SLICE_UNSUPPORTED:
        if spec.get(key) is not None and spec.get(key) is not False:
            raise meta.forbidden(f"spec.{key}", NOT_SUPPORTED)
    driver = rc.get_str(spec, "driver", "spec")
    rc.check_driver_name("spec.driver", driver)
    out: JSON = {"driver": driver, "pool": _pool(spec.get("pool"), "spec.pool")}
    node_name = rc.get_str(spec, "nodeName", "spec")
    selector = spec.get("nodeSelector")
    all_nodes = bool(rc.get_bool(spec, "allNodes", "spec"))
    if node_name:
        rc.check_node_name("spec.nodeName", node_name)
        out["nodeName"] = node_name
    if selector is not None:
        rc.check_node_selector("spec.nodeSelector", selector)
        if len(selector.get("nodeSelectorTerms") or ()) != 1:
            raise meta.invalid(
                "spec.nodeSelector.nodeSelectorTerms", "<value omitted>", "must have exactly one node selector term"
            )
        out["nodeSelector"] = selector
    if all_nodes:
        out["allNodes"] = True
    chosen = sum((bool(node_name), selector is not None, all_nodes))
    if chosen == 0:
        raise meta.required("spec", "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required")
    if chosen > 1:
        raise meta.invalid(
            "spec",
            "{`nodeName`, `nodeSelector`, `allNodes`}",
            "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required",
        )
    devices = [
        _slice_device(d, f"spec.devices[{i}]")
        for i, d in enumerate(rc.get_list(spec, "devices", "spec", SLICE_DEVICES_MAX))
    ]
    rc.check_set(devices, "spec.devices", key="name")
    out["devices"] = devices
    doc["spec"] = out


def _pool(raw: object, path: str) -> JSON:
    if raw is None:
        raise meta.required(join(path, "name"))
    pool = rc.as_obj(raw, path)
    rc.fields(pool, path, ("name", "generation", "resourceSliceCount"))
    name = rc.get_str(pool, "name", path)
    rc.check_pool_name(join(path, "name"), name)
    generation = rc.get_int(pool, "generation", path) or 0
    if generation < 0:
        raise meta.invalid(join(path, "generation"), generation, "must be greater than or equal to zero")
    count = rc.get_int(pool, "resourceSliceCount", path) or 0
    if count <= 0:
        raise meta.invalid(join(path, "resourceSliceCount"), count, "must be greater than zero")
    return {"name": name, "generation": generation, "resourceSliceCount": count}


def _slice_device(raw: object, path: str) -> JSON:
    dev = rc.as_obj(raw, path)
    rc.fields(dev, path, (*_DEVICE_FIELDS, *_DEVICE_UNSUPPORTED))
    name = rc.get_str(dev, "name", path)
    rc.check_device_name(join(path, "name"), name)
    body, bpath = dev, path
    if dev.get("basic") is not None:  # v1beta1: devices[].basic.{attributes,capacity}
        for key in ("attributes", "capacity"):
            if dev.get(key) is not None:
                raise meta.forbidden(join(path, key), "must not be set beside `basic` (v1beta1 shape)")
        bpath = join(path, "basic")
        body = rc.as_obj(dev["basic"], bpath)
        rc.fields(body, bpath, ("attributes", "capacity", *_DEVICE_UNSUPPORTED))
    for key in _DEVICE_UNSUPPORTED:
        if body.get(key) is not None and body.get(key) is not False:
            raise meta.forbidden(join(bpath, key), NOT_SUPPORTED)
    attributes: JSON = {}
    apath = join(bpath, "attributes")
    for key, value in (rc.get_obj(body, "attributes", bpath) or {}).items():
        kpath = f"{apath}[{key}]"
        rc.check_qualified_name(kpath, str(key))
        attributes[str(key)] = _attribute(value, kpath)
    capacity: JSON = {}
    cpath = join(bpath, "capacity")
    for key, value in (rc.get_obj(body, "capacity", bpath) or {}).items():
        kpath = f"{cpath}[{key}]"
        rc.check_qualified_name(kpath, str(key))
        capacity[str(key)] = _capacity(value, kpath)
    combined = len(attributes) + len(capacity)
    if combined > ATTRIBUTES_AND_CAPACITIES_MAX:
        raise meta.invalid(
            bpath,
            combined,
            f"the total number of attributes and capacities must not exceed {ATTRIBUTES_AND_CAPACITIES_MAX}",
        )
    out: JSON = {"name": name}
    if attributes:
        out["attributes"] = attributes
    if capacity:
        out["capacity"] = capacity
    return out


def _attribute(raw: object, path: str) -> JSON:
    attr = rc.as_obj(raw, path)
    rc.fields(attr, path, ("int", "bool", "string", "version"))
    present = [k for k in ("int", "bool", "string", "version") if attr.get(k) is not None]
    if not present:
        raise meta.required(path, "exactly one value must be specified")
    if len(present) > 1:
        raise meta.invalid(path, "<value omitted>", "exactly one value must be specified")
    kind = present[0]
    value: object
    if kind == "int":
        value = rc.get_int(attr, "int", path)
    elif kind == "bool":
        value = rc.get_bool(attr, "bool", path)
    else:
        text = rc.get_str(attr, kind, path)
        if len(text) > rc.ATTRIBUTE_VALUE_MAX_LENGTH:
            raise rc.too_long_bytes(join(path, kind), rc.ATTRIBUTE_VALUE_MAX_LENGTH)
        if kind == "version":
            rc.check_semver(join(path, kind), text)
        value = text
    return {kind: value}


def _capacity(raw: object, path: str) -> JSON:
    if not isinstance(raw, Mapping):  # v1alpha3: a bare quantity
        return {"value": rc.check_quantity(path, raw)}
    rc.fields(raw, path, ("value", "requestPolicy"))
    if raw.get("requestPolicy") is not None:
        raise meta.forbidden(join(path, "requestPolicy"), NOT_SUPPORTED)
    if raw.get("value") is None:
        raise meta.required(join(path, "value"))
    return {"value": rc.check_quantity(join(path, "value"), raw["value"])}


# --- PodSchedulingContext ----------------------------------------------------------------------


def _pod_scheduling_context(doc: JSON, ctx: _Ctx) -> None:
    spec = rc.as_obj(doc.get("spec") or {}, "spec")
    rc.fields(spec, "spec", ("selectedNode", "potentialNodes"))
    out: JSON = {}
    selected = rc.get_str(spec, "selectedNode", "spec")
    if selected:
        rc.check_node_name("spec.selectedNode", selected)
        out["selectedNode"] = selected
    potential = _node_list(spec, "potentialNodes", "spec")
    if potential:
        out["potentialNodes"] = potential
    doc["spec"] = out
    if doc.get("status") is None:
        return
    status = rc.as_obj(doc["status"], "status")
    rc.fields(status, "status", ("resourceClaims",))
    claims: list[JSON] = []
    seen: set[str] = set()
    for i, raw in enumerate(rc.get_list(status, "resourceClaims", "status")):
        cpath = f"status.resourceClaims[{i}]"
        entry = rc.as_obj(raw, cpath)
        rc.fields(entry, cpath, ("name", "unsuitableNodes"))
        name = rc.get_str(entry, "name", cpath)
        if not name:
            raise meta.required(join(cpath, "name"))
        if name in seen:
            raise meta.duplicate(cpath, name)
        seen.add(name)
        item: JSON = {"name": name}
        unsuitable = _node_list(entry, "unsuitableNodes", cpath)
        if unsuitable:
            item["unsuitableNodes"] = unsuitable
        claims.append(item)
    doc["status"] = {"resourceClaims": claims} if claims else {}


def _node_list(obj: Mapping[str, Any], key: str, path: str) -> list[str]:
    nodes = rc.get_list(obj, key, path, NODE_LIST_MAX)
    for i, name in enumerate(nodes):
        if not isinstance(name, str):
            raise rc.type_error(f"{path}.{key}[{i}]", name, "string")
        rc.check_node_name(f"{path}.{key}[{i}]", name)
    rc.check_set(nodes, join(path, key))
    return list(nodes)


# --- Node --------------------------------------------------------------------------------------


def _node(doc: JSON, ctx: _Ctx) -> None:
    if doc.get("spec") is not None:
        rc.as_obj(doc["spec"], "spec")
    if doc.get("status") is None:
        return
    status: JSON = dict(rc.as_obj(doc["status"], "status"))
    for key in ("capacity", "allocatable"):
        values = rc.get_obj(status, key, "status")
        if values is None:
            continue
        out: dict[str, str] = {}
        for name, raw in values.items():
            qpath = f"status.{key}[{name}]"
            text = rc.check_quantity(qpath, raw)
            if text.startswith("-"):
                raise meta.invalid(qpath, raw, "must be greater than or equal to 0")
            out[str(name)] = text
        status[key] = out
    doc["status"] = status


_VALIDATORS: dict[str, Callable[[JSON, _Ctx], None]] = {
    "DeviceClass": _device_class,
    "ResourceClaim": _resource_claim,
    "ResourceClaimTemplate": _resource_claim_template,
    "ResourceSlice": _resource_slice,
    "PodSchedulingContext": _pod_scheduling_context,
    "Node": _node,
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
