"""The edge for device taints (KEP-5055) and binding conditions (KEP-5007): store JSON to
allocator model and back.

Why a module of its own: basic.py translates the fields every claim and slice has; these
exist only with their feature gates. In: a slice device's taints (its own plus those of the
DeviceTaintRules that select it), bindsToNode and binding (failure) conditions; a request's
tolerations. Out: a result's tolerations and binding conditions. Also the readers the
scheduler's PreBind wait and the eviction controller share: which devices of an allocation
have binding conditions, and the conditions a driver reported in status.devices. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.controlplane import allocator as model
from nodeagent.controlplane.allocator.taints import Taint, Toleration


def taint(raw: Mapping[str, Any]) -> Taint:
    return Taint(str(raw.get("key") or ""), str(raw.get("effect") or ""), str(raw.get("value") or ""),
                 str(raw.get("timeAdded") or ""))


def toleration(raw: Mapping[str, Any]) -> Toleration:
    seconds = raw.get("tolerationSeconds")
    return Toleration(str(raw.get("key") or ""), str(raw.get("operator") or "Equal"), str(raw.get("value") or ""),
                      str(raw.get("effect") or ""), None if seconds is None else int(seconds))


def device_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of model.Device for a stored device's taint and binding fields."""
    out: dict[str, Any] = {}
    if raw.get("taints"):
        out["taints"] = tuple(taint(t) for t in raw["taints"])
    if raw.get("bindingConditions"):
        out["binding_conditions"] = tuple(raw["bindingConditions"])
        out["binding_failure_conditions"] = tuple(raw.get("bindingFailureConditions") or ())
    if raw.get("bindsToNode"):
        out["binds_to_node"] = True
    return out


def tolerations(body: Mapping[str, Any] | None) -> tuple[Toleration, ...]:
    """An exact request's or subrequest's tolerations."""
    return tuple(toleration(t) for t in (body or {}).get("tolerations") or ())


def toleration_json(t: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": t.operator}
    if t.key:
        out["key"] = t.key
    if t.value:
        out["value"] = t.value
    if t.effect:
        out["effect"] = t.effect
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def result_json(device: model.AllocatedDevice, item: dict[str, Any]) -> None:
    """Add tolerations and binding (failure) conditions to a result entry."""
    if device.tolerations:
        item["tolerations"] = [toleration_json(t) for t in device.tolerations]
    if device.binding_conditions:
        item["bindingConditions"] = list(device.binding_conditions)
        item["bindingFailureConditions"] = list(device.binding_failure_conditions)


# --- readers of allocated claims ------------------------------------------------------------------


def results(claim_obj: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    alloc = (claim_obj.get("status") or {}).get("allocation") or {}
    return (alloc.get("devices") or {}).get("results") or ()


def device_conditions(claim_obj: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, str]:
    """type -> status of the conditions status.devices reports for the device of `result`."""
    ident = (result.get("driver"), result.get("pool"), result.get("device"), result.get("shareID") or "")
    for entry in (claim_obj.get("status") or {}).get("devices") or ():
        if (entry.get("driver"), entry.get("pool"), entry.get("device"), entry.get("shareID") or "") == ident:
            return {str(c.get("type")): str(c.get("status")) for c in entry.get("conditions") or ()}
    return {}
