"""PodCertificateRequest admission as kube-apiserver v1.37.2 (ValidatePodCertificateRequestCreate,
...Update, ...StatusUpdate). Every expected text here was read off the real kube-apiserver for the
same request (the kube-apiserver tier's comparison, /tmp probe of the valid23e session). Before,
any PodCertificateRequest was stored as sent."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from nodeagent.errors import ValidationError
from nodeagent.objects import podcertificates
from nodeagent.store import ObjectStore
from tests.pcrs import CA, KEY, b64, csr, pcr
from tests.unit.objects.stores import admission_store

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)


def _pcr(name: str, **changes: Any) -> dict[str, Any]:
    return pcr(name, "default", **changes)


def _refused(store: ObjectStore, obj: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as err:
        store.create(obj)
    return str(err.value).partition(" is invalid: ")[2]


def test_defaults_and_accepts_a_verifying_stub(tmp_path: Path) -> None:
    with admission_store(tmp_path / "o.db") as store:
        made = store.create(_pcr("ok"))
    assert made["spec"]["maxExpirationSeconds"] == 86400


BAD_SIG = bytearray(csr(ec.generate_private_key(ec.SECP256R1()), hashes.SHA256()))
BAD_SIG[-3] ^= 1
STUB = "spec.stubPKCS10Request: Invalid value: "


@pytest.mark.parametrize(("changes", "expected"), [
    ({"signerName": "kubernetes.io/x", "podName": "A_B", "podUID": "", "serviceAccountName": "",
      "serviceAccountUID": "x" * 129, "nodeName": "", "nodeUID": "", "maxExpirationSeconds": 100,
      "stubPKCS10Request": None},
     '[spec.podName: Invalid value: "A_B": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
     "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
     "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), "
     'spec.podUID: Invalid value: "": must not be empty, spec.serviceAccountName: Invalid value: "": a lowercase'),
    ({"signerName": "kubernetes.io/x", "maxExpirationSeconds": 90000},
     "spec.maxExpirationSeconds: Invalid value: 90000: must be in the range [3600, 86400]"),
    ({"maxExpirationSeconds": 91 * 86400 + 1},
     "spec.maxExpirationSeconds: Invalid value: 7862401: must be in the range [3600, 7862400]"),
    ({"signerName": "foo"},
     "spec.signerName: Invalid value: \"foo\": must be a fully qualified domain and path of the form "
     "'example.com/signer-name'"),
    ({"stubPKCS10Request": b64(b"garbage")}, STUB + "must be a valid PKCS#10 CSR"),
    ({"stubPKCS10Request": b64(csr(rsa.generate_private_key(65537, 2048), hashes.SHA256()))},
     STUB + '"2048-bit modulus": RSA keys must have modulus size 3072 or 4096'),
    ({"stubPKCS10Request": b64(bytes(BAD_SIG))}, STUB + "invalid signature"),
    ({"unverifiedUserAnnotations": {"foo": "x", "a.io/ok": "y"}},
     'spec.unverifiedUserAnnotations: Invalid value: "foo": must be a domain-prefixed key (such as "acme.io/foo")'),
])
def test_create_refusals(tmp_path: Path, changes: dict[str, Any], expected: str) -> None:
    with admission_store(tmp_path / "o.db") as store:
        assert _refused(store, _pcr("bad", **changes)).startswith(expected)


def test_no_stub_is_the_exactly_one_rule(tmp_path: Path) -> None:
    with admission_store(tmp_path / "o.db") as store:
        text = _refused(store, _pcr("bad", stubPKCS10Request=None))
    assert text == ("spec: Invalid value: exactly one of (stubPKCS10Request) or (pkixPublicKey, proofOfPossession) "
                    "must be set")


def test_spec_is_immutable(tmp_path: Path) -> None:
    with admission_store(tmp_path / "o.db") as store:
        made = store.create(_pcr("ok"))
        made["spec"]["podName"] = "q"
        with pytest.raises(ValidationError) as err:
            store.update(made)
    assert '"ok" is invalid: spec: Invalid value: {"SignerName":"example.com/foo","PodName":"q",' in str(err.value)
    assert str(err.value).endswith('"UnverifiedUserAnnotations":null}: field is immutable')


def _chain(public: Any, hours: int = 2) -> str:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(public).serial_number(1)
            .not_valid_before(NOW).not_valid_after(NOW + dt.timedelta(hours=hours)).sign(CA, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _ts(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cond(kind: str, status: str = "True", reason: str = "R") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": "m", "lastTransitionTime": _ts(NOW)}


def _issued(chain: str, refresh_minutes: int = 30, hours: int = 2) -> dict[str, Any]:
    return {"conditions": [_cond("Issued")], "certificateChain": chain, "notBefore": _ts(NOW),
            "notAfter": _ts(NOW + dt.timedelta(hours=hours)),
            "beginRefreshAt": _ts(NOW + dt.timedelta(minutes=refresh_minutes))}


@pytest.mark.parametrize(("old_status", "status", "expected"), [
    ({}, {"conditions": [_cond("Foo"), _cond("Issued", "False"), _cond("Denied", reason="")]},
     'status.conditions.[0].type: Unsupported value: "Foo": supported values: "Issued", "Denied", "Failed"; '
     'status.conditions.[1].status: Unsupported value: "False": supported values: "True"; '
     "status.conditions.[2].type: Invalid value: \"Denied\": There may be at most one condition with type "
     '"Issued", "Denied", or "Failed"; status.conditions[2].reason: Required value'),
    ({}, {"notBefore": _ts(NOW)},
     'status: Invalid value: status is immutable unless transitioning to "Issued", "Denied", or "Failed"'),
    ({}, {"conditions": [_cond("Denied")], "certificateChain": "x"},
     "status: Invalid value: non-condition status fields must be empty when denying or failing the "
     "PodCertificateRequest"),
    ({"conditions": [_cond("Denied")]}, {"conditions": [_cond("Failed")]},
     "status: Invalid value: immutable after PodCertificateRequest is issued, denied, or failed"),
    ({}, _issued(_chain(ed25519.Ed25519PrivateKey.generate().public_key())),
     "leaf certificate was not issued to the requested public key"),
    ({}, {"conditions": [_cond("Issued")], "certificateChain": _chain(KEY.public_key())},
     "status.notBefore: Required value: must be present and consistent with the issued certificate; "
     "status.notAfter: Required value: must be present and consistent with the issued certificate; "
     "status.beginRefreshAt: Required value: must be present and in the range [notbefore+10min, notafter-10min]"),
    ({}, _issued(_chain(KEY.public_key()), refresh_minutes=5),
     "must be at least 10 minutes after status.notBefore"),
    ({}, _issued(_chain(KEY.public_key(), hours=30), hours=30),
     "status.certificateChain: Invalid value: 108000000000000: leaf certificate lifetime must be <= "
     "spec.maxExpirationSeconds (86400)"),
    ({}, _issued(_chain(KEY.public_key())), ""),
])
def test_status_rules(old_status: dict[str, Any], status: dict[str, Any], expected: str) -> None:
    old = podcertificates.default_request(_pcr("ok"))
    old["status"] = old_status
    new = {**old, "status": status}
    if not expected:
        podcertificates.validate_status(new, old, NOW)
        return
    with pytest.raises(ValidationError) as err:
        podcertificates.validate_status(new, old, NOW)
    several = getattr(err.value, "errors", None) or [err.value]
    assert expected in "; ".join(f"{e.path}: {e.detail}" for e in several)


def test_issued_not_before_must_be_near_now() -> None:
    old = podcertificates.default_request(_pcr("ok"))
    new = {**old, "status": _issued(_chain(KEY.public_key()))}
    with pytest.raises(ValidationError) as err:
        podcertificates.validate_status(new, old, NOW + dt.timedelta(minutes=6))
    assert "must be set to within 5 minutes of kube-apiserver's current time" in str(err.value)


def test_quote_escapes_control_characters_as_go() -> None:
    from nodeagent.store.validation import quote

    assert quote("a\nb\t\x01") == '"a\\nb\\t\\x01"'
