"""Admission for certificates.k8s.io/v1 CertificateSigningRequest: the checks of
pkg/apis/certificates/validation (ValidateCertificateSigningRequestCreate and ...Update) with their
field paths and wording, as store hooks.

Why: kube-controller-manager's csrapproving and csrsigning controllers act on these objects and
`kubectl certificate approve` writes their conditions, so a request the real kube-apiserver refuses
(no usages, a malformed signerName, a PEM that is no certificate request, Approved beside Denied)
must be refused here with the same 422. Checked: the request's PEM, parsed and its signature
verified (a parse or signature failure's text is the cryptography package's, not Go's), usages,
signerName, expirationSeconds, conditions, status.certificate's PEM, and on updates that no
Approved/Denied/Failed condition is removed and a certificate once set is not changed. Legacy
leniencies of an update (a stored object that already breaks a rule may keep breaking it) follow
upstream's getValidationOptions. Not checked (intended, written down): the status subresource's
refusal to add or change Approved/Denied conditions (only `approval` may), since the store's hooks
do not see which subresource writes. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.objects.storage import _list, _object, _string
from nodeagent.store import validation as meta

JSON = dict[str, Any]

USAGES = ("any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
          "decipher only", "digital signature", "email protection", "encipher only", "ipsec end system",
          "ipsec tunnel", "ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc",
          "ocsp signing", "s/mime", "server auth", "signing", "timestamping")
LEGACY_SIGNER = "kubernetes.io/legacy-unknown"
TRUE_ONLY = ("Approved", "Denied", "Failed")


def _bytes(value: Any) -> bytes:
    if not isinstance(value, str) or not value:
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return b""


def _pem_blocks(data: bytes) -> list[tuple[str, bytes, bool]]:
    """(type, DER, has headers) of each PEM block, as encoding/pem decodes them in turn."""
    out: list[tuple[str, bytes, bool]] = []
    text = data.decode("latin-1")
    while True:
        start = text.find("-----BEGIN ")
        if start < 0:
            return out
        head_end = text.find("-----", start + 11)
        if head_end < 0:
            return out
        kind = text[start + 11:head_end]
        end_marker = f"-----END {kind}-----"
        end = text.find(end_marker, head_end)
        if end < 0:
            return out
        body = text[head_end + 5:end].strip("\r\n")
        lines = body.splitlines()
        headers = any(":" in line for line in lines)
        payload = "".join(line for line in lines if ":" not in line)
        try:
            der = base64.b64decode(payload)
        except (binascii.Error, ValueError):
            return out
        out.append((kind, der, headers))
        text = text[end + len(end_marker):]


def check_request(data: bytes) -> str:
    """validateCSR: "" when the PEM holds a certificate request whose signature verifies, else the error."""
    blocks = _pem_blocks(data)
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    from cryptography import x509

    try:
        request = x509.load_der_x509_csr(blocks[0][1])
    except ValueError as err:
        return f"x509: {err}"
    if not request.is_signature_valid:
        return "x509: signature verification failure"
    return ""


def check_certificate(data: bytes) -> str:
    """validateCertificate: "" for none or CERTIFICATE blocks only, each parsing."""
    if not data:
        return ""
    blocks = _pem_blocks(data)
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    from cryptography import x509

    for kind, der, headers in blocks:
        if kind != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{kind}"'
        if headers:
            return "no PEM block headers are permitted"
        try:
            x509.load_der_x509_certificate(der)
        except ValueError as err:
            return f"x509: {err}"
    return ""


def _check_signer(errs: Errors, path: str, signer: str) -> None:
    """ValidateSignerName."""
    if not signer:
        errs.append(meta.required(path))
        return
    segments = signer.split("/")
    if len(segments) != 2:
        errs.append(meta.invalid(path, signer, "must be a fully qualified domain and path of the form "
                                 "'example.com/signer-name'"))
        return
    domain, rest = segments
    if len(domain) > meta.DNS1123_SUBDOMAIN_MAX:
        errs.append(ValidationError(path, f"Too long: may not be more than {meta.DNS1123_SUBDOMAIN_MAX} bytes"))
    labels = domain.split(".")
    for label in labels:
        try:
            meta.check_dns_label(path, label)
        except ValidationError as err:
            errs.append(meta.invalid(path, domain, f"validating label {meta.quote(label)}: {_detail(err)}"))
            break
    if len(labels) < 2:
        errs.append(meta.invalid(path, domain, "should be a domain with at least two segments separated by dots"))
    for label in rest.split("."):
        try:
            meta.check_dns_subdomain(path, label)
        except ValidationError as err:
            errs.append(meta.invalid(path, rest, f"validating label {meta.quote(label)}: {_detail(err)}"))
            break
    limit = meta.DNS1123_SUBDOMAIN_MAX + meta.DNS1123_SUBDOMAIN_MAX + meta.DNS1123_LABEL_MAX + 2
    if len(signer) > limit:
        errs.append(ValidationError(path, f"Too long: may not be more than {limit} bytes"))


def _detail(err: Exception) -> str:
    text = str(getattr(err, "detail", err))
    if text.startswith("Invalid value: "):
        rest = text[len("Invalid value: "):]
        if rest.startswith('"'):
            i = 1
            while i < len(rest) and not (rest[i] == '"' and rest[i - 1] != "\\"):
                i += 1
            return rest[i + 3:]
    return text


def _conditions(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [_object(c, f"status.conditions[{i}]") for i, c in
            enumerate(_list(status.get("conditions"), "status.conditions"))]


def _validate(obj: Mapping[str, Any], old: Mapping[str, Any] | None, errs: Errors) -> None:
    """validateCertificateSigningRequest with getValidationOptions(new, old)."""
    spec = _object(obj.get("spec"), "spec")
    old_spec = _object((old or {}).get("spec"), "spec")
    old_status = _object((old or {}).get("status"), "status")
    request_text = _string(spec.get("request"), "spec.request")
    problem = check_request(_bytes(request_text))
    if problem:
        errs.append(meta.invalid("spec.request", request_text, problem))
    usages = [str(u) for u in _list(spec.get("usages"), "spec.usages")]
    old_usages = [str(u) for u in _list(old_spec.get("usages"), "spec.usages")]
    if not usages:
        errs.append(meta.required("spec.usages"))
    if not any(u not in USAGES for u in old_usages):
        for i, usage in enumerate(usages):
            if usage not in USAGES:
                errs.append(meta.not_supported(f"spec.usages[{i}]", usage, USAGES))
    if len(set(old_usages)) == len(old_usages):
        seen: set[str] = set()
        for i, usage in enumerate(usages):
            if usage in seen:
                errs.append(meta.duplicate(f"spec.usages[{i}]", usage))
            seen.add(usage)
    signer = _string(spec.get("signerName"), "spec.signerName")
    if signer == LEGACY_SIGNER and old_spec.get("signerName") != LEGACY_SIGNER:
        errs.append(meta.invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API "
                                 "version"))
    else:
        _check_signer(errs, "spec.signerName", signer)
    expiration = spec.get("expirationSeconds")
    if isinstance(expiration, int) and not isinstance(expiration, bool) and expiration < 600:
        errs.append(meta.invalid("spec.expirationSeconds", expiration, "may not specify a duration less than 600 "
                                 "seconds (10 minutes)"))
    status = _object(obj.get("status"), "status")
    _check_conditions(_conditions(status), _conditions(old_status), errs)
    cert = _bytes(status.get("certificate"))
    old_cert = _bytes(old_status.get("certificate"))
    arbitrary = old is not None and cert == old_cert and bool(check_certificate(old_cert))
    if not arbitrary:
        problem = check_certificate(cert)
        if problem:
            errs.append(meta.invalid("status.certificate", "<certificate data>", problem))


def _check_conditions(conditions: Sequence[Mapping[str, Any]], old: Sequence[Mapping[str, Any]],
                      errs: Errors) -> None:
    old_types = [str(c.get("type") or "") for c in old]
    allow_empty = "" in old_types
    allow_dupes = len(set(old_types)) != len(old_types)
    allow_both = "Approved" in old_types and "Denied" in old_types
    seen: set[str] = set()
    approved = denied = False
    for i, cond in enumerate(conditions):
        kind, status = str(cond.get("type") or ""), str(cond.get("status") or "")
        path = f"status.conditions[{i}]"
        if not allow_empty and not kind:
            errs.append(meta.required(f"{path}.type"))
        allowed = ("True",) if kind in TRUE_ONLY else ("False", "True", "Unknown")
        if not status:
            errs.append(meta.required(f"{path}.status"))
        elif status not in allowed:
            errs.append(meta.not_supported(f"{path}.status", status, allowed))
        approved = approved or kind == "Approved"
        denied = denied or kind == "Denied"
        if not allow_dupes:
            if kind in seen:
                errs.append(meta.duplicate(f"{path}.type", kind))
            seen.add(kind)
    if approved and denied and not allow_both:
        # v1.37's declarative zeroOrOneOf answers (once, after the other errors) for the hand-written
        # "Approved and Denied conditions are mutually exclusive", as the real kube-apiserver shows
        members = '{conditions[{"type": "Approved"}], conditions[{"type": "Denied"}]}'
        errs.append(meta.invalid("status.conditions", members, 'must specify at most one of: `conditions[{"type": '
                                 '"Approved"}]`, `conditions[{"type": "Denied"}]`'))


def validate_csr(obj: Mapping[str, Any]) -> JSON:
    """The `default` hook (every write): the checks of a create (an update's are validate_update's)."""
    out = dict(obj)
    if (obj.get("metadata") or {}).get("resourceVersion"):
        return out  # an update: validate_update checks it against the stored object
    errs = Errors()
    _validate(out, None, errs)
    errs.raise_all()
    return out


def validate_csr_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> None:
    """validateCertificateSigningRequestUpdate: the object's checks (leniencies from `old`), no removed
    Approved/Denied/Failed condition, and a set certificate never changed."""
    errs = Errors()
    _validate(new, old, errs)
    new_types = [str(c.get("type") or "") for c in _conditions(_object(new.get("status"), "status"))]
    old_types = [str(c.get("type") or "") for c in _conditions(_object(old.get("status"), "status"))]
    for kind in TRUE_ONLY:
        if new_types.count(kind) < old_types.count(kind):
            errs.append(meta.forbidden("status.conditions", f'updates may not remove a condition of type "{kind}"'))
    new_cert = _bytes(_object(new.get("status"), "status").get("certificate"))
    old_cert = _bytes(_object(old.get("status"), "status").get("certificate"))
    if new_cert != old_cert and old_cert:
        errs.append(meta.forbidden("status.certificate", "updates may not modify existing certificate content"))
    errs.raise_all()


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {"CertificateSigningRequest": {"default": validate_csr, "validate_update": validate_csr_update}}
