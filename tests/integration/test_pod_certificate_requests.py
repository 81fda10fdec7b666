"""PodCertificateRequest admission through the daemon's REST API as kube-apiserver v1.37.2 answers it:
creates (defaults, every spec error listed, the stub CSR's checks), the spec immutable, updates without
a resourceVersion refused, the /status rules (terminal conditions, an Issued chain bound to the
requested key), no metadata.generation. When the kube-apiserver tier runs (NODEAGENT_KUBE_APISERVER=1)
the same requests give the real kube-apiserver's answers."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from tests.integration.daemon_helpers import Daemon
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_validating_admission_policy import Send, _sender, daemon_send
from tests.pcrs import CA, KEY, b64, csr, pcr

pytestmark = [pytest.mark.integration]

PATH = "/apis/certificates.k8s.io/v1/namespaces/default/podcertificaterequests"




def _ts(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cond(kind: str, status: str = "True", reason: str = "R") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": "m",
            "lastTransitionTime": _ts(dt.datetime.now(dt.UTC))}


def _chain(public: Any, hours: int = 2) -> tuple[str, dt.datetime]:
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(public).serial_number(1)
            .not_valid_before(now).not_valid_after(now + dt.timedelta(hours=hours)).sign(CA, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode(), now


def _issued(chain: str, start: dt.datetime, hours: int = 2, refresh: int = 30) -> dict[str, Any]:
    return {"conditions": [_cond("Issued")], "certificateChain": chain, "notBefore": _ts(start),
            "notAfter": _ts(start + dt.timedelta(hours=hours)),
            "beginRefreshAt": _ts(start + dt.timedelta(minutes=refresh))}


def _answer(got: tuple[int, Any, Any]) -> tuple[int, Any]:
    code, body, _ = got
    if code >= 300:
        return code, body.get("message")
    md = body["metadata"]
    return code, (md.get("generation"), body.get("spec", {}).get("maxExpirationSeconds"), body.get("status"))


def answers(send: Send, prefix: str) -> dict[str, Any]:
    """Label -> (code, message or a few fields) of one scenario; names start with `prefix`."""
    out: dict[str, Any] = {}
    bad_sig = bytearray(csr(ec.generate_private_key(ec.SECP256R1()), hashes.SHA256()))
    bad_sig[-3] ^= 1
    creates: dict[str, dict[str, Any]] = {
        "ok": {},
        "many errors": {"signerName": "kubernetes.io/x", "podName": "A_B", "podUID": "", "serviceAccountName": "",
                        "serviceAccountUID": "x" * 129, "nodeName": "", "nodeUID": "", "maxExpirationSeconds": 100,
                        "stubPKCS10Request": None},
        "kubernetes signer too long": {"signerName": "kubernetes.io/x", "maxExpirationSeconds": 90000},
        "garbage stub": {"stubPKCS10Request": b64(b"garbage")},
        "rsa 2048": {"stubPKCS10Request": b64(csr(rsa.generate_private_key(65537, 2048), hashes.SHA256()))},
        "bad signature": {"stubPKCS10Request": b64(bytes(bad_sig))},
        "annotations": {"unverifiedUserAnnotations": {"foo": "x", "a.io/ok": "y"}},
    }
    for i, (label, changes) in enumerate(creates.items()):
        name = f"{prefix}-{i}"
        send("DELETE", f"{PATH}/{name}", None)
        out[label] = _answer(send("POST", PATH, pcr(name, **changes)))
    url = f"{PATH}/{prefix}-0"
    cur = send("GET", url, None)[1]
    changed = copy.deepcopy(cur)
    changed["spec"]["podName"] = "q"
    out["spec changed"] = _answer(send("PUT", url, changed))
    unconditional = copy.deepcopy(cur)
    del unconditional["metadata"]["resourceVersion"]
    out["no resourceVersion"] = _answer(send("PUT", url, unconditional))
    for label, status in (
        ("bad conditions", {"conditions": [_cond("Foo"), _cond("Issued", "False"), _cond("Denied", reason="")]}),
        ("not terminal", {"notBefore": _ts(dt.datetime.now(dt.UTC))}),
        ("denied with a chain", {"conditions": [_cond("Denied")], "certificateChain": "x"}),
        ("issued to another key", _issued(*_chain(ed25519.Ed25519PrivateKey.generate().public_key()))),
        ("issued too long", _issued(*_chain(KEY.public_key(), hours=30), hours=30)),
    ):
        out[label] = _answer(send("PUT", f"{url}/status", {**cur, "status": status}))
    issued = _issued(*_chain(KEY.public_key()))
    out["issued"] = send("PUT", f"{url}/status", {**cur, "status": issued})[0]
    after = send("GET", url, None)[1]
    denied = {"conditions": [_cond("Denied")]}
    out["after terminal"] = _answer(send("PUT", f"{url}/status", {**after, "status": denied}))
    for i in range(len(creates)):
        send("DELETE", f"{PATH}/{prefix}-{i}", None)
    return out


def test_pod_certificate_request_admission(api_daemon: Daemon) -> None:
    got = answers(daemon_send(api_daemon), "pcr-a")
    assert got["ok"] == (201, (None, 86400, {}))
    assert got["issued"] == 200
    refused = {k: v for k, v in got.items() if k not in ("ok", "issued")}
    assert all(code == 422 for code, _ in refused.values()), refused
    assert got["no resourceVersion"][1].endswith("metadata.resourceVersion: Invalid value: 0: must be specified "
                                                 "for an update")
    assert got["after terminal"][1].endswith("status: Invalid value: immutable after PodCertificateRequest is "
                                             "issued, denied, or failed")


@pytest.mark.kube_apiserver
def test_the_same_answers_as_kube_apiserver(api_daemon: Daemon, kube_apiserver: KubeAPIServer) -> None:
    ours = answers(daemon_send(api_daemon), "pcr-b")
    theirs = answers(_sender(kube_apiserver.url, kube_apiserver._ssl(), {}), "pcr-b")
    # the chains differ (fresh certificates each run): their texts are compared without the PEM
    for side in (ours, theirs):
        side["issued to another key"] = (side["issued to another key"][0],
                                         str(side["issued to another key"][1]).rpartition('": ')[2])
    differ = [(k, ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]]
    assert not differ, "\n".join(f"{k}:\n ours   {a}\n theirs {b}" for k, a, b in differ)
