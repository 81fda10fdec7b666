"""certificates.k8s.io/v1 CertificateSigningRequest validation through a running daemon's API: bad
requests (PEM, usages, signerName, expirationSeconds, the legacy signer) refused with kube-apiserver's
422, and on a stored one the approval subresource's conditions (Approved beside Denied, a removed
Approved) and the status subresource's certificate (a PEM that is no certificate). When the
kube-apiserver tier runs (NODEAGENT_KUBE_APISERVER=1) the same requests give the real
kube-apiserver's answers."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_kcm_kinds import _csr_pem
from tests.integration.test_validating_admission_policy import Send, _answer, _sender, daemon_send

pytestmark = [pytest.mark.integration]

BASE = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
REQUEST = _csr_pem()


def csr(name: str, **spec: Any) -> dict[str, Any]:
    body = {"request": REQUEST, "signerName": "example.com/signer", "usages": ["client auth"], **spec}
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {k: v for k, v in body.items() if v is not None}}


INVALID = [
    csr("cv-pem", request=base64.b64encode(b"not a pem").decode()),
    csr("cv-fields", usages=[], signerName="foo", expirationSeconds=100),
    csr("cv-usages", usages=["client auth", "teleport", "client auth"], signerName="example.com/Bad_Name"),
    csr("cv-domain", signerName="example/signer"),
    csr("cv-legacy", signerName="kubernetes.io/legacy-unknown"),
]


def _cond(kind: str, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "Test", "message": "test"}


def answers(send: Send) -> list[Any]:
    out: list[Any] = [_answer(send("POST", BASE, obj)) for obj in INVALID]
    name = "cv-stored"
    send("DELETE", f"{BASE}/{name}", None)
    code, body, _ = send("POST", BASE, csr(name))
    assert code == 201, body
    both = {**body, "status": {"conditions": [_cond("Approved"), _cond("Denied")]}}
    out.append(_answer(send("PUT", f"{BASE}/{name}/approval", both)))
    out.append(_answer(send("PUT", f"{BASE}/{name}/approval", {**body, "status": {"conditions": [
        _cond("Approved", "False")]}})))
    code, approved, _ = send("PUT", f"{BASE}/{name}/approval", {**body, "status": {"conditions": [_cond("Approved")]}})
    assert code == 200, approved
    out.append(_answer(send("PUT", f"{BASE}/{name}/approval", {**approved, "status": {"conditions": []}})))
    bad_cert = base64.b64encode(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").decode()
    out.append(_answer(send("PUT", f"{BASE}/{name}/status", {**approved, "status": {
        **approved["status"], "certificate": bad_cert}})))
    send("DELETE", f"{BASE}/{name}", None)
    return out


def test_csr_validation(api_daemon: Daemon) -> None:
    got = answers(daemon_send(api_daemon))
    for answer in got:
        assert answer[:2] == (422, "Invalid"), answer
    assert got[0][2].endswith("spec.request: Invalid value: \"bm90IGEgcGVt\": PEM block type must be CERTIFICATE "
                              "REQUEST")
    fields = {c["field"] for c in got[1][3]["causes"]}
    assert fields == {"spec.usages", "spec.signerName", "spec.expirationSeconds"}
    assert got[len(INVALID)][2].endswith('must specify at most one of: `conditions[{"type": "Approved"}]`, '
                                         '`conditions[{"type": "Denied"}]`')
    assert 'updates may not remove a condition of type \\"Approved\\"' in str(got[-2]) or \
        'updates may not remove a condition of type "Approved"' in got[-2][2]
    assert 'only CERTIFICATE PEM blocks are allowed, found "PRIVATE KEY"' in got[-1][2]


@pytest.mark.kube_apiserver
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = answers(daemon_send(api_daemon))
    theirs = answers(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}))
    assert ours == theirs
