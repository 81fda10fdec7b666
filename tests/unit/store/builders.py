"""Small builders of test objects (Pod, ResourceClaim, Node) and the toy validation hooks."""

from __future__ import annotations

from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.store import Obj


def validate_claim(obj: Obj) -> None:
    """A toy stand-in for the object model's hook: requests need names."""
    for i, req in enumerate(obj.get("spec", {}).get("devices", {}).get("requests", [])):
        if not req.get("name"):
            raise ValidationError(f"spec.devices.requests[{i}].name", "Required value")
    reserved = obj.get("status", {}).get("reservedFor", [])
    if len(reserved) > 2:
        raise ValidationError("status.reservedFor", f"Too many: {len(reserved)}: must have at most 2 items")


def claim_spec_immutable(new: Obj, old: Obj) -> None:
    if new.get("spec") != old.get("spec"):
        raise ValidationError("spec", "Invalid value: field is immutable")


def pod(name: str, namespace: str = "default", **meta: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


def claim(name: str, namespace: str = "default", owner: Obj | None = None, **meta: Any) -> Obj:
    md: dict[str, Any] = {"name": name, "namespace": namespace, **meta}
    if owner is not None:
        md["ownerReferences"] = [owner_ref(owner)]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": md,
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
    }


def owner_ref(owner: Obj) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }


def node(name: str, **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, **meta}, "spec": {}}
