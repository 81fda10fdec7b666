"""PersistentVolumes and PersistentVolumeClaims through the registry: upstream's defaults, the
status subresources (a volume's lastPhaseTransitionTime), ValidatePersistentVolume(Claim)'s
messages and a claim's immutable spec."""

from __future__ import annotations

from typing import Any

from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import MERGE_PATCH, Registry
from tests.unit.corekinds.conftest import failure, res

PV, PVC = res("persistentvolumes"), res("persistentvolumeclaims")
W = WriteOptions()


def pv(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("capacity", {"storage": "1Gi"})
    spec.setdefault("accessModes", ["ReadWriteOnce"])
    if not any(k in spec for k in ("hostPath", "csi", "local", "nfs")):
        spec["hostPath"] = {"path": "/data"}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def pvc(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("accessModes", ["ReadWriteOnce"])
    spec.setdefault("resources", {"requests": {"storage": "1Gi"}})
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def test_volume_defaults_and_status(reg: Registry) -> None:
    made = reg.create(PV, "", pv("v1"), W).object
    assert made["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and made["spec"]["volumeMode"] == "Filesystem"
    assert made["spec"]["hostPath"] == {"path": "/data", "type": ""}
    assert made["status"]["phase"] == "Pending" and made["status"]["lastPhaseTransitionTime"]
    reg.clock.advance(60)  # type: ignore[attr-defined]
    avail = reg.patch(PV, "", "v1", "status", MERGE_PATCH, {"status": {"phase": "Available"}}, W).object
    assert avail["status"]["lastPhaseTransitionTime"] > made["status"]["lastPhaseTransitionTime"]
    again = reg.patch(PV, "", "v1", "status", MERGE_PATCH, {"status": {"message": "x"}}, W).object
    assert again["status"]["lastPhaseTransitionTime"] == avail["status"]["lastPhaseTransitionTime"]


def test_claim_defaults_binding_and_immutability(reg: Registry) -> None:
    made = reg.create(PVC, "default", pvc("c1"), W).object
    assert made["status"] == {"phase": "Pending"} and made["spec"]["volumeMode"] == "Filesystem"
    bound = reg.patch(PVC, "default", "c1", "", MERGE_PATCH, {"spec": {"volumeName": "v1"}}, W).object
    assert bound["spec"]["volumeName"] == "v1"
    err = failure(lambda: reg.patch(PVC, "default", "c1", "", MERGE_PATCH, {"spec": {"volumeName": "v2"}}, W))
    assert err.message == ('PersistentVolumeClaim "c1" is invalid: spec: Forbidden: spec is immutable after creation '
                           "except resources.requests and volumeAttributesClassName for bound claims")


def test_validation_messages(reg: Registry) -> None:
    cases = [
        (PV, pv("nomodes", accessModes=[]),
         'PersistentVolume "nomodes" is invalid: spec.accessModes: Required value'),
        (PV, pv("nosource", hostPath=None), 'PersistentVolume "nosource" is invalid: spec: Required value: must '
         "specify a volume type"),
        (PV, pv("two", hostPath={"path": "/a"}, nfs={"server": "s", "path": "/"}),
         'PersistentVolume "two" is invalid: spec.nfs: Forbidden: '
         "may not specify more than 1 volume type"),
        (PV, pv("local", hostPath=None, local={"path": "/mnt"}), 'PersistentVolume "local" is invalid: '
         "spec.nodeAffinity: Required value: Local volume requires node affinity"),
        (PV, pv("cap", capacity={"storage": "0"}), 'PersistentVolume "cap" is invalid: spec.capacity[storage]: '
         'Invalid value: "0": must be greater than zero'),
        (PVC, pvc("nomodes", accessModes=[]), 'PersistentVolumeClaim "nomodes" is invalid: spec.accessModes: '
         "Required value: at least 1 access mode is required"),
        (PVC, pvc("nosize", resources={}), 'PersistentVolumeClaim "nosize" is invalid: spec.resources[storage]: '
         "Required value"),
        (PVC, pvc("mode", volumeMode="Raw"), 'PersistentVolumeClaim "mode" is invalid: spec.volumeMode: Unsupported '
         'value: "Raw": supported values: "Block", "Filesystem"'),
    ]
    for resource, body, message in cases:
        if body["spec"].get("hostPath", 0) is None:
            del body["spec"]["hostPath"]
        ns = "default" if resource is PVC else ""
        err = failure(lambda resource=resource, body=body, ns=ns: reg.create(resource, ns, body, W))  # type: ignore[misc]
        assert (err.code, err.message) == (422, message)
