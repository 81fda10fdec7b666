"""Objects of every served resource.k8s.io kind with every field of their API versions set.

The shapes are written in resource.k8s.io/v1 and moved to the v1beta2 (same shape) and v1beta1
(`devices[].basic`, request fields directly on the request) shapes by `in_version`. Every value
is one the API server keeps as written: canonical quantities, RFC 3339 times in seconds,
booleans set to false where false is a value a client may send (`allowMultipleAllocations:
false` once vanished from every slice). Mutually exclusive fields are spread over several
objects of a kind (a slice holds either devices or shared counters; node selection differs
per slice). `field_paths` lists the schema paths an object sets, for the coverage check
against upstream's OpenAPI document.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

Obj = dict[str, Any]
GROUP = "resource.k8s.io"
DRIVER = "gpu.example.com"
TIME = "2026-01-02T03:04:05Z"

_NODE_SELECTOR: Obj = {"nodeSelectorTerms": [{
    "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]}],
    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
}]}
_CEL = {"cel": {"expression": f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model == "a100"'}}
_TOLERATION: Obj = {"key": "example.com/unhealthy", "operator": "Equal", "value": "yes", "effect": "NoExecute",
                    "tolerationSeconds": 60}
_EXISTS_TOLERATION: Obj = {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoSchedule"}
_OPAQUE: Obj = {"driver": DRIVER, "parameters": {"apiVersion": "gpu.example.com/v1", "kind": "GpuConfig",
                                                 "sharing": {"strategy": "TimeSlicing"}}}
_DERIVED = [{"name": "lane", "expression": "device.attributes[\"gpu.example.com\"].index"}]


def device_class() -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "DeviceClass", "metadata": {"name": "rt-gpu"}, "spec": {
        "selectors": [_CEL],
        "config": [{"opaque": _OPAQUE}],
        "extendedResourceName": "example.com/gpu",
    }}


def _exact(**more: Any) -> Obj:
    return {"deviceClassName": "rt-gpu", "selectors": [_CEL], "allocationMode": "ExactCount", "count": 2,
            "adminAccess": False, "tolerations": [_TOLERATION, _EXISTS_TOLERATION],
            "capacity": {"requests": {"memory": "1Gi"}}, "derivedAttributes": _DERIVED, **more}


def claim_spec() -> Obj:
    return {"devices": {
        "requests": [
            {"name": "exact", "exactly": _exact()},
            {"name": "alternatives", "firstAvailable": [
                {"name": "big", "deviceClassName": "rt-gpu", "selectors": [_CEL], "allocationMode": "All",
                 "tolerations": [_TOLERATION], "capacity": {"requests": {"memory": "2Gi"}},
                 "derivedAttributes": _DERIVED},
                {"name": "small", "deviceClassName": "rt-gpu", "allocationMode": "ExactCount", "count": 1},
            ]},
        ],
        "constraints": [
            {"requests": ["exact"], "matchAttribute": f"{DRIVER}/model"},
            {"requests": ["exact", "alternatives"], "distinctAttribute": f"{DRIVER}/uuid"},
        ],
        "config": [{"requests": ["exact", "alternatives/big"], "opaque": _OPAQUE}],
    }}


def claim() -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "ResourceClaim",
            "metadata": {"name": "rt-claim", "namespace": "default"}, "spec": claim_spec()}


def claim_status() -> Obj:
    """Written through the status subresource (a create drops the status)."""
    result: Obj = {"request": "exact", "driver": DRIVER, "pool": "pool-a", "device": "gpu-0", "adminAccess": False,
                   "tolerations": [_TOLERATION], "bindingConditions": ["example.com/attached"],
                   "bindingFailureConditions": ["example.com/attach-failed"],
                   "shareID": "2d9f1a3c-4b5e-4f60-8a7b-9c0d1e2f3a4b", "consumedCapacity": {"memory": "1Gi"},
                   "skipNodeOperations": ["NodeUnprepareResources"]}
    return {
        "allocation": {
            "devices": {
                "results": [result, {"request": "alternatives/big", "driver": DRIVER, "pool": "pool-a",
                                     "device": "gpu-1"}],
                "config": [{"source": "FromClass", "opaque": _OPAQUE},
                           {"source": "FromClaim", "requests": ["exact"], "opaque": _OPAQUE}],
            },
            "nodeSelector": _NODE_SELECTOR,
            "allocationTimestamp": TIME,
        },
        "reservedFor": [{"resource": "pods", "name": "p1", "uid": "0b4f3d1e-0000-4000-8000-000000000001"},
                        {"apiGroup": "example.com", "resource": "jobs", "name": "j1",
                         "uid": "0b4f3d1e-0000-4000-8000-000000000002"}],
        "devices": [{
            "driver": DRIVER, "pool": "pool-a", "device": "gpu-0", "shareID": "2d9f1a3c-4b5e-4f60-8a7b-9c0d1e2f3a4b",
            "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1, "lastTransitionTime": TIME,
                            "reason": "Attached", "message": "attached to n1"}],
            "data": {"apiVersion": "gpu.example.com/v1", "kind": "GpuStatus", "clocks": [1, 2]},
            "networkData": {"interfaceName": "eth1", "ips": ["10.0.0.2/24", "fd00::2/64"],
                            "hardwareAddress": "aa:bb:cc:dd:ee:ff"},
        }],
    }


def claim_template() -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "rt-template", "namespace": "default"},
            "spec": {"metadata": {"labels": {"app": "rt"}, "annotations": {"note": "every field"}},
                     "spec": claim_spec()}}


def _attributes() -> Obj:
    return {
        "model": {"string": "a100"}, "index": {"int": 0}, "healthy": {"bool": False},
        "driverVersion": {"version": "1.2.3"},
        f"{DRIVER}/uuid": {"string": "GPU-0"},
        "lanes": {"ints": [1, 2]}, "flags": {"bools": [True, False]}, "names": {"strings": ["a", "b"]},
        "apis": {"versions": ["1.0.0", "2.1.0"]},
    }


def _device(name: str, **more: Any) -> Obj:
    return {"name": name, "attributes": _attributes(), "capacity": {"memory": {"value": "40Gi"}}, **more}


def slice_with_devices() -> Obj:
    """A node-local slice: the device fields, both values of allowMultipleAllocations."""
    shared = _device("gpu-0", allowMultipleAllocations=True, capacity={
        "memory": {"value": "40Gi", "requestPolicy": {"default": "1Gi", "validRange": {
            "min": "1Gi", "max": "40Gi", "step": "1Gi"}}},
        "slots": {"value": "4", "requestPolicy": {"default": "1", "validValues": ["1", "2", "4"]}},
    })
    exclusive = _device(
        "gpu-1", allowMultipleAllocations=False, bindsToNode=False,
        bindingConditions=["example.com/attached"], bindingFailureConditions=["example.com/attach-failed"],
        taints=[{"key": "example.com/unhealthy", "value": "yes", "effect": "NoSchedule", "timeAdded": TIME}],
        consumesCounters=[{"counterSet": "gpu-mem", "counters": {"memory": {"value": "40Gi"}},
                           "compatibilityGroups": ["whole"]}],
        nodeAllocatableResources={"cpu": {"mapping": {"capacityKey": "memory", "capacityMultiplier": "2"},
                                          "overhead": {"perPod": "100m", "perContainer": "10m"}},
                                  "memory": {"mapping": {"deviceMultiplier": "1Gi"}}},
    )
    return {"apiVersion": f"{GROUP}/v1", "kind": "ResourceSlice", "metadata": {"name": "rt-slice-devices"}, "spec": {
        "driver": DRIVER, "nodeName": "n1", "pool": {"name": "pool-a", "generation": 3, "resourceSliceCount": 2},
        "partitionTypeAttribute": f"{DRIVER}/profile",
        "skipNodeOperations": ["NodePrepareResources", "NodeUnprepareResources"],
        "devices": [shared, exclusive],
    }}


def slice_with_counters() -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "ResourceSlice", "metadata": {"name": "rt-slice-counters"}, "spec": {
        "driver": DRIVER, "allNodes": True, "pool": {"name": "pool-a", "generation": 3, "resourceSliceCount": 2},
        "sharedCounters": [{"name": "gpu-mem", "counters": {"memory": {"value": "80Gi"}}}],
    }}


def slice_per_device() -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "ResourceSlice", "metadata": {"name": "rt-slice-per-device"},
            "spec": {"driver": DRIVER, "perDeviceNodeSelection": True,
                     "pool": {"name": "pool-b", "generation": 1, "resourceSliceCount": 1},
                     "devices": [_device("d-name", nodeName="n1"),
                                 _device("d-selector", nodeSelector=_NODE_SELECTOR),
                                 _device("d-all", allNodes=True)]}}


def slice_with_selector() -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "ResourceSlice", "metadata": {"name": "rt-slice-selector"},
            "spec": {"driver": DRIVER, "nodeSelector": _NODE_SELECTOR,
                     "pool": {"name": "pool-c", "generation": 1, "resourceSliceCount": 1},
                     "devices": [_device("nic-0")]}}


def taint_rule() -> Obj:
    return {"apiVersion": f"{GROUP}/v1", "kind": "DeviceTaintRule", "metadata": {"name": "rt-taint-rule"}, "spec": {
        "deviceSelector": {"driver": DRIVER, "pool": "pool-a", "device": "gpu-0"},
        "taint": {"key": "example.com/maintenance", "value": "planned", "effect": "NoExecute", "timeAdded": TIME},
    }}


def taint_rule_status() -> Obj:
    return {"conditions": [{"type": "EvictionInProgress", "status": "False", "observedGeneration": 1,
                            "lastTransitionTime": TIME, "reason": "Completed", "message": "0 pods to evict"}]}


# --- versions ----------------------------------------------------------------------------------

_BASIC_FIELDS = ("attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector", "allNodes", "taints",
                 "bindsToNode", "bindingConditions", "bindingFailureConditions", "allowMultipleAllocations",
                 "nodeAllocatableResources")


def in_version(obj: Mapping[str, Any], version: str) -> Obj:
    """The object in another served version of its kind (a deep copy)."""
    out = copy.deepcopy(dict(obj))
    out["apiVersion"] = f"{GROUP}/{version}"
    if version != "v1beta1":
        return out
    kind = out["kind"]
    if kind == "ResourceSlice":
        out["spec"]["devices"] = [_basic(d) for d in out["spec"].get("devices") or ()] or None
        if out["spec"]["devices"] is None:
            del out["spec"]["devices"]
    elif kind == "ResourceClaim":
        _flatten_requests(out["spec"])
    elif kind == "ResourceClaimTemplate":
        _flatten_requests(out["spec"]["spec"])
    return out


def _basic(device: Mapping[str, Any]) -> Obj:
    basic = {k: v for k, v in device.items() if k in _BASIC_FIELDS}
    return {"name": device["name"], "basic": basic}


def _flatten_requests(spec: Obj) -> None:
    for request in spec["devices"]["requests"]:
        request.update(request.pop("exactly", {}))


def objects(version: str) -> Iterator[tuple[Obj, Obj | None]]:
    """(object, status written through the status subresource or None) of every served kind in
    `version`; DeviceTaintRule has no v1beta1, and v1alpha3 serves only DeviceTaintRule (plus
    nodeagent's PodSchedulingContext, not an upstream kind at 1.37)."""
    if version != "v1alpha3":
        yield in_version(device_class(), version), None
        yield in_version(claim(), version), claim_status()
        yield in_version(claim_template(), version), None
        for make in (slice_with_devices, slice_with_counters, slice_per_device, slice_with_selector):
            yield in_version(make(), version), None
    if version != "v1beta1":
        yield in_version(taint_rule(), version), taint_rule_status()


def field_paths(value: Any, prefix: str = "") -> set[str]:
    """Schema paths an object sets, in the notation of the coverage check: `a.b[]` for list
    items, `a{}` for map values; an opaque value (RawExtension, NodeSelector, conditions,
    template metadata) ends the walk."""
    if prefix in _OPAQUE_PATHS or prefix.endswith(("parameters", "data", "nodeSelector", "conditions[]")):
        return {prefix}
    if isinstance(value, dict):
        out: set[str] = set()
        for key, item in value.items():
            if not prefix and key in ("apiVersion", "kind", "metadata"):
                continue
            path = f"{prefix}.{key}" if prefix else key
            if is_map(path):
                for sub in item.values():
                    out |= field_paths(sub, path + "{}")
            else:
                out |= field_paths(item, path)
        return out
    if isinstance(value, list):
        out = set()
        for item in value:
            out |= field_paths(item, prefix + "[]")
        return out or {prefix + "[]"}
    return {prefix}


_OPAQUE_PATHS = {"spec.metadata"}
_MAP_SUFFIXES = (".attributes", ".counters", "capacity.requests", ".consumedCapacity", ".nodeAllocatableResources")


def is_map(path: str) -> bool:
    """A device's capacity is a map; a request's capacity is an object holding the map `requests`."""
    if path.endswith("capacity"):
        return "requests" not in path
    return path.endswith(_MAP_SUFFIXES)
