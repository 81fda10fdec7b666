"""ResourceClaim and ResourceClaimTemplate spec validation: requests (v1 `exactly`, the v1beta1
flat shape moved under `exactly`, and `firstAvailable` subrequests), tolerations, constraints
and claim config, with defaults (allocationMode ExactCount, count 1) filled in.

Why a module of its own: the claim spec is the largest and most version-sensitive part of DRA
admission (the error path follows the shape the user wrote), and both claim kinds share it.
A claim's status is checked separately in claim_status.py because the scheduler
writes it alone, many times per pod. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.kinds.resource_conversion import EXACT_FIELDS
from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON, join
from nodeagent.objects.resource import device_taints
from nodeagent.objects.resource.claim_status import claim_status
from nodeagent.objects.resource.device_class import config_list, device_selectors, request_ref_list
from nodeagent.objects.resource.shared import (
    ALL,
    ALLOCATION_MODES,
    CONFIG_MAX,
    CONSTRAINTS_MAX,
    EXACT_COUNT,
    FIRST_AVAILABLE_MAX,
    GATE_CONTROL_PLANE_CONTROLLER,
    GATE_PRIORITIZED_LIST,
    REQUESTS_MAX,
    Ctx,
    gate,
    labels_annotations,
    raise_all,
)
from nodeagent.objects.resource.slice_features import capacity_requirements
from nodeagent.store import validation as meta

# --- ResourceClaim / ResourceClaimTemplate -----------------------------------------------------

_REQUEST_FIELDS = ("name", "exactly", "firstAvailable", *EXACT_FIELDS)
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


def validate_resource_claim(doc: JSON, ctx: Ctx) -> None:
    doc["spec"] = _remembered_spec(doc.get("spec") or {}, ctx)
    if doc.get("status") is not None:
        refs = request_refs(doc["spec"])
        doc["status"] = claim_status(doc["status"], "status", refs, ctx)


def _remembered_spec(raw: object, ctx: Ctx) -> JSON:
    """The normalised spec, from ctx.specs when an equal spec was valid before."""
    memo = ctx.specs
    key = memo.key(raw, ctx.beta) if memo is not None else None
    if key is None or memo is None:
        return _claim_spec(raw, "spec", ctx)
    found: JSON | None = memo.get(key)
    if found is None:
        found = memo.put(key, _claim_spec(raw, "spec", ctx))
    return found


def validate_resource_claim_template(doc: JSON, ctx: Ctx) -> None:
    spec = rc.as_obj(doc.get("spec") or {}, "spec")
    rc.fields(spec, "spec", ("metadata", "spec"))
    out: JSON = {}
    if spec.get("metadata") is not None:
        md = rc.as_obj(spec["metadata"], "spec.metadata")
        labels_annotations(md, "spec.metadata")
        out["metadata"] = dict(md)
    out["spec"] = _claim_spec(spec.get("spec") or {}, "spec.spec", ctx)
    doc["spec"] = out


def _claim_spec(raw: object, path: str, ctx: Ctx) -> JSON:
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
    # every request, constraint and config is checked and every error reported, as upstream
    errors: list[ValidationError] = []
    raw = rc.get_list(devices, "requests", dpath, REQUESTS_MAX)
    try:  # names as written: a constraint or config naming an invalid request is not wrong too
        named = request_refs({"devices": {"requests": [r for r in raw if isinstance(r, Mapping)]}})
    except (AttributeError, TypeError):
        named = set()
    requests = _each(errors, [partial(_request, r, f"{dpath}.requests[{i}]", ctx) for i, r in enumerate(raw)])
    if not errors:
        rc.check_set(requests, join(dpath, "requests"), key="name")
    refs = request_refs({"devices": {"requests": requests}}) | (named if errors else set())
    constraints = _each(errors, [partial(_constraint, c, f"{dpath}.constraints[{i}]", refs)
                                 for i, c in enumerate(rc.get_list(devices, "constraints", dpath, CONSTRAINTS_MAX))])
    configs = _each(errors, [partial(config_list, devices, dpath, CONFIG_MAX, refs)])
    raise_all(errors)
    config = configs[0]
    dout: JSON = {}
    if requests or "requests" in devices:
        dout["requests"] = requests
    if constraints:
        dout["constraints"] = constraints
    if config:
        dout["config"] = config
    out["devices"] = dout
    return out


def _each(errors: list[ValidationError], checks: Iterable[Callable[[], Any]]) -> list[Any]:
    """Run every check; collect the results, and the errors into `errors`."""
    out = []
    for check in checks:
        try:
            out.append(check())
        except ValidationError as err:
            errors.append(err)
    return out


def request_refs(claim_spec: Mapping[str, Any]) -> set[str]:
    """Names a constraint, config or result may use: every request and every `request/subrequest`."""
    out: set[str] = set()
    for req in (claim_spec.get("devices") or {}).get("requests") or ():
        out.add(req.get("name", ""))
        for sub in req.get("firstAvailable") or ():
            out.add(f"{req.get('name', '')}/{sub.get('name', '')}")
    return out


def _request(raw: object, path: str, ctx: Ctx) -> JSON:
    req = rc.as_obj(raw, path)
    rc.fields(req, path, _REQUEST_FIELDS)
    name = rc.get_str(req, "name", path)
    try:
        rc.check_request_name(join(path, "name"), name)
    except ValidationError as err:
        # validateDeviceRequest lists the name's error and goes on to check the rest of the request
        try:
            _request_body(req, name, path, ctx)
        except ValidationError as more:
            raise_all([err, more])
        raise
    return _request_body(req, name, path, ctx)


def _request_body(req: Mapping[str, Any], name: str, path: str, ctx: Ctx) -> JSON:
    flat = [k for k in EXACT_FIELDS if req.get(k) is not None]
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
        out["exactly"] = _exact({k: req[k] for k in flat}, path, sub=False, ctx=ctx)
        return out
    if exactly is not None and has_first:
        raise meta.invalid(path, "null", _MSG_V1 + ", but multiple fields are set")
    if exactly is not None:
        epath = join(path, "exactly")
        rc.fields(exactly, epath, EXACT_FIELDS)
        out["exactly"] = _exact(exactly, epath, sub=False, ctx=ctx)
        return out
    if not has_first:
        raise meta.required(path, _MSG_V1BETA1 if ctx.beta else _MSG_V1)
    subs = rc.get_list(req, "firstAvailable", path, FIRST_AVAILABLE_MAX)
    out["firstAvailable"] = [_subrequest(s, f"{path}.firstAvailable[{i}]", ctx) for i, s in enumerate(subs)]
    rc.check_set(out["firstAvailable"], join(path, "firstAvailable"), key="name")
    return out


def _subrequest(raw: object, path: str, ctx: Ctx) -> JSON:
    sub = rc.as_obj(raw, path)
    rc.fields(sub, path, _SUBREQUEST_FIELDS)
    if sub.get("firstAvailable") is not None:
        raise meta.forbidden(
            join(path, "firstAvailable"), "a subrequest cannot have firstAvailable: nesting is not allowed"
        )
    name = rc.get_str(sub, "name", path)
    rc.check_request_name(join(path, "name"), name)
    body = {k: v for k, v in sub.items() if k != "name"}
    return {"name": name, **_exact(body, path, sub=True, ctx=ctx)}


def _exact(obj: Mapping[str, Any], path: str, *, sub: bool, ctx: Ctx) -> JSON:
    """The body of an exact request (v1 `exactly`, a v1beta1 request, or a subrequest)."""
    class_name = rc.get_str(obj, "deviceClassName", path)
    rc.check_class_name(join(path, "deviceClassName"), class_name)
    out: JSON = {"deviceClassName": class_name}
    selectors = device_selectors(obj, path)
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
    tolerations = device_taints.tolerations(obj, path, ctx.gates)
    if tolerations:
        out["tolerations"] = tolerations
    capacity = capacity_requirements(obj, path, ctx.gates)
    if capacity is not None:
        out["capacity"] = capacity
    return out


def _constraint(raw: object, path: str, refs: set[str]) -> JSON:
    con = rc.as_obj(raw, path)
    rc.fields(con, path, ("requests", "matchAttribute", "distinctAttribute"))
    out: JSON = {}
    requests = request_ref_list(con, path, refs)
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
