"""The edge for partitionable devices (KEP-4815) and consumable capacity (KEP-5075): store JSON
to allocator model and back.

Why a module of its own: basic.py translates the fields every claim and slice has; these
fields exist only with their feature gates, and reading them apart keeps that module small.
In: a slice's counter sets and per-device node selection, a device's counter consumption,
allowMultipleAllocations and capacity request policies, a request's capacity requests. Out: a
result's shareID and consumedCapacity, and what a stored claim consumes of shared devices (the
scheduler cache sums it per device). Quantities become ints in base units. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.cel.selectors import quantity_value
from nodeagent.controlplane import allocator as model
from nodeagent.objects.resource.views import qualify
from nodeagent.util import quantity

NodeSelectorOf = Callable[[Mapping[str, Any]], model.NodeSelector]


def _amounts(raw: Mapping[str, Any] | None) -> dict[str, int]:
    return {str(k): quantity_value(str(v["value"] if isinstance(v, Mapping) else v)) for k, v in (raw or {}).items()}


def slice_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of model.ResourceSlice for the slice-level feature fields."""
    out: dict[str, Any] = {}
    if spec.get("perDeviceNodeSelection"):
        out["per_device_node_selection"] = True
    sets = spec.get("sharedCounters")
    if sets:
        out["shared_counters"] = {s["name"]: _amounts(s.get("counters")) for s in sets}
    return out


def device_fields(raw: Mapping[str, Any], driver: str, node_selector: NodeSelectorOf) -> dict[str, Any]:
    """Keyword arguments of model.Device for one stored device's feature fields."""
    out: dict[str, Any] = {}
    consumes = raw.get("consumesCounters")
    if consumes:
        out["consumes_counters"] = tuple((c["counterSet"], _amounts(c.get("counters"))) for c in consumes)
    if raw.get("nodeName"):
        out["node_name"] = raw["nodeName"]
    if raw.get("allNodes"):
        out["all_nodes"] = True
    if raw.get("nodeSelector"):
        out["node_selector"] = node_selector(raw["nodeSelector"])
    if raw.get("allowMultipleAllocations"):
        out["allow_multiple_allocations"] = True
    policies = {
        qualify(name, driver): _policy(cap["requestPolicy"])
        for name, cap in (raw.get("capacity") or {}).items()
        if isinstance(cap, Mapping) and cap.get("requestPolicy")
    }
    if policies:
        out["request_policies"] = policies
    if raw.get("allowMultipleAllocations"):
        out["capacity_formats"] = {
            qualify(name, driver): quantity.format_of(str(cap.get("value")))
            for name, cap in (raw.get("capacity") or {}).items() if isinstance(cap, Mapping)
        }
        fractional = {
            qualify(name, driver): value
            for name, cap in (raw.get("capacity") or {}).items() if isinstance(cap, Mapping)
            if isinstance(value := quantity.exact(str(cap.get("value"))), quantity.Fractional)
        }
        if fractional:
            out["fractional_capacity"] = fractional
    names = {qualify(name, driver): name for name in raw.get("capacity") or {} if qualify(name, driver) != name}
    if names:
        out["capacity_names"] = names
    return out


def _policy(raw: Mapping[str, Any]) -> model.RequestPolicy:
    def q(value: Any) -> model.Num | None:
        return None if value is None else quantity.exact(str(value))

    rng = raw.get("validRange") or {}
    return model.RequestPolicy(
        default=q(raw.get("default")),
        valid_values=tuple(quantity.exact(str(v)) for v in raw.get("validValues") or ()),
        min=q(rng.get("min")),
        max=q(rng.get("max")),
        step=q(rng.get("step")),
    )


def capacity_requests(body: Mapping[str, Any]) -> dict[str, model.Num]:
    """An exact request's or subrequest's capacity.requests (names as written), exactly."""
    return {str(k): quantity.exact(str(v)) for k, v in ((body.get("capacity") or {}).get("requests") or {}).items()}


def request_bodies(claim_obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """`request` and `request/subrequest` -> the body that carries its capacity requests."""
    spec = claim_obj.get("spec") or {}
    if claim_obj.get("kind") == "ResourceClaimTemplate":
        spec = spec.get("spec") or {}
    out: dict[str, Mapping[str, Any]] = {}
    for req in (spec.get("devices") or {}).get("requests") or ():
        if req.get("exactly") is not None:
            out[req["name"]] = req["exactly"]
        for sub in req.get("firstAvailable") or ():
            out[f"{req['name']}/{sub['name']}"] = sub
    return out


def result_json(device: model.AllocatedDevice, item: dict[str, Any]) -> None:
    """Add shareID and consumedCapacity (names as the slice has them) to a result entry."""
    if not device.share_id:
        return
    item["shareID"] = device.share_id
    item["consumedCapacity"] = {name: format_quantity(amount) for name, amount in device.consumed_capacity}


def format_quantity(value: model.Num) -> str:
    """consumedCapacity text of an amount: Quantity.String() in the format the amount came with
    (quantity.Amount or Fractional), DecimalSI for a bare number."""
    return quantity.exact_string(value, getattr(value, "fmt", quantity.DECIMAL_SI))


def shared_consumption(claim_obj: Mapping[str, Any]) -> list[tuple[model.DeviceId, dict[str, model.Num]]]:
    """What an allocated claim consumes of shared devices: results that carry a shareID."""
    alloc = (claim_obj.get("status") or {}).get("allocation")
    if not alloc:
        return []
    out = []
    for r in (alloc.get("devices") or {}).get("results") or ():
        if r.get("shareID"):
            consumed: dict[str, model.Num] = {qualify(str(k), r["driver"]): quantity.exact(str(v))
                        for k, v in (r.get("consumedCapacity") or {}).items()}
            out.append(((str(r["driver"]), str(r["pool"]), str(r["device"])), consumed))
    return out
