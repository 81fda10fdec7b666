"""NodeRestriction for PVC status and CSRs through the API server's HTTPS edge, as a node's client
certificate meets them: a node writes only the reported fields of the status of PVCs its pods use,
and creates kubelet-serving / kubelet-client CSRs only for itself; the same writes answered the same
way by the real kube-apiserver (Node,RBAC + NodeRestriction) when that tier runs
(NODEAGENT_KUBE_APISERVER=1). Upstream appends go-cmp's diff to the PVC refusal: compared up to it.
"""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer, fixture_binary, running_kube_apiserver
from tests.integration.test_authorization import Send, daemon_as, kube_as
from tests.integration.test_pod_status_validation import daemon_sender, kube_sender

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]

NODE_A = ("system:node:nr-node-a", ("system:nodes",))
MERGE = "application/merge-patch+json"
CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


def _csr(name: str, cn: str, signer: str, usages: Sequence[str]) -> dict[str, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = [x509.NameAttribute(NameOID.COMMON_NAME, cn), x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                                                                                 "system:nodes")]
    pem = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(subject)).sign(key, hashes.SHA256()) \
        .public_bytes(serialization.Encoding.PEM)
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": base64.b64encode(pem).decode(), "signerName": signer, "usages": list(usages)}}


def _pvc(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def _pod(name: str, node: str, claim: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example/app:1"}],
                     "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]}}


def _seed(admin: Send, sfx: str) -> None:
    for node in ("nr-node-a", "nr-node-b"):
        admin("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    for claim, node in ((f"nr-claim-a{sfx}", "nr-node-a"), (f"nr-claim-b{sfx}", "nr-node-b")):
        admin("POST", CLAIMS, _pvc(claim))
        admin("POST", "/api/v1/namespaces/default/pods", _pod(f"nr-{claim}", node, claim))


SERVING = ("digital signature", "server auth")
CLIENT = ("digital signature", "client auth")
JSON = "application/json"


def writes(sfx: str) -> list[tuple[str, str, str, Any, str]]:
    """The writes, their object names suffixed with `sfx` (each test its own objects on the shared daemon)."""
    return [
        ("own kubelet-serving CSR", "POST", CSRS,
         _csr(f"nr-serving-a{sfx}", "system:node:nr-node-a", "kubernetes.io/kubelet-serving", SERVING), JSON),
        ("another node's kubelet-serving CSR", "POST", CSRS,
         _csr(f"nr-serving-b{sfx}", "system:node:nr-node-b", "kubernetes.io/kubelet-serving", SERVING), JSON),
        ("another node's kubelet client CSR", "POST", CSRS,
         _csr(f"nr-client-b{sfx}", "system:node:nr-node-b", "kubernetes.io/kube-apiserver-client-kubelet", CLIENT),
         "application/json"),
        ("a CSR of another signer", "POST", CSRS,
         _csr(f"nr-other{sfx}", "someone", "example.com/signer", CLIENT), "application/json"),
        ("its PVC's capacity", "PATCH", f"{CLAIMS}/nr-claim-a{sfx}/status",
         {"status": {"capacity": {"storage": "2Gi"}}}, MERGE),
        ("its PVC's allocatedResources", "PATCH", f"{CLAIMS}/nr-claim-a{sfx}/status",
         {"status": {"allocatedResources": {"storage": "2Gi"}}}, MERGE),
        ("its PVC's phase", "PATCH", f"{CLAIMS}/nr-claim-a{sfx}/status", {"status": {"phase": "Lost"}}, MERGE),
        ("another node's PVC status", "PATCH", f"{CLAIMS}/nr-claim-b{sfx}/status",
         {"status": {"capacity": {"storage": "2Gi"}}}, MERGE),
        ("its PVC's spec", "PATCH", f"{CLAIMS}/nr-claim-a{sfx}", {"metadata": {"labels": {"x": "y"}}}, MERGE),
    ]


DIFF_AFTER = "status.quantity and status.conditions: "


def _written(as_: Callable[[str, Sequence[str]], Send], sfx: str) -> list[tuple[int, Any, Any]]:
    out = []
    for _, method, path, body, ctype in writes(sfx):
        code, doc = as_(*NODE_A)(method, path, body, ctype)
        doc = doc if isinstance(doc, dict) else {}
        message = doc.get("message") if code >= 400 else None
        if isinstance(message, str) and DIFF_AFTER in message:
            message = message[:message.index(DIFF_AFTER) + len(DIFF_AFTER)]
        out.append((code, message, doc.get("details") if code >= 400 else None))
    return out


def test_node_restriction_of_pvc_status_and_csrs(api_daemon: Daemon) -> None:
    _seed(daemon_sender(api_daemon), "")
    got = dict(zip([w[0] for w in writes("")], _written(lambda u, g: daemon_as(api_daemon, u, g), ""), strict=True))
    assert {k: v[0] for k, v in got.items()} == {
        "own kubelet-serving CSR": 201, "another node's kubelet-serving CSR": 403,
        "another node's kubelet client CSR": 403, "a CSR of another signer": 201, "its PVC's capacity": 200,
        "its PVC's allocatedResources": 200, "its PVC's phase": 403,
        "another node's PVC status": 403, "its PVC's spec": 403}, got
    assert got["another node's kubelet-serving CSR"][1] == (
        'certificatesigningrequests.certificates.k8s.io "nr-serving-b" is forbidden: can only create a node CSR '
        "with CN=system:node:nr-node-a")
    assert got["its PVC's phase"][1] == (
        'persistentvolumeclaims "nr-claim-a" is forbidden: node "nr-node-a" is not allowed to update fields other '
        f"than {DIFF_AFTER}")


@pytest.fixture(scope="module")
def real_apiserver() -> Iterator[KubeAPIServer]:
    with running_kube_apiserver(fixture_binary()) as server:
        yield server


@pytest.mark.kube_apiserver
def test_the_same_as_kube_apiserver(api_daemon: Daemon, real_apiserver: KubeAPIServer) -> None:
    _seed(daemon_sender(api_daemon), "-2")
    _seed(kube_sender(real_apiserver), "-2")
    ours = _written(lambda u, g: daemon_as(api_daemon, u, g), "-2")
    theirs = _written(lambda u, g: kube_as(real_apiserver, u, g), "-2")
    differ = {w[0]: (a, b) for w, a, b in zip(writes("-2"), ours, theirs, strict=True) if a != b}
    assert differ == {}
