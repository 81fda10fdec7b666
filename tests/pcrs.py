"""PodCertificateRequests for the tests of their admission (unit, in the store; integration, through
the REST API and against kube-apiserver): one key and CA per run, a stub CSR signed by a given key, and
a request whose spec fields a test overrides (None leaves a field out)."""

from __future__ import annotations

import base64
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

KEY = ed25519.Ed25519PrivateKey.generate()
CA = ec.generate_private_key(ec.SECP256R1())


def csr(key: Any, algorithm: Any = None) -> bytes:
    """A DER PKCS#10 request with an empty subject, signed by `key` (ed25519 takes no algorithm)."""
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([]))
    return builder.sign(key, algorithm).public_bytes(serialization.Encoding.DER)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def pcr(name: str, namespace: str | None = None, **changes: Any) -> dict[str, Any]:
    """A valid request for KEY, with `changes` applied to its spec."""
    spec = {"signerName": "example.com/foo", "podName": "p", "podUID": "u1", "serviceAccountName": "default",
            "serviceAccountUID": "u2", "nodeName": "n1", "nodeUID": "u3", "stubPKCS10Request": b64(csr(KEY))}
    spec.update(changes)
    meta = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "PodCertificateRequest", "metadata": meta,
            "spec": {k: v for k, v in spec.items() if v is not None}}
