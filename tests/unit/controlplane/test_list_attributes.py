"""List-type device attributes (KEP-5491, DRAListTypeAttributes, alpha in 1.36): validation with
upstream's messages (validateDeviceAttribute, validateDevice), the gate dropping the fields, CEL
seeing a list (and upstream's `includes()`), and matchAttribute / distinctAttribute with set
semantics (non-empty intersection, pairwise disjoint; a scalar is a singleton set)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.cel.selectors import DeviceView, Version, compile_selector
from nodeagent.controlplane.allocator import ALL, Claim, Device, DeviceClass, Node, Request, ResourceSlice, allocate
from nodeagent.controlplane.allocator.model import Constraint
from nodeagent.controlplane.convert.basic import resource_slice
from nodeagent.errors import ValidationError
from nodeagent.objects.resource import validation as r

DRV = "cpu.example.com"
ON = {"DRAListTypeAttributes": True}
NUMA = "resource.kubernetes.io/numaNode"


def slice_(*devices: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": DRV, "nodeName": "n1", "pool": {"name": "p", "resourceSliceCount": 1},
                     "devices": list(devices)}}


def dev(name: str = "d0", **attributes: Any) -> dict[str, Any]:
    return {"name": name, "attributes": dict(attributes)}


def test_list_attributes_are_stored_with_the_gate() -> None:
    out = r.validate("ResourceSlice", slice_(dev(numa={"ints": [0, 1]}, flags={"bools": [True]},
                                                 roots={"strings": ["pci0000:00"]},
                                                 fw={"versions": ["1.0.0", "2.1.0"]})), gates=ON)
    attrs = out["spec"]["devices"][0]["attributes"]
    assert attrs == {"numa": {"ints": [0, 1]}, "flags": {"bools": [True]}, "roots": {"strings": ["pci0000:00"]},
                     "fw": {"versions": ["1.0.0", "2.1.0"]}}


def test_gate_off_drops_the_lists() -> None:
    out = r.validate("ResourceSlice", slice_(dev(numa={"int": 0, "ints": [0, 1]})), gates={})
    assert out["spec"]["devices"][0]["attributes"] == {"numa": {"int": 0}}
    with pytest.raises(ValidationError) as err:
        r.validate("ResourceSlice", slice_(dev(numa={"ints": [0, 1]})), gates={})
    assert "exactly one value must be specified" in str(err.value)


@pytest.mark.parametrize(("attrs", "path", "text"), [
    ({"a": {"ints": []}}, 'spec.devices[0].attributes[a].ints', "must not be empty if specified"),
    ({"a": {"strings": ["x" * 65]}}, 'spec.devices[0].attributes[a].strings[0]',
     "Too long: may not be more than 64 bytes"),
    ({"a": {"versions": ["1.0"]}}, 'spec.devices[0].attributes[a].versions[0]',
     "must be a string compatible with semver.org spec 2.0.0"),
    ({"a": {"ints": ["1"]}}, 'spec.devices[0].attributes[a].ints[0]', "Invalid type"),
    ({"a": {"int": 1, "ints": [1]}}, 'spec.devices[0].attributes[a]', "exactly one value must be specified"),
    ({f"a{i}": {"ints": list(range(7))} for i in range(7)}, "spec.devices[0]",
     "Invalid value: 49: the total number of attribute values must not exceed 48"),
])
def test_invalid_list_attribute(attrs: dict[str, Any], path: str, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        r.validate("ResourceSlice", slice_(dev(**attrs)), gates=ON)
    assert err.value.path == path
    assert text in str(err.value)


def test_slice_with_lists_holds_64_devices() -> None:
    devices = [dev(f"d{i}", numa={"ints": [0]}) for i in range(65)]
    with pytest.raises(ValidationError) as err:
        r.validate("ResourceSlice", slice_(*devices), gates=ON)
    assert str(err.value) == "spec.devices: Too many: 65: must have at most 64 items"
    r.validate("ResourceSlice", slice_(*[dev(f"d{i}", numa={"int": 0}) for i in range(65)]), gates=ON)


def test_model_and_cel_see_lists() -> None:
    stored = r.validate("ResourceSlice", slice_(dev(numa={"ints": [0, 1]}, fw={"versions": ["1.0.0", "2.1.0"]})),
                        gates=ON)
    (device,) = resource_slice(stored).devices
    assert device.attribute(f"{DRV}/numa") == (0, 1)
    assert device.attribute(f"{DRV}/fw") == (Version("1.0.0"), Version("2.1.0"))
    view = device.view
    for expression, want in [
        (f'device.attributes["{DRV}"].numa.includes(1)', True),
        (f'device.attributes["{DRV}"].numa.includes(2)', False),
        (f'1 in device.attributes["{DRV}"].numa', True),
        (f'device.attributes["{DRV}"].fw.exists(v, v.isGreaterThan(semver("2.0.0")))', True),
        (f'size(device.attributes["{DRV}"].numa) == 2', True),
    ]:
        assert compile_selector(expression).evaluate(view) is want, expression


def test_includes_on_a_scalar_is_equality() -> None:
    view = DeviceView(DRV, {"numa": 1}, {})
    assert compile_selector(f'device.attributes["{DRV}"].numa.includes(1)').evaluate(view) is True
    assert compile_selector(f'device.attributes["{DRV}"].numa.includes(true)').evaluate(view) is False


# --- constraints ---------------------------------------------------------------------------------

CLASSES = {"cpu": DeviceClass("cpu", (f'device.driver == "{DRV}"',))}


def cpu(name: str, numa: Any) -> Device:
    return Device(DRV, "p", name, {NUMA: numa})


def _allocate(devices: list[Device], constraint: Constraint, count: int = 2,
              mode: str = "ExactCount") -> list[str] | None:
    claim = Claim("default", "c", "uid", (Request("r", "cpu", allocation_mode=mode, count=count),), (constraint,))
    out = allocate([claim], Node("n1"), [ResourceSlice("s", DRV, "p", tuple(devices), all_nodes=True)], CLASSES,
                   set())
    return None if out.results is None else [d.device for d in out.results[0].devices]


@pytest.mark.parametrize(("devices", "expect"), [
    ([cpu("a", (0, 1)), cpu("b", (1, 2))], ["a", "b"]),  # overlap in 1
    ([cpu("a", (0,)), cpu("b", (1,)), cpu("c", (0, 1))], ["a", "c"]),
    ([cpu("a", (0,)), cpu("b", (1,))], None),
    ([cpu("a", 1), cpu("b", (1, 2))], ["a", "b"]),  # a scalar is a singleton set
    ([cpu("a", (0, 1)), cpu("b", (1, 2)), cpu("c", (2, 3))], ["a", "b"]),
])
def test_match_attribute_needs_a_common_value(devices: list[Device], expect: list[str] | None) -> None:
    assert _allocate(devices, Constraint(match_attribute=NUMA)) == expect


def test_match_attribute_over_three_devices_intersects_all() -> None:
    devices = [cpu("a", (0, 1)), cpu("b", (1, 2)), cpu("c", (2, 3)), cpu("d", (1, 3))]
    assert _allocate(devices, Constraint(match_attribute=NUMA), count=3) == ["a", "b", "d"]


@pytest.mark.parametrize(("devices", "expect"), [
    ([cpu("a", (0, 1)), cpu("b", (1, 2)), cpu("c", (2, 3))], ["a", "c"]),
    ([cpu("a", (0, 1)), cpu("b", 1)], None),
    ([cpu("a", 0), cpu("b", 1)], ["a", "b"]),
])
def test_distinct_attribute_needs_disjoint_sets(devices: list[Device], expect: list[str] | None) -> None:
    assert _allocate(devices, Constraint(distinct_attribute=NUMA)) == expect


def test_all_mode_with_list_match() -> None:
    devices = [cpu("a", (0, 1)), cpu("b", (1, 2))]
    assert _allocate(devices, Constraint(match_attribute=NUMA), count=0, mode=ALL) == ["a", "b"]
