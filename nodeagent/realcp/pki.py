"""The real control plane's PKI on disk: made once, reused across restarts, re-issued only where unfit.

The CA and the service-account key are kept for good (kubeconfigs already handed out and
service-account tokens already issued stay valid); a leaf certificate is issued again by the same CA
only when it is missing, damaged, not the CA's, about to expire, or no longer what the plan says (its
subject, usages or SANs changed, e.g. a new bind address). Keys are EC P-256 (kube-apiserver takes EC
service-account keys, tokens are then signed ES256), written owner-only through a temporary file and
os.replace so a crash leaves no half-written key. As client-go's self-signed certificates do, validity
starts an hour early to absorb clock skew.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from nodeagent.realcp.plan import CA, CertSpec, Layout

logger = logging.getLogger(__name__)

CA_DAYS = 3650
LEAF_DAYS = 365  # kubeadm's leaf certificates live a year too
RENEW_BEFORE = dt.timedelta(days=30)
BACKDATE = dt.timedelta(hours=1)
CA_NAME = "nodeagent-kubernetes-ca"

Key = ec.EllipticCurvePrivateKey


def ensure(layout: Layout, specs: Sequence[CertSpec], now: dt.datetime) -> None:
    """Make or keep the CA, the service-account key pair and every certificate of `specs` under layout.pki."""
    layout.pki.mkdir(mode=0o700, parents=True, exist_ok=True)
    layout.pki.chmod(0o700)
    ca = _load_ca(layout, now)
    renewed_ca = ca is None
    if ca is None:
        logger.info("creating kubernetes ca dir=%s", layout.pki)
        ca = _new_ca(now)
        _write(layout.key(CA), _key_pem(ca[1]))
        _write(layout.cert(CA), _cert_pem(ca[0]))
    _ensure_sa_key(layout)
    for spec in specs:
        if renewed_ca or not fits(layout, spec, ca[0], now):
            logger.info("issuing kubernetes certificate name=%s cn=%s", spec.name, spec.common_name)
            cert, key = issue(ca, spec, now)
            _write(layout.key(spec.name), _key_pem(key))  # the key first: a crash between leaves a mismatch, re-issued
            _write(layout.cert(spec.name), _cert_pem(cert))


def fits(layout: Layout, spec: CertSpec, ca: x509.Certificate, now: dt.datetime) -> bool:
    """Whether the certificate on disk is sound, the CA's, not about to expire, and exactly what `spec` asks."""
    try:
        cert = x509.load_pem_x509_certificate(layout.cert(spec.name).read_bytes())
        key = serialization.load_pem_private_key(layout.key(spec.name).read_bytes(), password=None)
        cert.verify_directly_issued_by(ca)
    except (FileNotFoundError, ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False
    if key.public_key() != cert.public_key() or cert.not_valid_after_utc - now < RENEW_BEFORE:
        return False
    return describe(cert) == describe_spec(spec)


def describe(cert: x509.Certificate) -> tuple[object, ...]:
    """What a certificate says, in the shape describe_spec gives a spec (for comparison and for tests)."""
    cns = tuple(a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME))
    orgs = tuple(sorted(str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)))
    try:
        usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        server = ExtendedKeyUsageOID.SERVER_AUTH in usages
        client = ExtendedKeyUsageOID.CLIENT_AUTH in usages
    except x509.ExtensionNotFound:
        server = client = False
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns = tuple(sorted(sans.get_values_for_type(x509.DNSName)))
        ips = tuple(sorted(str(ip) for ip in sans.get_values_for_type(x509.IPAddress)))
    except x509.ExtensionNotFound:
        dns, ips = (), ()
    return cns, orgs, server, client, dns, ips


def describe_spec(spec: CertSpec) -> tuple[object, ...]:
    return ((spec.common_name,), tuple(sorted(spec.organizations)), spec.server, spec.client,
            tuple(sorted(spec.dns_names)), tuple(sorted(str(ipaddress.ip_address(i)) for i in spec.ip_addresses)))


def issue(ca: tuple[x509.Certificate, Key], spec: CertSpec, now: dt.datetime) -> tuple[x509.Certificate, Key]:
    """A certificate for `spec` signed by the CA, and its new key."""
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in spec.organizations),
                         x509.NameAttribute(NameOID.COMMON_NAME, spec.common_name)])
    usages = [u for u, on in ((ExtendedKeyUsageOID.SERVER_AUTH, spec.server),
                              (ExtendedKeyUsageOID.CLIENT_AUTH, spec.client)) if on]
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE).not_valid_after(now + dt.timedelta(days=LEAF_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
    )
    if spec.dns_names or spec.ip_addresses:
        sans: list[x509.GeneralName] = [x509.DNSName(n) for n in spec.dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in spec.ip_addresses]
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def pem(layout: Layout, name: str) -> tuple[bytes, bytes]:
    """A certificate and its key as PEM bytes (for kubeconfigs, which inline them)."""
    return layout.cert(name).read_bytes(), layout.key(name).read_bytes()


def write_kubeconfig(path: Path, config: dict[str, object]) -> Path:
    """Write a kubeconfig owner-only (it holds a private key), replacing any file there at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, yaml.safe_dump(config, sort_keys=False).encode())
    return path


def _load_ca(layout: Layout, now: dt.datetime) -> tuple[x509.Certificate, Key] | None:
    try:
        cert = x509.load_pem_x509_certificate(layout.cert(CA).read_bytes())
        key = serialization.load_pem_private_key(layout.key(CA).read_bytes(), password=None)
    except (FileNotFoundError, ValueError, TypeError, UnsupportedAlgorithm):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        return None
    if cert.not_valid_after_utc - now < RENEW_BEFORE:
        logger.warning("kubernetes ca expires soon, making a new one (kubeconfigs must be fetched again) dir=%s",
                       layout.pki)
        return None
    return cert, key


def _new_ca(now: dt.datetime) -> tuple[x509.Certificate, Key]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE).not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _ensure_sa_key(layout: Layout) -> None:
    """The service-account signing key and its public half; kept while sound (tokens signed with it stay valid)."""
    try:
        key = serialization.load_pem_private_key(layout.sa_key.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("not an EC key")
    except (FileNotFoundError, ValueError, TypeError, UnsupportedAlgorithm):
        logger.info("creating service-account key dir=%s", layout.pki)
        key = ec.generate_private_key(ec.SECP256R1())
        _write(layout.sa_key, _key_pem(key))
    _write(layout.sa_pub, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo))


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=not cert_sign,
                         data_encipherment=False, key_agreement=False, key_cert_sign=cert_sign, crl_sign=False,
                         encipher_only=False, decipher_only=False)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: Key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
