"""Classic DRA's claim fields in the API version they belong to: resource.k8s.io/v1alpha3 as 1.31
served it (spec.controller, status.allocation.controller, status.deallocationRequested), served
only with the gate DRAControlPlaneController; other versions neither show nor lose them.

Before, the fields were accepted only under nodeagent's own `spec.controllerName` in v1, whose
schema lacks it: kubectl could create the demo's classic claim (strict decoding error), label it
(`field is immutable`) or server-side apply it (`field not declared in schema`) in no way."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver import conversion
from nodeagent.apiserver.catalog import Catalog, Resource, builtin_resources
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import APPLY_PATCH, MERGE_PATCH, STRATEGIC_PATCH, Registry
from nodeagent.apiserver.schema.builtin import builtin_definitions
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock

Obj = dict[str, Any]
GATES = {**resource.DEFAULT_GATES, resource.GATE_CONTROL_PLANE_CONTROLLER: True}
DEFS = builtin_definitions()
STRICT = WriteOptions(field_validation="Strict")


def catalog(classic: bool) -> Catalog:
    return Catalog(builtin_resources(classic_dra=classic))


def find(cat: Catalog, version: str, plural: str = "resourceclaims") -> Resource:
    found = cat.find("resource.k8s.io", version, plural)
    assert found is not None, (version, plural)
    return found


@pytest.fixture
def reg() -> Registry:
    clock = FakeClock()
    store = ObjectStore.memory(builtin_kinds().with_hooks(resource.hooks(GATES)), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return Registry(store, catalog(True), DEFS, builtin_strategies(), clock)


def claim_v1alpha3(name: str = "cxl-accel") -> Obj:
    """The demo's claim, as configs/examples/cxl-1-class-and-claim.yaml writes it."""
    return {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"controller": "cxl.example.com",
                     "devices": {"requests": [{"name": "acc", "deviceClassName": "cxl-accel"}]}}}


def test_v1alpha3_claims_are_served_only_with_the_gate() -> None:
    assert catalog(False).find("resource.k8s.io", "v1alpha3", "resourceclaims") is None
    assert catalog(False).find("resource.k8s.io", "v1alpha3", "resourceclaimtemplates") is None
    assert catalog(True).find("resource.k8s.io", "v1alpha3", "resourceclaims") is not None
    assert find(catalog(True), "v1alpha3", "resourceclaimtemplates").kind == "ResourceClaimTemplate"
    # the storage (and preferred) version stays v1
    assert catalog(True).versions("resource.k8s.io")[0] == "v1"


def test_create_in_v1alpha3_stores_the_controller_and_answers_in_v1alpha3(reg: Registry) -> None:
    v1alpha3 = find(reg.catalog, "v1alpha3")
    out = reg.create(v1alpha3, "default", claim_v1alpha3(), STRICT).object
    assert out["apiVersion"] == "resource.k8s.io/v1alpha3"
    assert out["spec"]["controller"] == "cxl.example.com"
    assert out["spec"]["devices"]["requests"][0]["deviceClassName"] == "cxl-accel"
    stored = reg.store.get("ResourceClaim", "default", "cxl-accel")
    assert stored["spec"]["controllerName"] == "cxl.example.com"  # what the classic flow reads
    assert stored["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "cxl-accel"


def test_other_versions_show_no_classic_field(reg: Registry) -> None:
    reg.create(find(reg.catalog, "v1alpha3"), "default", claim_v1alpha3(), STRICT)
    claim = reg.store.get("ResourceClaim", "default", "cxl-accel")
    claim["status"] = {"allocation": {"controller": "cxl.example.com", "devices": {"results": [
        {"request": "acc", "driver": "cxl.example.com", "pool": "switch-0", "device": "acc-0"}]}},
        "deallocationRequested": True}
    reg.store.update_status(claim)
    for version in ("v1", "v1beta2", "v1beta1"):
        got = reg.get(find(reg.catalog, version), "default", "cxl-accel")
        assert "controllerName" not in got["spec"] and "controller" not in got["spec"], version
        assert "controller" not in got["status"]["allocation"] and "deallocationRequested" not in got["status"]
    got = reg.get(find(reg.catalog, "v1alpha3"), "default", "cxl-accel")
    assert got["status"]["allocation"]["controller"] == "cxl.example.com"
    assert got["status"]["deallocationRequested"] is True


@pytest.mark.parametrize("patch_type", [MERGE_PATCH, STRATEGIC_PATCH])
def test_label_through_the_preferred_version_keeps_the_classic_fields(reg: Registry, patch_type: str) -> None:
    """`kubectl label resourceclaim cxl-accel` patches through v1: the controller stays."""
    reg.create(find(reg.catalog, "v1alpha3"), "default", claim_v1alpha3(), STRICT)
    out = reg.patch(find(reg.catalog, "v1"), "default", "cxl-accel", "", patch_type,
                    {"metadata": {"labels": {"team": "a"}}}, STRICT).object
    assert out["metadata"]["labels"] == {"team": "a"}
    stored = reg.store.get("ResourceClaim", "default", "cxl-accel")
    assert stored["spec"]["controllerName"] == "cxl.example.com"


def test_replace_and_server_side_apply_in_v1alpha3(reg: Registry) -> None:
    v1alpha3 = find(reg.catalog, "v1alpha3")
    reg.create(v1alpha3, "default", claim_v1alpha3(), STRICT)
    current = reg.get(v1alpha3, "default", "cxl-accel")
    current["metadata"]["labels"] = {"replaced": "yes"}
    reg.update(v1alpha3, "default", "cxl-accel", "", current, STRICT)
    applied = claim_v1alpha3()
    applied["metadata"]["labels"] = {"replaced": "yes", "applied": "yes"}
    out = reg.patch(v1alpha3, "default", "cxl-accel", "", APPLY_PATCH, applied,
                    WriteOptions(field_manager="kubectl", force=True)).object
    assert out["metadata"]["labels"] == {"replaced": "yes", "applied": "yes"}
    assert out["spec"]["controller"] == "cxl.example.com"


def test_server_side_apply_creates_in_v1alpha3(reg: Registry) -> None:
    out = reg.patch(find(reg.catalog, "v1alpha3"), "default", "cxl-accel", "", APPLY_PATCH, claim_v1alpha3(),
                    WriteOptions(field_manager="kubectl")).created
    assert out
    assert reg.store.get("ResourceClaim", "default", "cxl-accel")["spec"]["controllerName"] == "cxl.example.com"


def test_changing_the_controller_is_refused(reg: Registry) -> None:
    v1alpha3 = find(reg.catalog, "v1alpha3")
    reg.create(v1alpha3, "default", claim_v1alpha3(), STRICT)
    current = reg.get(v1alpha3, "default", "cxl-accel")
    current["spec"]["controller"] = "other.example.com"
    with pytest.raises(APIError) as err:
        reg.update(v1alpha3, "default", "cxl-accel", "", current, STRICT)
    assert err.value.code == 422 and "field is immutable" in str(err.value)


def test_v1_still_refuses_the_field_it_does_not_have(reg: Registry) -> None:
    body = conversion.to_version(claim_v1alpha3(), "resource.k8s.io/v1")  # spec.controllerName in v1
    with pytest.raises(APIError) as err:
        reg.create(find(reg.catalog, "v1"), "default", body, STRICT)
    assert 'unknown field "spec.controllerName"' in str(err.value)


def test_template_round_trip() -> None:
    tmpl = {"apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t"}, "spec": {"spec": claim_v1alpha3()["spec"]}}
    hub = conversion.to_storage(tmpl)
    assert hub["spec"]["spec"]["controllerName"] == "cxl.example.com"
    assert conversion.to_version(hub, "resource.k8s.io/v1alpha3") == tmpl
    assert "controllerName" not in conversion.without_classic_fields(hub)["spec"]["spec"]
