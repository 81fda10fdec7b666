"""The store's ResourceClaim hook remembers valid specs by content (resource_shared.SpecMemo): a
remembered spec gives the answer a fresh check gives, as a private copy; an invalid spec is
rejected every time, with the message of the version it came in."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.resource import validation as resource


def _claim(name: str, spec: dict[str, Any], api: str = "resource.k8s.io/v1") -> dict[str, Any]:
    return {"apiVersion": api, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}


def test_a_remembered_spec_is_the_checked_one_and_private() -> None:
    default = resource.hooks()["ResourceClaim"]["default"]
    fresh = resource.validate("ResourceClaim", _claim("a", copy.deepcopy(SPEC)))
    first = default(_claim("a", copy.deepcopy(SPEC)))
    second = default(_claim("b", copy.deepcopy(SPEC)))
    assert first["spec"] == second["spec"] == fresh["spec"]
    assert first["spec"] is not second["spec"]
    second["spec"]["devices"]["requests"][0]["name"] = "changed"
    assert default(_claim("c", copy.deepcopy(SPEC)))["spec"] == fresh["spec"]


def test_an_invalid_spec_is_rejected_every_time() -> None:
    default = resource.hooks()["ResourceClaim"]["default"]
    bad = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "Not_A_Name"}}]}}
    for name in ("a", "b"):
        with pytest.raises(ValidationError) as err:
            default(_claim(name, copy.deepcopy(bad)))
        assert "spec.devices.requests[0].exactly.deviceClassName" in str(err.value)


def test_each_version_keeps_its_messages() -> None:
    default = resource.hooks()["ResourceClaim"]["default"]
    beta = {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu"}]}}
    v1 = default(_claim("a", copy.deepcopy(SPEC)))
    for api in ("resource.k8s.io/v1beta1", "resource.k8s.io/v1"):  # both read the beta shape
        assert default(_claim("b", copy.deepcopy(beta), api))["spec"] == v1["spec"]
    empty = {"devices": {"requests": [{"name": "gpu"}]}}
    for api, want in (("resource.k8s.io/v1beta1", "exactly one of `deviceClassName` or `firstAvailable`"),
                      ("resource.k8s.io/v1", "exactly one of `exactly` or `firstAvailable`")):
        with pytest.raises(ValidationError, match=want):
            default(_claim("c", copy.deepcopy(empty), api))
