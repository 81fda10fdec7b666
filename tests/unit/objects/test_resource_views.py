"""Typed views of validated resource objects, and node selector matching."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.objects.resource import validation as r
from nodeagent.objects.resource import views as v
from tests.unit.objects.test_resource import beta_claim, claim, device_class, slice_


def test_claim_requests_list_alternatives_in_order() -> None:
    out = r.validate("ResourceClaim", claim())
    nic, gpu = v.claim_requests(out)
    assert nic == v.DeviceRequest("nic", (v.ExactRequest("nic", "", "nic.example.com"),))
    assert gpu.first_available
    assert [a.ref for a in gpu.alternatives] == ["gpu/big-gpu", "gpu/mid-gpu", "gpu/small-gpu"]
    assert gpu.alternatives[2].count == 2
    assert v.claim_requests(out["spec"]) == v.claim_requests(out)


def test_claim_requests_from_a_template_and_all_mode() -> None:
    spec = r.validate("ResourceClaim", beta_claim())["spec"]
    template = {"kind": "ResourceClaimTemplate", "spec": {"spec": spec}}
    gpu, every = v.claim_requests(template)
    assert gpu.alternatives[0].selectors == ('device.driver == "gpu.example.com"',)
    assert every.alternatives[0].allocation_mode == v.ALL


def test_constraints_and_config() -> None:
    out = r.validate("ResourceClaim", claim())
    assert v.claim_constraints(out) == (v.Constraint(("nic", "gpu"), "dra.example.com/pcieRoot", ""),)
    assert v.claim_config(out) == (v.ClaimConfig(("gpu/small-gpu",), "gpu.example.com", {"a": 1}, "FromClaim"),)


def test_class_views() -> None:
    cls = r.validate("DeviceClass", device_class())
    assert v.class_selectors(cls) == ('device.driver == "gpu.example.com"',)
    assert v.class_config(cls) == (v.ClaimConfig((), "gpu.example.com", {"k": "v"}, "FromClass"),)


def test_slice_view_qualifies_names_with_the_driver() -> None:
    info = v.slice_info(r.validate("ResourceSlice", slice_()))
    assert (info.name, info.driver, info.pool, info.generation, info.node_name) == (
        "node-1-gpu",
        "gpu.example.com",
        "node-1",
        1,
        "node-1",
    )
    (dev,) = info.devices
    assert dev.attributes["gpu.example.com/model"] == v.Attribute("string", "big")
    assert dev.attributes["dra.example.com/pcieRoot"] == v.Attribute("string", "pci-0")
    assert dev.attributes["gpu.example.com/driverVersion"] == v.Attribute("version", "1.2.3")
    assert dev.capacity == {"gpu.example.com/memory": "40Gi"}


SEL: dict[str, Any] = {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]},
    ]
}


@pytest.mark.parametrize(
    ("selector", "name", "labels", "want"),
    [
        (SEL, "n1", {"zone": "a"}, True),
        (SEL, "n1", {"zone": "c"}, False),
        (SEL, "n9", {}, True),
        ({"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}, "n", {"gpu": ""}, True),
        ({"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}]}, "n", {}, True),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "c", "operator": "Gt", "values": ["3"]}]}]},
            "n",
            {"c": "4"},
            True,
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "c", "operator": "Lt", "values": ["3"]}]}]},
            "n",
            {"c": "4"},
            False,
        ),
        (
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "NotIn", "values": ["a"]}]}]},
            "n",
            {},
            True,
        ),
        ({"nodeSelectorTerms": [{}]}, "n", {}, False),
    ],
)
def test_node_selector_matches(selector: dict[str, Any], name: str, labels: dict[str, str], want: bool) -> None:
    assert v.node_selector_matches(selector, name, labels) is want
