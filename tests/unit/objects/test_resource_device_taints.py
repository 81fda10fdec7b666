"""Validation of device taints, binding conditions (slices) and ResourceClaim status.devices, as a
table of upstream's cases (pkg/apis/resource/validation: validation_resourceslice_test.go and
validation_resourceclaim_test.go) with their messages; disabled gates drop the fields."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.resource import validation as r

DRV = "gpu.example.com"


def slice_(**device: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": DRV, "nodeName": "n1", "pool": {"name": "p", "resourceSliceCount": 1},
                     "devices": [{"name": "d0", **device}]}}


TAINT = {"key": "example.com/broken", "value": "yes", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}


def test_taints_and_binding_conditions_are_stored() -> None:
    out = r.validate("ResourceSlice", slice_(taints=[TAINT], bindsToNode=True, bindingConditions=["Ready"],
                                             bindingFailureConditions=["Failed"]))
    dev = out["spec"]["devices"][0]
    assert dev["taints"] == [TAINT]
    assert dev["bindsToNode"] is True
    assert dev["bindingConditions"] == ["Ready"] and dev["bindingFailureConditions"] == ["Failed"]


def test_gates_off_drop_the_fields() -> None:
    gates = {"DRADeviceTaints": False, "DRADeviceBindingConditions": False}
    dev = r.validate("ResourceSlice", slice_(taints=[TAINT], bindingConditions=["Ready"]), gates=gates)[
        "spec"]["devices"][0]
    assert dev == {"name": "d0"}


@pytest.mark.parametrize(("device", "path", "text"), [
    ({"taints": [{"effect": "NoSchedule"}]}, "spec.devices[0].taints[0].key",
     'Invalid value: "": name part must be non-empty'),
    ({"taints": [{"key": "a/b/c", "effect": "NoSchedule"}]}, "spec.devices[0].taints[0].key", "Invalid value"),
    ({"taints": [{"key": "k", "value": "a b", "effect": "NoSchedule"}]}, "spec.devices[0].taints[0].value",
     "Invalid value"),
    ({"taints": [{"key": "k"}]}, "spec.devices[0].taints[0].effect", "Required value"),
    ({"taints": [{"key": "k", "effect": "PreferNoSchedule"}]}, "spec.devices[0].taints[0].effect",
     'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"'),
    ({"taints": [{"key": f"k{i}", "effect": "None"} for i in range(17)]}, "spec.devices[0].taints",
     "Too many: 17: must have at most 16 items"),
    ({"bindingConditions": ["a", "b", "c", "d", "e"], "bindingFailureConditions": ["f"]},
     "spec.devices[0].bindingConditions", "Too many: 5: must have at most 4 items"),
    ({"bindingConditions": ["a", "a"], "bindingFailureConditions": ["f"]}, "spec.devices[0].bindingConditions[1]",
     'Duplicate value: "a"'),
    ({"bindingFailureConditions": ["f"]}, "spec.devices[0].bindingConditions",
     "Invalid value: null: bindingConditions are required to use bindingFailureConditions"),
    ({"bindingConditions": ["a"]}, "spec.devices[0].bindingFailureConditions",
     "Invalid value: null: bindingFailureConditions are required to use bindingConditions"),
    ({"bindingConditions": ["a"], "bindingFailureConditions": ["f", "a"]},
     "spec.devices[0].bindingFailureConditions[1]",
     'Invalid value: "a": bindingFailureConditions must not overlap with bindingConditions'),
    ({"bindingConditions": ["a"], "bindingFailureConditions": ["f", "f"]},
     "spec.devices[0].bindingFailureConditions[1]", 'Duplicate value: "f"'),
    ({"taints": [{"key": "k", "effect": "NoSchedule", "extra": 1}]}, "spec.devices[0].taints[0].extra",
     'unknown field "extra"'),
])
def test_invalid_slice_device(device: dict[str, Any], path: str, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        r.validate("ResourceSlice", slice_(**device))
    assert err.value.path == path
    assert text in str(err.value)


def _claim(devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "r", "driver": DRV, "pool": "p", "device": "d0"}]}},
                "devices": devices}}


COND = {"type": "Ready", "status": "True", "reason": "Attached", "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}


def test_device_status_is_stored() -> None:
    entry = {"driver": DRV, "pool": "p", "device": "d0", "conditions": [COND], "data": {"a": 1},
             "networkData": {"interfaceName": "eth1", "ips": ["10.0.0.1/24"], "hardwareAddress": "aa:bb"}}
    out = r.validate_claim_status(_claim([entry]))
    assert out["status"]["devices"] == [entry]


@pytest.mark.parametrize(("entry", "path", "text"), [
    ({"driver": DRV, "pool": "p", "device": "d1"}, "status.devices[0]",
     f"Invalid value: {DRV}/p/d1: must be an allocated device in the claim"),
    ({"driver": DRV, "pool": "p", "device": "d0", "data": [1]}, "status.devices[0].data",
     "Invalid value: \"<value omitted>\": must be a valid JSON object"),
    ({"driver": DRV, "pool": "p", "device": "d0", "conditions": [{**COND, "status": "Maybe"}]},
     "status.devices[0].conditions[0].status", 'Unsupported value: "Maybe"'),
    ({"driver": DRV, "pool": "p", "device": "d0", "conditions": [{**COND, "reason": ""}]},
     "status.devices[0].conditions[0].reason", "Required value"),
    ({"driver": DRV, "pool": "p", "device": "d0", "conditions": [{**COND, "lastTransitionTime": ""}]},
     "status.devices[0].conditions[0].lastTransitionTime", "Required value"),
    ({"driver": DRV, "pool": "p", "device": "d0", "conditions": [COND, COND]},
     "status.devices[0].conditions[1].type", 'Duplicate value: "Ready"'),
    ({"driver": DRV, "pool": "p", "device": "d0", "networkData": {"ips": ["10.0.0.1"]}},
     "status.devices[0].networkData.ips[0]", "must be a valid address in CIDR form"),
    ({"driver": DRV, "pool": "p", "device": "d0", "networkData": {"interfaceName": "x" * 257}},
     "status.devices[0].networkData.interfaceName", "Too long: may not be more than 256 bytes"),
])
def test_invalid_device_status(entry: dict[str, Any], path: str, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        r.validate_claim_status(_claim([entry]))
    assert err.value.path == path
    assert text in str(err.value)


def test_one_entry_per_device() -> None:
    entry = {"driver": DRV, "pool": "p", "device": "d0"}
    with pytest.raises(ValidationError) as err:
        r.validate_claim_status(_claim([entry, entry]))
    assert err.value.path == "status.devices[1]"
    assert f"Duplicate value: {DRV}/p/d0" in str(err.value)


def _claim_with(tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
            "spec": {"devices": {"requests": [
                {"name": "r", "exactly": {"deviceClassName": "gpu", "tolerations": tolerations}}]}}}


def test_tolerations_are_stored_with_the_default_operator() -> None:
    tols: list[dict[str, Any]] = [{"key": "example.com/broken", "effect": "NoExecute", "tolerationSeconds": 30},
            {"operator": "Exists"}, {"value": "", "effect": "NoSchedule", "tolerationSeconds": 5}]
    out = r.validate("ResourceClaim", _claim_with(tols))
    assert out["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] == [
        {"operator": "Equal", "key": "example.com/broken", "effect": "NoExecute", "tolerationSeconds": 30},
        {"operator": "Exists"}, {"operator": "Equal", "effect": "NoSchedule", "tolerationSeconds": 5}]


def test_tolerations_dropped_without_device_taints() -> None:
    out = r.validate("ResourceClaim", _claim_with([{"operator": "Exists"}]), gates={"DRADeviceTaints": False})
    assert "tolerations" not in out["spec"]["devices"]["requests"][0]["exactly"]


@pytest.mark.parametrize(("tol", "path", "text"), [
    ({"operator": "Exists", "value": "x"}, "tolerations[0].value",
     'Invalid value: "x": must be empty for operator `Exists`'),
    ({"operator": "In"}, "tolerations[0].operator",
     'Unsupported value: "In": supported values: "Equal", "Exists"'),
    ({"key": "k", "effect": "PreferNoSchedule"}, "tolerations[0].effect",
     'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"'),
    ({"key": "k", "value": "a b"}, "tolerations[0].value", 'Invalid value: "a b"'),
    ({"key": "a/b/c", "operator": "Exists"}, "tolerations[0].key", 'Invalid value: "a/b/c"'),
])
def test_invalid_toleration(tol: dict[str, Any], path: str, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        r.validate("ResourceClaim", _claim_with([tol]))
    assert err.value.path == "spec.devices.requests[0].exactly." + path
    assert text in str(err.value)


def test_too_many_tolerations() -> None:
    with pytest.raises(ValidationError) as err:
        r.validate("ResourceClaim", _claim_with([{"operator": "Exists"}] * 17))
    assert str(err.value).endswith("Too many: 17: must have at most 16 items")
