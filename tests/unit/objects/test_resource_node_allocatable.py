"""nodeAllocatableResources on ResourceSlice devices and nodeAllocatableResourceClaimStatuses in pod
status (DRANodeAllocatableResources, KEP-5517): dropped while the gate is off, validated with
v1.37.2's rules and texts when on (pkg/apis/resource/validation validateNodeAllocatableResources,
the declarative union of the mapping, pkg/apis/core/validation validateNodeAllocatableResource
ClaimStatus), kept on a pod status write that leaves it out (podStatusStrategy)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.pod import node_allocatable_status, status_checks
from nodeagent.objects.resource import validation as r

ON = {"DRANodeAllocatableResources": True}


def slice_(mappings: Any, *, beta1: bool = False) -> dict[str, Any]:
    device: dict[str, Any] = {"name": "x", "capacity": {"dra.example.com/cores": {"value": "8"}},
                              "nodeAllocatableResources": mappings}
    if beta1:
        device = {"name": "x", "basic": {k: v for k, v in device.items() if k != "name"}}
    return {"apiVersion": f"resource.k8s.io/{'v1beta1' if beta1 else 'v1'}", "kind": "ResourceSlice",
            "metadata": {"name": "s"},
            "spec": {"driver": "d.example.com", "nodeName": "n",
                     "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "devices": [device]}}


VALID = {"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "2"},
                 "overhead": {"perPod": "100m"}},
         "memory": {"mapping": {"deviceMultiplier": "1Gi"}},
         "hugepages-2Mi": {"overhead": {"perContainer": "4Mi"}}}


def test_dropped_when_the_gate_is_off() -> None:
    assert "nodeAllocatableResources" not in r.validate("ResourceSlice", slice_(VALID))["spec"]["devices"][0]


@pytest.mark.parametrize("beta1", [False, True])
def test_kept_when_on(beta1: bool) -> None:
    device = r.validate("ResourceSlice", slice_(VALID, beta1=beta1), gates=ON)["spec"]["devices"][0]
    assert device["nodeAllocatableResources"] == VALID


@pytest.mark.parametrize(("mappings", "text"), [
    ({"nvidia.com/gpu": {"overhead": {"perPod": "1"}}},
     'spec.devices[0].nodeAllocatableResources[nvidia.com/gpu]: Invalid value: "nvidia.com/gpu": '
     "must be a node allocatable resource name"),
    ({"ephemeral-storage": {"overhead": {"perPod": "1"}}}, "must be a node allocatable resource name"),
    ({"cpu": {}}, "spec.devices[0].nodeAllocatableResources[cpu]: Required value: "
                  "at least one of mapping or overhead must be set"),
    ({"cpu": {"mapping": {}}}, 'spec.devices[0].nodeAllocatableResources[cpu].mapping: Invalid value: "": '
                               "must specify one of: `capacityKey`, `deviceMultiplier`"),
    ({"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "1",
                          "deviceMultiplier": "1"}}},
     'mapping: Invalid value: "{capacityKey, deviceMultiplier}": '
     "must specify exactly one of: `capacityKey`, `deviceMultiplier`"),
    ({"cpu": {"mapping": {"capacityKey": "dra.example.com/threads", "capacityMultiplier": "1"}}},
     'mapping.capacityKey: Not found: "dra.example.com/threads"'),
    ({"cpu": {"mapping": {"capacityKey": "dra.example.com/cores"}}},
     "mapping.capacityMultiplier: Required value: capacityMultiplier is required when capacityKey is set"),
    ({"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "0"}}},
     'mapping.capacityMultiplier: Invalid value: "0": must be positive'),
    ({"cpu": {"mapping": {"deviceMultiplier": "-1"}}},
     'mapping.deviceMultiplier: Invalid value: "-1": must be positive'),
    ({"cpu": {"overhead": {}}}, 'overhead: Invalid value: "": at least one of perPod or perContainer must be set'),
    ({"cpu": {"overhead": {"perContainer": "-1m"}}},
     'overhead.perContainer: Invalid value: "-1m": must be non-negative'),
])
def test_invalid(mappings: Any, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        r.validate("ResourceSlice", slice_(mappings), gates=ON)
    assert text in str(err.value)


# --- pod status ----------------------------------------------------------------------------------

ENTRY = {"resourceClaimName": "p-gpu-abcde", "containers": ["c"],
         "mapping": [{"name": "memory", "quantity": "4Gi"}],
         "overhead": [{"name": "cpu", "perPod": "500m", "perContainer": "250m"}]}


def _pod(status: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
            "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}], **status}}


def test_status_kept_when_a_write_leaves_it_out() -> None:
    old = _pod({"nodeAllocatableResourceClaimStatuses": [ENTRY]})
    new = status_checks.admit_status(_pod({"phase": "Running"}), old, node_allocatable=True)
    assert new["status"]["nodeAllocatableResourceClaimStatuses"] == [ENTRY]
    cleared = status_checks.admit_status(_pod({"nodeAllocatableResourceClaimStatuses": []}), old,
                                         node_allocatable=True)
    assert cleared["status"]["nodeAllocatableResourceClaimStatuses"] == []


def test_status_dropped_with_the_gate_off_unless_in_use() -> None:
    written = _pod({"nodeAllocatableResourceClaimStatuses": [ENTRY]})
    assert "nodeAllocatableResourceClaimStatuses" not in status_checks.admit_status(written, _pod({}))["status"]
    in_use = _pod({"nodeAllocatableResourceClaimStatuses": [ENTRY]})
    kept = status_checks.admit_status(_pod({"nodeAllocatableResourceClaimStatuses": [ENTRY]}), in_use)
    assert kept["status"]["nodeAllocatableResourceClaimStatuses"] == [ENTRY]


@pytest.mark.parametrize(("entry", "text"), [
    ({**ENTRY, "resourceClaimName": "other"},
     'status.nodeAllocatableResourceClaimStatuses[0].resourceClaimName: Invalid value: "other": '
     "no mapping found in pod reference"),
    ({**ENTRY, "mapping": [{"name": "example.com/x", "quantity": "1"}]},
     'mapping[0].name: Invalid value: "example.com/x": must be a node allocatable resource name'),
    ({**ENTRY, "mapping": [{"name": "cpu", "quantity": "-1"}]}, 'mapping[0].quantity: Invalid value: "-1": '
                                                                 "must be non-negative"),
    ({**ENTRY, "overhead": [{"name": "cpu"}]},
     'overhead[0]: Invalid value: "": at least one of perPod or perContainer must be set'),
])
def test_status_invalid(entry: dict[str, Any], text: str) -> None:
    with pytest.raises(ValidationError) as err:
        status_checks.admit_status(_pod({"nodeAllocatableResourceClaimStatuses": [entry]}), _pod({}),
                                   node_allocatable=True)
    assert text in str(err.value)


def test_claim_resources_count_per_container_overhead_per_reference() -> None:
    status = {"nodeAllocatableResourceClaimStatuses": [{**ENTRY, "containers": ["a", "b", "c"]}]}
    assert node_allocatable_status.claim_resources(status) == {"memory": 4 * 2**30, "cpu": 500 + 3 * 250}
