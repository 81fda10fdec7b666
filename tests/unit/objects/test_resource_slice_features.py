"""ResourceSlice, claim and result fields of partitionable devices and consumable capacity: upstream's
paths and messages (pkg/apis/resource/validation at 1.35+), limits, the v1beta1 shape, gates off."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.resource import validation as r

DRV = "gpu.example.com"
Doc = dict[str, Any]


def counters_slice(**spec: Any) -> Doc:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": DRV, "nodeName": "n1", "pool": {"name": "p", "resourceSliceCount": 2},
                     "sharedCounters": [{"name": "gpu0", "counters": {"memory": {"value": "40Gi"}}}], **spec}}


def device_slice(*devices: Doc, **spec: Any) -> Doc:
    base: Doc = {"driver": DRV, "nodeName": "n1", "pool": {"name": "p", "resourceSliceCount": 2},
                 "devices": list(devices)}
    base.update(spec)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": base}


def part(name: str = "d0", **extra: Any) -> Doc:
    return {"name": name, "consumesCounters": [{"counterSet": "gpu0", "counters": {"memory": {"value": "10Gi"}}}],
            **extra}


def shared(policy: Doc | None = None, multi: bool = True) -> Doc:
    cap: Doc = {"value": "100"}
    if policy is not None:
        cap["requestPolicy"] = policy
    return {"name": "nic", "allowMultipleAllocations": multi, "capacity": {"bw": cap}}


def claim(capacity: Any) -> Doc:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nic",
                                                                          "capacity": capacity}}]}}}


PER_DEVICE = {"perDeviceNodeSelection": True, "nodeName": None}
PER_DEVICE_MSG = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                  "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")

BAD: list[tuple[str, Doc, str, str]] = [
    ("counters beside devices", counters_slice(devices=[part()]), "spec",
     'Invalid value: "": only one of `sharedCounters` or `devices` is allowed'),
    ("too many counter sets", counters_slice(sharedCounters=[
        {"name": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(9)]),
     "spec.sharedCounters", "Too many: 9: must have at most 8 items"),
    ("duplicate counter set", counters_slice(sharedCounters=[
        {"name": "a", "counters": {"c": {"value": "1"}}}, {"name": "a", "counters": {"c": {"value": "1"}}}]),
     "spec.sharedCounters[1].name", 'Duplicate value: "a"'),
    ("counter set without counters", counters_slice(sharedCounters=[{"name": "a"}]),
     "spec.sharedCounters[0].counters", "Required value"),
    ("counter set name not a DNS label", counters_slice(sharedCounters=[
        {"name": "A_b", "counters": {"c": {"value": "1"}}}]), "spec.sharedCounters[0].name", "Invalid value"),
    ("counter value not a quantity", counters_slice(sharedCounters=[
        {"name": "a", "counters": {"c": {"value": "x"}}}]), "spec.sharedCounters[0].counters[c].value",
     'Invalid value: "x": quantities must match'),
    ("too many consumptions", device_slice(part(consumesCounters=[
        {"counterSet": f"s{i}", "counters": {"c": {"value": "1"}}} for i in range(3)])),
     "spec.devices[0].consumesCounters", "Too many: 3: must have at most 2 items"),
    ("consumption without a set", device_slice(part(consumesCounters=[{"counters": {"c": {"value": "1"}}}])),
     "spec.devices[0].consumesCounters[0].counterSet", "Required value"),
    ("more than 64 devices with counters", device_slice(*[part(f"d{i}") for i in range(65)]),
     "spec.devices", "Too many: 65: must have at most 64 items"),
    ("device node selection without perDeviceNodeSelection", device_slice(part(nodeName="n1")),
     "spec.devices[0]", "Invalid value: \"null\": `nodeName`, `nodeSelector` and `allNodes` can only be set if"),
    ("per-device selection missing on a device", device_slice(part(), **PER_DEVICE), "spec.devices[0]",
     f"Required value: {PER_DEVICE_MSG}"),
    ("per-device selection twice", device_slice(part(nodeName="n1", allNodes=True), **PER_DEVICE),
     "spec.devices[0]", f'Invalid value: "{{`nodeName`, `allNodes`}}": {PER_DEVICE_MSG}'),
    ("perDeviceNodeSelection false", device_slice(part(), perDeviceNodeSelection=False), "spec.perDeviceNodeSelection",
     "Invalid value: false: must be either unset or set to true"),
    ("requestPolicy on an exclusive device", device_slice(shared({"default": "1"}, multi=False)),
     "spec.devices[0].capacity[bw].requestPolicy", "Forbidden: allowMultipleAllocations must be true"),
    ("validValues and validRange", device_slice(shared({"default": "1", "validValues": ["1"],
                                                         "validRange": {"min": "1"}})),
     "spec.devices[0].capacity[bw].requestPolicy", "Forbidden: exactly one policy can be specified"),
    ("validValues without default", device_slice(shared({"validValues": ["1"]})),
     "spec.devices[0].capacity[bw].requestPolicy.default", "Required value: required when validValues is defined"),
    ("validValues not sorted", device_slice(shared({"default": "1", "validValues": ["5", "1"]})),
     "spec.devices[0].capacity[bw].requestPolicy.validValues[1]", "Invalid value: \"1\": values must be sorted"),
    ("validValues above the capacity", device_slice(shared({"default": "1", "validValues": ["1", "200"]})),
     "spec.devices[0].capacity[bw].requestPolicy.validValues[1]",
     'Invalid value: "200": option is larger than capacity value: 100'),
    ("default not among validValues", device_slice(shared({"default": "2", "validValues": ["1", "5"]})),
     "spec.devices[0].capacity[bw].requestPolicy.validValues",
     'Invalid value: "2": default value is not valid according to the requestPolicy'),
    ("validRange without min", device_slice(shared({"default": "2", "validRange": {"max": "5"}})),
     "spec.devices[0].capacity[bw].requestPolicy.validRange.min", "Required value: required when validRange"),
    ("default below min", device_slice(shared({"default": "1", "validRange": {"min": "2"}})),
     # validateRequestPolicyRange names the default under validRange (kube-apiserver v1.37.2 answers so)
     "spec.devices[0].capacity[bw].requestPolicy.validRange.default",
     'Invalid value: "1": default is less than min: 2'),
    ("max above the capacity", device_slice(shared({"default": "1", "validRange": {"min": "1", "max": "101"}})),
     "spec.devices[0].capacity[bw].requestPolicy.validRange.max",
     'Invalid value: "101": max is larger than capacity value: 100'),
    ("default off the step", device_slice(shared({"default": "4", "validRange": {"min": "1", "step": "2"}})),
     "spec.devices[0].capacity[bw].requestPolicy.validRange.step",
     'Invalid value: "4": value is not a multiple of a given step (2) from (1)'),
    ("capacity request name", claim({"requests": {"a/b/c": "1"}}),
     "spec.devices.requests[0].exactly.capacity.requests[a/b/c]", "Invalid value"),
    ("capacity request unknown field", claim({"limits": {}}),
     "spec.devices.requests[0].exactly.capacity.limits", 'unknown field "limits"'),
]


@pytest.mark.parametrize(("name", "doc", "path", "message"), BAD, ids=[c[0] for c in BAD])
def test_bad(name: str, doc: Doc, path: str, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        r.validate(doc["kind"], doc)
    assert info.value.path == path, str(info.value)
    assert info.value.detail.startswith(message), str(info.value)


def test_counter_slice_and_partitions_are_stored() -> None:
    out = r.validate("ResourceSlice", counters_slice())
    assert "devices" not in out["spec"]
    assert out["spec"]["sharedCounters"] == [{"name": "gpu0", "counters": {"memory": {"value": "40Gi"}}}]
    out = r.validate("ResourceSlice", device_slice(part(allNodes=True), perDeviceNodeSelection=True, nodeName=None))
    assert out["spec"]["perDeviceNodeSelection"] is True
    assert out["spec"]["devices"][0]["allNodes"] is True
    assert out["spec"]["devices"][0]["consumesCounters"][0]["counterSet"] == "gpu0"


def test_v1beta1_basic_shape_is_flattened() -> None:
    doc = device_slice({"name": "d0", "basic": {"consumesCounters": part()["consumesCounters"],
                                                "allowMultipleAllocations": True,
                                                "capacity": {"bw": {"value": "1", "requestPolicy": {"default": "1"}}}}})
    doc["apiVersion"] = "resource.k8s.io/v1beta1"
    dev = r.validate("ResourceSlice", doc)["spec"]["devices"][0]
    assert dev["consumesCounters"] == part()["consumesCounters"]
    assert dev["allowMultipleAllocations"] is True
    assert dev["capacity"]["bw"] == {"value": "1", "requestPolicy": {"default": "1"}}


def test_gates_off_drop_the_fields() -> None:
    off = {"DRAPartitionableDevices": False, "DRAConsumableCapacity": False}
    dev = r.validate("ResourceSlice", device_slice(part(), shared({"default": "1"})), gates=off)["spec"]["devices"]
    assert dev == [{"name": "d0"}, {"name": "nic", "capacity": {"bw": {"value": "100"}}}]
    out = r.validate("ResourceClaim", claim({"requests": {"bw": "1"}}), gates=off)
    assert "capacity" not in out["spec"]["devices"]["requests"][0]["exactly"]


def test_result_share_id_and_consumed_capacity() -> None:
    doc = claim({"requests": {"bw": "10"}})
    result = {"request": "r", "driver": DRV, "pool": "p", "device": "nic",
              "shareID": "1f0e1c2d-3b4a-5968-8776-a5b4c3d2e1f0", "consumedCapacity": {"bw": "10"}}
    doc["status"] = {"allocation": {"devices": {"results": [result]}}}
    out = r.validate("ResourceClaim", doc)
    assert out["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] == {"bw": "10"}
    result["shareID"] = "NOT-A-UID"
    with pytest.raises(ValidationError) as info:
        r.validate("ResourceClaim", doc)
    assert info.value.path == "status.allocation.devices.results[0].shareID"
