"""Admission for certificates.k8s.io/v1 PodCertificateRequest as kube-apiserver v1.37.2 does it
(pkg/registry/certificates/podcertificaterequest and pkg/apis/certificates/validation:
ValidatePodCertificateRequestCreate, ...Update, ...StatusUpdate), with upstream's field paths and texts.

Why: the kubelet creates these requests for podCertificate projected volumes and a signer
controller answers them through /status; a request the real server refuses (a bad signer name, a
stub CSR whose signature does not verify, a 1-week maxExpirationSeconds for a kubernetes.io
signer) or a status it refuses (an Issued chain for another key, a NotBefore far from now) must be
refused here with the same 422, or a driver tested against nodeagent breaks on a real cluster.
v1 has no pkixPublicKey/proofOfPossession fields (v1beta1's deprecated pair), so only
stubPKCS10Request can satisfy the create's "exactly one of" rule. Crypto parsing uses the
`cryptography` package, whose parse errors are not Go's: every answer here is one of upstream's
fixed texts, not the parser's. Not checked (intended, written down): the status strategy's
"sign" permission check on the signer name (the store's hooks and the strategy do not see the
requesting user). Pure: no I/O; the current time is passed in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parseaddr
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.certificates import _bytes, _check_signer, _pem_blocks
from nodeagent.objects.common import Errors
from nodeagent.store import validation as meta

JSON = dict[str, Any]

DEFAULT_MAX_EXPIRATION = 86400
MIN_MAX_EXPIRATION = 3600
KUBERNETES_MAX_MAX_EXPIRATION = 86400
MAX_MAX_EXPIRATION = 91 * 86400
MAX_STUB_SIZE = 10 * 1024
MAX_CHAIN_SIZE = 100 * 1024
TERMINAL = ("Issued", "Denied", "Failed")
ANNOTATIONS_MAX = 256 * 1024
_REASON_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_REASON_MSG = ("a condition reason must start with alphabetic character, optionally followed by a string of "
               "alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
               "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex "
               "used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')")
_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
STUB = "spec.stubPKCS10Request"
CHAIN = "status.certificateChain"


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def is_kubernetes_signer(signer: str) -> bool:
    """IsKubernetesSignerName: the kubernetes.io domain or one under it."""
    host = signer.partition("/")[0]
    return host == "kubernetes.io" or host.endswith(".kubernetes.io")


def _subdomain_messages(value: str) -> list[str]:
    """IsDNS1123Subdomain's messages (both when both apply, as upstream lists them)."""
    out = []
    if len(value) > meta.DNS1123_SUBDOMAIN_MAX:
        out.append(f"must be no more than {meta.DNS1123_SUBDOMAIN_MAX} characters")
    if not _SUBDOMAIN_RE.match(value):
        out.append(meta.SUBDOMAIN_MSG)
    return out


def _check_uid(errs: Errors, path: str, value: str) -> None:
    if not value:
        errs.append(meta.invalid(path, value, "must not be empty"))
    if len(value) > 128:
        errs.append(ValidationError(path, "Too long: may not be more than 128 bytes"))


def _check_user_annotations(errs: Errors, path: str, annotations: Mapping[str, Any]) -> None:
    """ValidateUserAnnotations: every key a domain-prefixed label key (lowercased), the total size bounded."""
    for key in annotations:
        low = str(key).lower()
        if not low:
            errs.append(meta.required(path))
            continue
        try:
            meta.check_qualified_name(path, low)
        except ValidationError as err:
            errs.append(err)
            continue
        if len(low.split("/")) != 2:
            errs.append(meta.invalid(path, low, 'must be a domain-prefixed key (such as "acme.io/foo")'))
    if sum(len(str(k)) + len(_str(v)) for k, v in annotations.items()) > ANNOTATIONS_MAX:
        errs.append(ValidationError(path, f"Too long: may not be more than {ANNOTATIONS_MAX} bytes"))


def default_request(obj: JSON) -> JSON:
    """The v1 defaults: maxExpirationSeconds 86400 when unset."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("maxExpirationSeconds") is None:
        spec["maxExpirationSeconds"] = DEFAULT_MAX_EXPIRATION
    return obj


def validate_create(obj: JSON) -> JSON:
    """ValidatePodCertificateRequestCreate (the `default` hook of a create: defaults, then every
    spec error listed; the store lists the metadata's first)."""
    default_request(obj)
    spec = _spec(obj)
    errs = Errors()
    signer = _str(spec.get("signerName"))
    _check_signer(errs, "spec.signerName", signer)
    annotations = spec.get("unverifiedUserAnnotations")
    if isinstance(annotations, Mapping):
        _check_user_annotations(errs, "spec.unverifiedUserAnnotations", annotations)
    for attr, uid in (("podName", "podUID"), ("serviceAccountName", "serviceAccountUID"), ("nodeName", "nodeUID")):
        name = _str(spec.get(attr))
        for msg in _subdomain_messages(name):
            errs.append(meta.invalid(f"spec.{attr}", name, msg))
        _check_uid(errs, f"spec.{uid}", _str(spec.get(uid)))
    expiration = spec.get("maxExpirationSeconds")
    if not isinstance(expiration, int) or isinstance(expiration, bool):
        errs.append(meta.required("spec.maxExpirationSeconds", "must be set"))
        errs.raise_all()
        return obj
    top = KUBERNETES_MAX_MAX_EXPIRATION if is_kubernetes_signer(signer) else MAX_MAX_EXPIRATION
    if not MIN_MAX_EXPIRATION <= expiration <= top:
        errs.append(meta.invalid("spec.maxExpirationSeconds", expiration,
                                 f"must be in the range [{MIN_MAX_EXPIRATION}, {top}]"))
    stub = _bytes(spec.get("stubPKCS10Request"))
    if not stub:
        errs.append(ValidationError("spec", "Invalid value: exactly one of (stubPKCS10Request) or "
                                            "(pkixPublicKey, proofOfPossession) must be set"))
    else:
        problem = _check_stub(stub)
        if problem is not None:
            errs.append(problem)
    errs.raise_all()
    return obj


def _check_stub(stub: bytes) -> ValidationError | None:
    """validateStubPKCS10Request: size, a parsing CSR, a supported key, a verifying signature."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if len(stub) > MAX_STUB_SIZE:
        return ValidationError(STUB, f"Too long: may not be more than {MAX_STUB_SIZE} bytes")
    try:
        request = x509.load_der_x509_csr(stub)
        key = request.public_key()
    except (ValueError, TypeError):
        return ValidationError(STUB, "Invalid value: must be a valid PKCS#10 CSR")
    if isinstance(key, ec.EllipticCurvePublicKey):
        if key.curve.name not in ("secp256r1", "secp384r1", "secp521r1"):
            return meta.invalid(STUB, f"curve {_go_curve(key.curve.name)}",
                                "elliptic public keys must use curve P256, P384, or P521")
    elif isinstance(key, rsa.RSAPublicKey):
        bits = (key.key_size + 7) // 8 * 8
        if bits not in (3072, 4096):
            return meta.invalid(STUB, f"{bits}-bit modulus", "RSA keys must have modulus size 3072 or 4096")
    elif not isinstance(key, ed25519.Ed25519PublicKey):
        return ValidationError(STUB, "Invalid value: unknown public key type; supported types are Ed25519, ECDSA, "
                                     "and RSA")
    if not request.is_signature_valid:
        return ValidationError(STUB, "Invalid value: invalid signature")
    return None


def _go_curve(name: str) -> str:
    return {"secp224r1": "P-224"}.get(name, name)


def _go_spec(spec: Mapping[str, Any]) -> str:
    """The internal PodCertificateRequestSpec as field.Invalid prints it (encoding/json, Go field names)."""
    def uid(key: str) -> str:
        return _str(spec.get(key))

    annotations = spec.get("unverifiedUserAnnotations")
    return json.dumps({
        "SignerName": uid("signerName"), "PodName": uid("podName"), "PodUID": uid("podUID"),
        "ServiceAccountName": uid("serviceAccountName"), "ServiceAccountUID": uid("serviceAccountUID"),
        "NodeName": uid("nodeName"), "NodeUID": uid("nodeUID"),
        "MaxExpirationSeconds": spec.get("maxExpirationSeconds"),
        "PKIXPublicKey": None, "ProofOfPossession": None,
        "StubPKCS10Request": spec.get("stubPKCS10Request") or None,
        "UnverifiedUserAnnotations": dict(sorted(annotations.items())) if isinstance(annotations, Mapping) else None,
    }, separators=(",", ":"))


def validate_update(new: JSON, old: JSON) -> None:
    """ValidatePodCertificateRequestUpdate: every spec field is immutable (the metadata's update
    rules are the store's generic check)."""
    if _spec(new) != _spec(old):
        raise ValidationError("spec", f"Invalid value: {_go_spec(_spec(new))}: field is immutable")


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks: the create's checks in
    `default` (an update's `default_update` only defaults), the spec's immutability on updates."""
    def on_update(obj: JSON, old: JSON) -> JSON:
        return default_request(obj)

    return {"PodCertificateRequest": {"default": validate_create, "default_update": on_update,
                                      "validate_update": validate_update}}


# --- the status subresource ----------------------------------------------------------------------


def _conditions(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = status.get("conditions")
    return [c if isinstance(c, Mapping) else {} for c in raw] if isinstance(raw, list) else []


def _has(obj: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in _conditions(_status(obj)))


def _check_condition(errs: Errors, cond: Mapping[str, Any], path: str) -> None:
    """metav1 ValidateCondition."""
    kind = _str(cond.get("type"))
    if not kind:
        errs.append(meta.required(f"{path}.type", "is required"))
    else:
        errs.check(meta.check_qualified_name, f"{path}.type", kind)
    status = _str(cond.get("status"))
    if not status:
        errs.append(meta.required(f"{path}.status"))
    elif status not in ("False", "True", "Unknown"):
        errs.append(meta.not_supported(f"{path}.status", status, ("False", "True", "Unknown")))
    generation = cond.get("observedGeneration")
    if isinstance(generation, int) and generation < 0:
        errs.append(meta.invalid(f"{path}.observedGeneration", generation, "must be greater than or equal to zero"))
    if not cond.get("lastTransitionTime"):
        errs.append(meta.required(f"{path}.lastTransitionTime"))
    reason = _str(cond.get("reason"))
    if not reason:
        errs.append(meta.required(f"{path}.reason"))
    else:
        if not _REASON_RE.match(reason):
            errs.append(meta.invalid(f"{path}.reason", reason, _REASON_MSG))
        if len(reason) > 1024:
            errs.append(ValidationError(f"{path}.reason", "Too long: may not be more than 1024 bytes"))
    if len(_str(cond.get("message"))) > 32 * 1024:
        errs.append(ValidationError(f"{path}.message", f"Too long: may not be more than {32 * 1024} bytes"))


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def validate_status(new: Mapping[str, Any], old: Mapping[str, Any], now: datetime) -> None:
    """ValidatePodCertificateRequestStatusUpdate: at most one terminal condition, always True; the
    conditions as metav1 checks them; a terminal status frozen; a Denied/Failed one carries only
    conditions; an Issued one a chain whose leaf was issued to the requested key, with its times."""
    errs = Errors()
    known = 0
    conditions = _conditions(_status(new))
    for i, cond in enumerate(conditions):
        kind = _str(cond.get("type"))
        # upstream names these with a "[i]" path element of its own: status.conditions.[0].type
        path = f"status.conditions.[{i}]"
        if kind in TERMINAL:
            known += 1
            if known > 1:
                errs.append(meta.invalid(f"{path}.type", kind,
                                         'There may be at most one condition with type "Issued", "Denied", or '
                                         '"Failed"'))
            if cond.get("status") != "True":
                errs.append(meta.not_supported(f"{path}.status", _str(cond.get("status")), ("True",)))
        else:
            errs.append(meta.not_supported(f"{path}.type", kind, TERMINAL, ordered=True))
    seen: set[str] = set()
    for i, cond in enumerate(conditions):
        kind = _str(cond.get("type"))
        if kind in seen:
            errs.append(meta.duplicate(f"status.conditions[{i}]", kind))
        seen.add(kind)
        _check_condition(errs, cond, f"status.conditions[{i}]")
    errs.raise_all()
    if any(_has(old, kind) for kind in TERMINAL):
        if _status(new) != _status(old):
            raise ValidationError("status", "Invalid value: immutable after PodCertificateRequest is issued, "
                                            "denied, or failed")
        return
    if _has(new, "Denied") or _has(new, "Failed"):
        if {k: v for k, v in _status(new).items() if v not in (None, "", [])} != (
                {"conditions": conditions} if conditions else {}):
            raise ValidationError("status", "Invalid value: non-condition status fields must be empty when "
                                            "denying or failing the PodCertificateRequest")
        return
    if _has(new, "Issued"):
        _check_issued(new, old, now)
        return
    if _status(new) != _status(old):
        raise ValidationError("status", 'Invalid value: status is immutable unless transitioning to "Issued", '
                                        '"Denied", or "Failed"')


def _check_issued(new: Mapping[str, Any], old: Mapping[str, Any], now: datetime) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    status = _status(new)
    chain = _str(status.get("certificateChain"))
    if len(chain.encode()) > MAX_CHAIN_SIZE:
        raise ValidationError(CHAIN, f"Too long: may not be more than {MAX_CHAIN_SIZE} bytes")
    blocks = _pem_blocks(chain.encode())
    if not blocks:
        raise meta.invalid(CHAIN, chain, "issued certificate chain must contain at least one certificate")
    if blocks[0][0] != "CERTIFICATE":
        raise meta.invalid(CHAIN, chain, "issued certificate chain must consist entirely of CERTIFICATE PEM blocks")
    try:
        leaf = x509.load_der_x509_certificate(blocks[0][1])
    except ValueError:
        raise meta.invalid(CHAIN, chain, "leaf certificate does not parse as valid X.509") from None
    errs = Errors()
    _check_names(errs, leaf)
    errs.raise_all()
    try:
        wanted = x509.load_der_x509_csr(_bytes(_spec(old).get("stubPKCS10Request"))).public_key()
    except (ValueError, TypeError):
        raise ValidationError(STUB, "Invalid value: must be a valid PKCS#10 CSR") from None
    der = serialization.Encoding.DER
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if wanted.public_bytes(der, spki) != leaf.public_key().public_bytes(der, spki):
        raise meta.invalid(CHAIN, chain, "leaf certificate was not issued to the requested public key")
    before, after, refresh = (_time(status.get(k)) for k in ("notBefore", "notAfter", "beginRefreshAt"))
    if before is None:
        errs.append(meta.required("status.notBefore", "must be present and consistent with the issued certificate"))
    if after is None:
        errs.append(meta.required("status.notAfter", "must be present and consistent with the issued certificate"))
    if refresh is None:
        errs.append(meta.required("status.beginRefreshAt",
                                  "must be present and in the range [notbefore+10min, notafter-10min]"))
    errs.raise_all()
    assert before is not None and after is not None and refresh is not None
    leaf_before, leaf_after = leaf.not_valid_before_utc, leaf.not_valid_after_utc
    if before != leaf_before:
        raise meta.invalid("status.notBefore", status["notBefore"],
                           "must be set to the NotBefore time encoded in the leaf certificate")
    if not now - timedelta(minutes=5) < before < now + timedelta(minutes=5):
        raise meta.invalid("status.notBefore", status["notBefore"],
                           "must be set to within 5 minutes of kube-apiserver's current time")
    if after != leaf_after:
        raise meta.invalid("status.notAfter", status["notAfter"],
                           "must be set to the NotAfter time encoded in the leaf certificate")
    lifetime = leaf_after - leaf_before
    nanos = int(lifetime.total_seconds()) * 10**9
    if lifetime < timedelta(hours=1):
        raise meta.invalid(CHAIN, nanos, "leaf certificate lifetime must be >= 1 hour")
    limit = _spec(new).get("maxExpirationSeconds")
    if isinstance(limit, int) and lifetime > timedelta(seconds=limit):
        raise meta.invalid(CHAIN, nanos, f"leaf certificate lifetime must be <= spec.maxExpirationSeconds ({limit})")
    if refresh < before + timedelta(minutes=10):
        raise meta.invalid("status.beginRefreshAt", status["beginRefreshAt"],
                           "must be at least 10 minutes after status.notBefore")
    if refresh > after - timedelta(minutes=10):
        raise meta.invalid("status.beginRefreshAt", status["beginRefreshAt"],
                           "must be at least 10 minutes before status.notAfter")
    for kind, body, _ in blocks[1:]:
        if kind != "CERTIFICATE":
            # upstream's text has this typo
            raise meta.invalid(CHAIN, chain, "issued certificate chain must consist entirely of CERTFICATE PEM blocks")
        try:
            x509.load_der_x509_certificate(body)
        except ValueError:
            raise meta.invalid(CHAIN, chain, "intermediate certificate does not parse as valid X.509") from None


def _check_names(errs: Errors, leaf: Any) -> None:
    """The leaf's DNS names and email addresses as upstream screens them."""
    from cryptography import x509

    try:
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return
    for dns in names.get_values_for_type(x509.DNSName):
        if dns == "":
            errs.append(meta.invalid(CHAIN, dns, "leaf certificate should not contain empty DNSName"))
        if ".." in dns:
            errs.append(meta.invalid(CHAIN, dns, "leaf certificate's DNSName should not contain '..'"))
        if dns.startswith(".") or dns.endswith("."):
            errs.append(meta.invalid(CHAIN, dns, "leaf certificate's DNSName should not start or end with '.'"))
    for email in names.get_values_for_type(x509.RFC822Name):
        if "@" not in parseaddr(email)[1]:
            errs.append(meta.invalid(CHAIN, email, "leaf certificate should not contain invalid EmailAddress"))


def at(seconds: float) -> datetime:
    """A clock's wall time (seconds since the epoch) as validate_status takes it."""
    return datetime.fromtimestamp(seconds, UTC)
