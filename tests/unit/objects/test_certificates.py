"""CertificateSigningRequest validation (objects/certificates.py): upstream's texts for the request's
PEM, usages, signerName and conditions (the integration test compares whole answers with the real
kube-apiserver)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects import certificates as certs


def _request() -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    req = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "u")])).sign(key, hashes.SHA256())
    return base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode()


REQUEST = _request()


def _errors(spec: dict[str, Any], status: dict[str, Any] | None = None) -> list[str]:
    obj: dict[str, Any] = {"metadata": {"name": "c"}, "spec": {"request": REQUEST, "signerName": "example.com/s",
                                                                "usages": ["client auth"], **spec}}
    if status:
        obj["status"] = status
    try:
        certs.validate_csr(obj)
    except ValidationError as err:
        return [f"{e.path}: {e.detail}" for e in (getattr(err, "errors", None) or [err])]
    return []


@pytest.mark.parametrize(("spec", "errors"), [
    ({}, []),
    ({"request": base64.b64encode(b"x").decode()},
     ['spec.request: Invalid value: "eA==": PEM block type must be CERTIFICATE REQUEST']),
    ({"usages": ["client auth", "client auth"]}, ['spec.usages[1]: Duplicate value: "client auth"']),
    ({"signerName": "foo"}, ['spec.signerName: Invalid value: "foo": must be a fully qualified domain and path of '
                             "the form 'example.com/signer-name'"]),
    ({"signerName": "example/s"}, ['spec.signerName: Invalid value: "example": should be a domain with at least '
                                   "two segments separated by dots"]),
    ({"expirationSeconds": 599}, ["spec.expirationSeconds: Invalid value: 599: may not specify a duration less "
                                  "than 600 seconds (10 minutes)"]),
])
def test_spec(spec: dict[str, Any], errors: list[str]) -> None:
    assert _errors(spec) == errors


def test_conditions() -> None:
    got = _errors({}, {"conditions": [{"type": "Approved", "status": "False"}, {"type": "Denied", "status": "True"}]})
    assert got[0] == 'status.conditions[0].status: Unsupported value: "False": supported values: "True"'
    assert got[1].startswith("status.conditions: Invalid value: ") and got[1].endswith(
        'must specify at most one of: `conditions[{"type": "Approved"}]`, `conditions[{"type": "Denied"}]`')


def test_update_keeps_conditions_and_certificate() -> None:
    old = {"metadata": {"name": "c"}, "spec": {"request": REQUEST, "signerName": "example.com/s",
                                               "usages": ["client auth"]},
           "status": {"conditions": [{"type": "Approved", "status": "True"}]}}
    with pytest.raises(ValidationError, match='updates may not remove a condition of type "Approved"'):
        certs.validate_csr_update({**old, "status": {}}, old)
