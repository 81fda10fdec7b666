"""NodeRestriction: a node writes only its own Node (no taints, owner references or non-kubelet
labels changed), its own Lease, mirror pods bound to it, status of pods bound to it and
ResourceSlices of its own nodeName, the reported fields of PVC status, kubelet CSRs for itself;
texts as upstream's."""

from __future__ import annotations

import base64
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from nodeagent.apiserver.authz.noderestriction import admit_delete, admit_write, forbidden_labels


def _node(name: str, labels: dict[str, str] | None = None, taints: list[Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def test_a_node_writes_only_its_own_node() -> None:
    assert admit_write("a", "", "nodes", "", "", "a", _node("a"), None) == ""
    assert admit_write("a", "", "nodes", "", "", "b", _node("b"), _node("b")) == \
        'node "a" is not allowed to modify node "b"'
    assert admit_write("a", "", "nodes", "status", "", "b", _node("b"), _node("b")) == \
        'node "a" is not allowed to modify node "b"'
    tainted = _node("a", taints=[{"key": "k", "effect": "NoSchedule"}])
    assert admit_write("a", "", "nodes", "", "", "a", tainted, _node("a")) == 'node "a" is not allowed to modify taints'
    labelled = _node("a", {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "a",
                           "example.com/x": "y", "node.kubernetes.io/exclude-from-external-load-balancers": ""})
    assert admit_write("a", "", "nodes", "", "", "a", labelled, _node("a")) == \
        "is not allowed to modify labels: node-role.kubernetes.io/control-plane"
    restricted = _node("a", {"x.node-restriction.kubernetes.io/t": "1"})
    assert admit_write("a", "", "nodes", "", "", "", restricted, None) == \
        'node "a" is not allowed to set the following labels: x.node-restriction.kubernetes.io/t'
    assert forbidden_labels({"topology.kubernetes.io/zone": "z", "beta.kubernetes.io/arch": "amd64"}, {}) == []


def test_pods_bound_to_it_and_mirror_pods_only() -> None:
    mine = {"metadata": {"name": "p"}, "spec": {"nodeName": "a"}, "status": {"phase": "Running"}}
    theirs = {"metadata": {"name": "q"}, "spec": {"nodeName": "b"}}
    assert admit_write("a", "", "pods", "status", "default", "p", mine, mine) == ""
    assert admit_write("a", "", "pods", "status", "default", "q", theirs, theirs) == \
        'node "a" can only update pod status for pods with spec.nodeName set to itself'
    claims = {**mine, "status": {"resourceClaimStatuses": [{"name": "c", "resourceClaimName": "x"}]}}
    assert admit_write("a", "", "pods", "status", "default", "p", claims, mine) == \
        'node "a" cannot update resource claim statues'
    assert admit_write("a", "", "pods", "", "default", "", mine, None) == \
        'pod does not have "kubernetes.io/config.mirror" annotation, node "a" can only create mirror pods'
    mirror = {"metadata": {"name": "m", "annotations": {"kubernetes.io/config.mirror": "x"},
                           "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "a", "uid": "u",
                                                "controller": True}]}, "spec": {"nodeName": "a"}}
    assert admit_write("a", "", "pods", "", "default", "", mirror, None) == ""
    assert admit_write("a", "", "pods", "", "default", "p", mine, mine) == \
        'unexpected operation "UPDATE", node "a" can only create and delete mirror pods'
    assert admit_delete("a", "", "pods", theirs) == 'node "a" can only delete pods with spec.nodeName set to itself'
    assert admit_delete("a", "", "pods", mine) == ""


def test_leases_and_slices_of_its_own() -> None:
    lease = {"metadata": {"name": "b"}}
    assert admit_write("a", "coordination.k8s.io", "leases", "", "kube-node-lease", "", lease, None) == \
        "can only access node lease with the same name as the requesting node"
    assert admit_write("a", "coordination.k8s.io", "leases", "", "default", "", lease, None) == \
        'can only access leases in the "kube-node-lease" system namespace'
    slice_b = {"metadata": {"name": "s"}, "spec": {"nodeName": "b", "driver": "d"}}
    assert admit_write("a", "resource.k8s.io", "resourceslices", "", "", "", slice_b, None) == \
        "can only create ResourceSlice with the same NodeName as the requesting node"
    assert admit_delete("a", "resource.k8s.io", "resourceslices", slice_b) == \
        "can only delete ResourceSlice with the same NodeName as the requesting node"


def _claim(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "d", "resourceVersion": "1", "labels": {"a": "b"}},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Bound", **status}}


def test_pvc_status_only_what_a_kubelet_reports() -> None:
    old = _claim()
    reported = _claim(capacity={"storage": "2Gi"}, conditions=[{"type": "Resizing", "status": "True"}],
                      allocatedResources={"storage": "2Gi"}, allocatedResourceStatuses={"storage": "x"})
    reported["metadata"]["resourceVersion"] = ""
    assert admit_write("a", "", "persistentvolumeclaims", "status", "d", "c", reported, old) == ""
    lost = _claim(phase="Lost")
    assert admit_write("a", "", "persistentvolumeclaims", "status", "d", "c", lost, old) == (
        'node "a" is not allowed to update fields other than status.quantity and status.conditions: '
        "changed status.phase")
    assert admit_write("a", "", "persistentvolumeclaims", "", "d", "c", old, old) == "may only update PVC status"


def _csr(cn: str, signer: str) -> dict[str, Any]:
    request = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])).sign(ec.generate_private_key(ec.SECP256R1()),
                                                                      hashes.SHA256())
    pem = request.public_bytes(serialization.Encoding.PEM)
    return {"metadata": {"name": "x"}, "spec": {"signerName": signer, "request": base64.b64encode(pem).decode()}}


def test_node_csrs_only_for_itself() -> None:
    csrs = "certificatesigningrequests"
    group = "certificates.k8s.io"
    assert admit_write("a", group, csrs, "", "", "", _csr("system:node:a", "kubernetes.io/kubelet-serving"), None) == ""
    assert admit_write("a", group, csrs, "", "", "", _csr("system:node:b", "kubernetes.io/kubelet-serving"),
                       None) == "can only create a node CSR with CN=system:node:a"
    assert admit_write("a", group, csrs, "", "", "",
                       _csr("system:node:b", "kubernetes.io/kube-apiserver-client-kubelet"), None) != ""
    assert admit_write("a", group, csrs, "", "", "", _csr("b", "example.com/other"), None) == ""
    garbage = {"spec": {"signerName": "kubernetes.io/kubelet-serving", "request": "bm90IGEgcGVt"}}
    assert admit_write("a", group, csrs, "", "", "", garbage, None) == \
        "unable to parse csr: PEM block type must be CERTIFICATE REQUEST"
