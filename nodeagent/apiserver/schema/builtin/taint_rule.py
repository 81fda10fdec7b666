"""Schemas of DeviceTaintRule (KEP-5055) in each served version: v1, v1beta2 and v1alpha3.

Why apart from resource.py: the kind is served in v1alpha3 too, where no other DRA kind of
the four is, and its shape is the same in every version (since 1.35: a selector by driver, pool
and device name, one taint, status conditions), so it is written once per package
(io.k8s.api.resource.<version>.*). v1alpha3 has no DeviceTaint of resource.py's, so it is
defined here for that version.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import kind, lmap, meta, obj, ref, s, time
from nodeagent.apiserver.schema.model import Schema


def taint_rule_definitions(version: str) -> dict[str, Schema]:
    p = f"io.k8s.api.resource.{version}."
    out: dict[str, Schema] = {
        p + "DeviceTaintRule": kind(
            "DeviceTaintRule adds one taint to all devices which match the selector. This has the same effect as "
            "if the taint was specified directly in the ResourceSlice by the DRA driver.", {
                "spec": ref(p + "DeviceTaintRuleSpec", "Spec specifies the selector and one taint.\n\nChanging the "
                            "spec automatically increments the metadata.generation number."),
                "status": ref(p + "DeviceTaintRuleStatus", "Status provides information about what was requested "
                              "in the spec."),
            }, ["spec"]),
        p + "DeviceTaintRuleSpec": obj("DeviceTaintRuleSpec specifies the selector and one taint.", {
            "deviceSelector": ref(p + "DeviceTaintSelector",
                                  "DeviceSelector defines which device(s) the taint is applied to. All selector "
                                  "criteria must be satisfied for a device to match. The empty selector matches "
                                  "all devices. Without a selector, no devices are matches."),
            "taint": ref(p + "DeviceTaint", "The taint that gets applied to matching devices."),
        }, ["taint"]),
        p + "DeviceTaintSelector": obj(
            "DeviceTaintSelector defines which device(s) a DeviceTaintRule applies to. The empty selector matches "
            "all devices. Without a selector, no devices are matched.", {
                "driver": s("If driver is set, only devices from that driver are selected. This fields "
                            "corresponds to slice.spec.driver."),
                "pool": s("If pool is set, only devices in that pool are selected."),
                "device": s("If device is set, only devices with that name are selected. This field corresponds "
                            "to slice.spec.devices[].name."),
            }),
        p + "DeviceTaintRuleStatus": obj("DeviceTaintRuleStatus provides information about an on-going pod "
                                         "eviction.", {
            "conditions": lmap(meta("Condition"), "Conditions provide information about the state of the "
                               "DeviceTaintRule and the cluster (EvictionInProgress). Must have 8 or less entries.",
                               "type"),
        }),
    }
    if version == "v1alpha3":
        out[p + "DeviceTaint"] = obj("A taint of a device.", {
            "key": s("The taint key to be applied to a device. Must be a label name."),
            "value": s("The taint value corresponding to the taint key. Must be a label value."),
            "effect": s("NoSchedule, NoExecute or None (informational).", enum=["NoExecute", "NoSchedule", "None"]),
            "timeAdded": time("TimeAdded represents the time at which the taint was added or (only in a "
                              "DeviceTaintRule) the effect was modified. Added automatically during create or "
                              "update if not set."),
        }, ["key", "effect"])
    return out
