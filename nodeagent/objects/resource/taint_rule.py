"""DeviceTaintRule (KEP-5055, resource.k8s.io): one taint for every device a selector picks.

Why a kind of its own: an admin taints devices without reconfiguring the driver (a device to be
drained, a whole pool under maintenance); the scheduler merges the rule's taint into the
matching devices as if the driver had published it, and the eviction controller evicts the pods
using a device a NoExecute rule selects. The shape is upstream's since 1.35 (v1alpha3, v1beta2,
and v1 where DRADeviceTaintRules is GA): spec.deviceSelector {driver, pool, device} (1.34's
deviceClassName and CEL selectors were dropped), spec.taint {key, value, effect, timeAdded},
status.conditions (at most 8, metav1.Condition; the controller reports EvictionInProgress).

Validation follows pkg/apis/resource/validation ValidateDeviceTaintRule(Update) and
ValidateDeviceTaintRuleStatusUpdate; the kind exists only with the DRADeviceTaintRules gate
(beside DRADeviceTaints). `stamp_time_added` is the strategy's timeAdded rule. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON, join
from nodeagent.objects.resource.device_taints import GATE_DEVICE_TAINTS, conditions_list, taint
from nodeagent.objects.resource.shared import Ctx, Gates, gate
from nodeagent.store import validation as meta

GATE_TAINT_RULES = "DRADeviceTaintRules"
KIND = "DeviceTaintRule"
STATUS_CONDITIONS_MAX = 8  # DeviceTaintRuleStatusMaxConditions
CONDITION_EVICTION_IN_PROGRESS = "EvictionInProgress"


def rules_enabled(gates: Gates) -> bool:
    return gate(gates, GATE_DEVICE_TAINTS) and gate(gates, GATE_TAINT_RULES)


def validate_device_taint_rule(doc: JSON, ctx: Ctx) -> None:
    """spec (and status when present) of a DeviceTaintRule, as stored."""
    if not rules_enabled(ctx.gates):
        raise meta.forbidden("kind", f"{KIND} requires the {GATE_DEVICE_TAINTS} and {GATE_TAINT_RULES} feature gates")
    rc.fields(doc, "", ("apiVersion", "kind", "metadata", "spec", "status"))
    spec = rc.get_obj(doc, "spec", "")
    if spec is None:
        raise meta.required("spec.taint.key")
    rc.fields(spec, "spec", ("deviceSelector", "taint"))
    out: JSON = {}
    selector = rc.get_obj(spec, "deviceSelector", "spec")
    if selector is not None:
        out["deviceSelector"] = _selector(selector, "spec.deviceSelector")
    raw_taint = spec.get("taint")
    if raw_taint is None:
        raise meta.required("spec.taint.key")
    out["taint"] = taint(raw_taint, "spec.taint")
    doc["spec"] = out
    if doc.get("status") is not None:
        doc["status"] = rule_status(doc["status"])


def _selector(sel: Mapping[str, Any], path: str) -> JSON:
    """validateDeviceTaintSelector: each field set is checked as the name it corresponds to."""
    rc.fields(sel, path, ("driver", "pool", "device"))
    out: JSON = {}
    for key, check in (("driver", rc.check_driver_name), ("pool", rc.check_pool_name),
                       ("device", rc.check_device_name)):
        if sel.get(key) is None:
            continue
        value = rc.get_str(sel, key, path)
        check(join(path, key), value)
        out[key] = value
    return out


def rule_status(raw: object) -> JSON:
    """status.conditions: metav1 conditions keyed by type, at most 8."""
    status = rc.as_obj(raw, "status")
    rc.fields(status, "status", ("conditions",))
    conditions = conditions_list(status, "conditions", "status", STATUS_CONDITIONS_MAX)
    return {"conditions": conditions} if conditions else {}


def validate_status_write(doc: JSON) -> JSON:
    """A status-subresource write: only the status is checked."""
    out = dict(doc)
    if out.get("status") is not None:
        out["status"] = rule_status(out["status"])
    return out


def stamp_time_added(new: JSON, old: Mapping[str, Any] | None, now: str) -> None:
    """Upstream's strategy: timeAdded is set when missing; on an update that changes the effect,
    a timeAdded equal to the stored one is replaced with now (the eviction delay restarts)."""
    taint_obj = (new.get("spec") or {}).get("taint")
    if not isinstance(taint_obj, dict):
        return
    if not taint_obj.get("timeAdded"):
        taint_obj["timeAdded"] = now
        return
    old_taint = ((old or {}).get("spec") or {}).get("taint") or {}
    if old and old_taint.get("effect") != taint_obj.get("effect") and \
            old_taint.get("timeAdded") == taint_obj.get("timeAdded"):
        taint_obj["timeAdded"] = now
