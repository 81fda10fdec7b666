"""adminAccess only in namespaces labelled resource.kubernetes.io/admin-access: "true" (upstream's
admission rule and message), through the store with the hooks the daemon registers."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import FakeClock

MSG = ("Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the "
       "containing namespace")


def _claim(ns: str, admin: bool, kind: str = "ResourceClaim", requests: int = 1) -> dict[str, Any]:
    spec = {"devices": {"requests": [{"name": f"r{i}", "exactly": {"deviceClassName": "gpu", "adminAccess": admin}}
                                     for i in range(requests)]}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": "c", "namespace": ns},
            "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec}


def _ns(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


@pytest.fixture
def store() -> ObjectStore:
    s = ObjectStore.memory(admitted_kinds(), FakeClock())
    s.create(_ns("plain", {"team": "a"}))
    s.create(_ns("admins", {"resource.kubernetes.io/admin-access": "true"}))
    return s


@pytest.mark.parametrize(("kind", "path"), [("ResourceClaim", "spec.devices.requests[0].exactly.adminAccess"),
                                            ("ResourceClaimTemplate",
                                             "spec.spec.devices.requests[0].exactly.adminAccess")])
def test_admin_access_outside_an_admin_namespace_is_forbidden(store: ObjectStore, kind: str, path: str) -> None:
    for ns in ("plain", "missing"):
        with pytest.raises(ValidationError) as err:
            store.create(_claim(ns, True, kind))
        assert f"{path}: {MSG}" in str(err.value)
    store.create(_claim("admins", True, kind))
    store.create(_claim("plain", False, kind))


def test_every_admin_request_is_reported(store: ObjectStore) -> None:
    with pytest.raises(ValidationError) as err:
        store.create(_claim("plain", True, requests=2))
    text = str(err.value)
    assert "requests[0].exactly.adminAccess" in text and "requests[1].exactly.adminAccess" in text


def test_the_rule_follows_the_gate() -> None:
    s = ObjectStore.memory(admitted_kinds({"DRAAdminAccess": False}), FakeClock())
    s.create(_claim("plain", True))  # the allocator refuses it later: the feature is disabled


def test_every_claim_validation_error_is_reported() -> None:
    from nodeagent.objects.resource.validation import validate

    doc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "x"},
           "spec": {"devices": {"requests": [
               {"name": "r", "exactly": {"deviceClassName": "c", "selectors": [{"cel": {"expression": "1"}}]}},
               {"name": "r2", "exactly": {"deviceClassName": ""}}],
               "constraints": [{"requests": ["r2"], "matchAttribute": "a.example.com/b"}]}}}
    with pytest.raises(ValidationError) as err:
        validate("ResourceClaim", doc)
    assert str(err.value) == (
        '[spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "1": must evaluate to bool '
        "or the unknown type, not int, spec.devices.requests[1].exactly.deviceClassName: Required value]")
