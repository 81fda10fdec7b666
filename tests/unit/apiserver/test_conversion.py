"""Version conversion at the API edge (upstream pkg/apis/resource/v1beta1 and pkg/apis/events/v1)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodeagent.apiserver import conversion
from nodeagent.objects.resource import validation as dra

V1, V1B2, V1B1 = conversion.RESOURCE_V1, conversion.RESOURCE_V1BETA2, conversion.RESOURCE_V1BETA1
SELECTOR = {"cel": {"expression": 'device.driver == "gpu.example.com"'}}


def claim(api_version: str, requests: list[dict[str, Any]], **status: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": requests}},
    }
    if status:
        out["status"] = status
    return out


ALLOCATION = {
    "allocation": {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "g0"}]}
    },
    "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
}


@pytest.mark.parametrize(
    ("beta", "v1"),
    [
        (  # the exact-count fields move under `exactly`
            {"name": "gpu", "deviceClassName": "gpu.example.com", "selectors": [SELECTOR],
             "allocationMode": "ExactCount", "count": 2, "adminAccess": False,
             "tolerations": [{"key": "k", "operator": "Exists"}]},
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "selectors": [SELECTOR],
                                        "allocationMode": "ExactCount", "count": 2, "adminAccess": False,
                                        "tolerations": [{"key": "k", "operator": "Exists"}]}},
        ),
        (  # a request with only firstAvailable has no `exactly`
            {"name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "big.example.com"}]},
            {"name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "big.example.com"}]},
        ),
        (  # allocationMode All without a class still makes `exactly` (validation names what is missing)
            {"name": "all", "allocationMode": "All"},
            {"name": "all", "exactly": {"allocationMode": "All"}},
        ),
    ],
)
def test_claim_requests_v1beta1_to_v1_and_back(beta: dict[str, Any], v1: dict[str, Any]) -> None:
    stored = conversion.to_storage(claim(V1B1, [beta], **ALLOCATION))
    assert stored == claim(V1, [v1], **ALLOCATION)
    assert conversion.to_version(stored, V1B1) == claim(V1B1, [beta], **ALLOCATION)


def test_zero_values_do_not_make_exactly() -> None:
    # upstream's hasAnyMainRequestFieldsSet: "", 0 and null are unset
    out = conversion.to_storage(claim(V1B1, [{"name": "r", "deviceClassName": "", "count": 0, "adminAccess": None}]))
    assert out["spec"]["devices"]["requests"] == [{"name": "r"}]


def test_template_spec_converts() -> None:
    template = {
        "apiVersion": V1B1, "kind": "ResourceClaimTemplate", "metadata": {"name": "t", "namespace": "default"},
        "spec": {"metadata": {"labels": {"a": "b"}},
                 "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com"}]}}},
    }
    stored = conversion.to_storage(template)
    assert stored["apiVersion"] == V1
    assert stored["spec"]["metadata"] == {"labels": {"a": "b"}}
    assert stored["spec"]["spec"]["devices"]["requests"] == [{"name": "gpu",
                                                              "exactly": {"deviceClassName": "gpu.example.com"}}]
    assert conversion.to_version(stored, V1B1) == template


def test_slice_devices_basic_and_node_fields() -> None:
    beta: dict[str, Any] = {
        "apiVersion": V1B1, "kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": "gpu.example.com", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                 "nodeName": "n1", "allNodes": False,
                 "devices": [{"name": "g0", "basic": {"attributes": {"model": {"string": "a100"}},
                                                      "capacity": {"memory": {"value": "80Gi"}}}},
                             {"name": "g1", "basic": {}}]},
    }
    v1 = conversion.to_storage(beta)
    assert v1["apiVersion"] == V1
    assert v1["spec"] == {
        "driver": "gpu.example.com", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "n1",
        "devices": [{"name": "g0", "attributes": {"model": {"string": "a100"}},
                     "capacity": {"memory": {"value": "80Gi"}}},
                    {"name": "g1"}],
    }
    back = conversion.to_version(v1, V1B1)
    expected = copy.deepcopy(beta)
    del expected["spec"]["allNodes"]  # false is unset in v1beta1 (omitempty)
    assert back == expected


@pytest.mark.parametrize("kind", ["DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"])
def test_v1beta2_has_the_v1_shape(kind: str) -> None:
    obj = {"apiVersion": V1, "kind": kind, "metadata": {"name": "x"},
           "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}}
    out = conversion.to_version(obj, V1B2)
    assert out == {**obj, "apiVersion": V1B2}
    assert conversion.to_storage(out) == obj


def test_device_class_is_identical_in_v1beta1() -> None:
    cls = {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "gpu"},
           "spec": {"selectors": [SELECTOR], "config": [{"opaque": {"driver": "d", "parameters": {}}}]}}
    assert conversion.to_version(cls, V1B1) == {**cls, "apiVersion": V1B1}


def test_input_is_not_modified() -> None:
    beta = claim(V1B1, [{"name": "gpu", "deviceClassName": "c"}])
    before = copy.deepcopy(beta)
    conversion.to_storage(beta)
    assert beta == before


def test_to_storage_agrees_with_the_store_validation() -> None:
    # the object the edge stores is the one the store's own v1beta1 normalisation produces
    beta = claim(V1B1, [{"name": "gpu", "deviceClassName": "gpu.example.com", "count": 2,
                         "allocationMode": "ExactCount"}])
    assert dra.validate("ResourceClaim", conversion.to_storage(beta)) == dra.validate("ResourceClaim", beta)


# --- Event ---------------------------------------------------------------------------------------

CORE_EVENT = {
    "apiVersion": "v1", "kind": "Event",
    "metadata": {"name": "p.17", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default", "fieldPath": "spec.containers{c}"},
    "reason": "Started", "message": "Started container c", "type": "Normal",
    "source": {"component": "kubelet", "host": "n1"},
    "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": "2025-01-01T00:01:00Z", "count": 3,
    "eventTime": None, "reportingComponent": "kubelet", "reportingInstance": "n1",
    "action": "Start", "related": {"kind": "Node", "name": "n1"},
    "series": {"count": 2, "lastObservedTime": "2025-01-01T00:01:00.000000Z"},
}
EVENTS_EVENT = {
    "apiVersion": "events.k8s.io/v1", "kind": "Event",
    "metadata": {"name": "p.17", "namespace": "default"},
    "regarding": {"kind": "Pod", "name": "p", "namespace": "default", "fieldPath": "spec.containers{c}"},
    "reason": "Started", "note": "Started container c", "type": "Normal",
    "deprecatedSource": {"component": "kubelet", "host": "n1"},
    "deprecatedFirstTimestamp": "2025-01-01T00:00:00Z", "deprecatedLastTimestamp": "2025-01-01T00:01:00Z",
    "deprecatedCount": 3, "eventTime": None, "reportingController": "kubelet", "reportingInstance": "n1",
    "action": "Start", "related": {"kind": "Node", "name": "n1"},
    "series": {"count": 2, "lastObservedTime": "2025-01-01T00:01:00.000000Z"},
}


def test_event_versions() -> None:
    assert conversion.to_version(CORE_EVENT, "events.k8s.io/v1") == EVENTS_EVENT
    assert conversion.to_storage(EVENTS_EVENT) == CORE_EVENT
    assert conversion.to_version(EVENTS_EVENT, "v1") == CORE_EVENT


@pytest.mark.parametrize(
    ("obj", "version", "message"),
    [
        ({"apiVersion": "v1", "kind": "Pod"}, "apps/v1", 'converting Pod from "v1" to "apps/v1" is not supported'),
        ({"apiVersion": V1, "kind": "DeviceClass"}, "v1", 'converting DeviceClass from "resource.k8s.io/v1" to "v1"'),
    ],
)
def test_unknown_conversions_raise(obj: dict[str, Any], version: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        conversion.to_version(obj, version)


@pytest.mark.parametrize(
    ("obj", "expected_version"),
    [
        ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "v1"),
        ({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}, "coordination.k8s.io/v1"),
        ({"apiVersion": "resource.k8s.io/v1alpha3", "kind": "PodSchedulingContext"}, "resource.k8s.io/v1alpha3"),
    ],
)
def test_single_version_kinds_pass_through(obj: dict[str, Any], expected_version: str) -> None:
    out = conversion.to_storage(obj)
    assert out == obj and out is not obj
    assert out["apiVersion"] == expected_version


# --- round trips (property tests) ----------------------------------------------------------------

names = st.text(alphabet="abcdefgh-", min_size=1, max_size=8)
scalars = st.one_of(st.integers(-5, 5), st.booleans(), names)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(names, inner,
                                                                                                 max_size=2),
                           max_leaves=4)

exact_fields = st.fixed_dictionaries(
    {},
    optional={
        "deviceClassName": names,
        "selectors": st.lists(st.just(SELECTOR), max_size=2),
        "allocationMode": st.sampled_from(["ExactCount", "All"]),
        "count": st.integers(1, 4),
        "adminAccess": st.booleans(),
        "tolerations": st.lists(st.fixed_dictionaries({"key": names}), max_size=1),
        "capacity": st.fixed_dictionaries({"requests": st.dictionaries(names, st.just("1"), max_size=1)}),
    },
)
v1_requests = st.builds(
    lambda name, exact, first: {"name": name, **({"exactly": exact} if exact else {}),
                                **({"firstAvailable": first} if first else {})},
    names, exact_fields, st.lists(st.fixed_dictionaries({"name": names, "deviceClassName": names}), max_size=2),
)
v1_devices = st.builds(
    lambda name, attrs, cap, extra: {"name": name, **({"attributes": attrs} if attrs else {}),
                                     **({"capacity": cap} if cap else {}), **extra},
    names,
    st.dictionaries(names, st.one_of(st.fixed_dictionaries({"int": st.integers()}),
                                     st.fixed_dictionaries({"string": names})), max_size=2),
    st.dictionaries(names, st.fixed_dictionaries({"value": st.sampled_from(["1", "80Gi", "500m"])}), max_size=2),
    st.fixed_dictionaries({}, optional={"taints": st.lists(st.fixed_dictionaries({"key": names}), max_size=1)}),
)


@given(requests=st.lists(v1_requests, max_size=3), status=st.dictionaries(names, json_values, max_size=2))
def test_claim_round_trip_through_every_version(requests: list[dict[str, Any]], status: dict[str, Any]) -> None:
    stored = claim(V1, requests, **status)
    for version in (V1B1, V1B2):
        served = conversion.to_version(stored, version)
        assert served["apiVersion"] == version
        assert conversion.to_storage(served) == stored


@given(devices=st.lists(v1_devices, max_size=3), node=st.sampled_from([{"nodeName": "n1"}, {"allNodes": True}]))
def test_slice_round_trip_through_every_version(devices: list[dict[str, Any]], node: dict[str, Any]) -> None:
    stored = {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "s"},
              "spec": {"driver": "d", "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1}, **node,
                       "devices": devices}}
    for version in (V1B1, V1B2):
        assert conversion.to_storage(conversion.to_version(stored, version)) == stored


event_fields = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": st.just("Event"), "metadata": st.fixed_dictionaries({"name": names})},
    optional={key: json_values for key in (
        "involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
        "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance")},
)


@given(event=event_fields)
def test_event_round_trip(event: dict[str, Any]) -> None:
    served = conversion.to_version(event, "events.k8s.io/v1")
    assert not set(served) & {"involvedObject", "message", "source", "count", "reportingComponent"}
    assert conversion.to_storage(served) == event
