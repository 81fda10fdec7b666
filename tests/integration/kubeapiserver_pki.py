"""The credentials a test kube-apiserver needs, made the way kubeadm lays them out, with `cryptography`.

A real kube-apiserver authenticates clients by certificate (--client-ca-file): the user is the
certificate's CommonName and the groups its Organizations, so `admin` in `system:masters` is the
cluster admin and `system:node:<name>` in `system:nodes` is a kubelet, which the Node authorizer
and the NodeRestriction admission plugin then limit to its own Node, Lease, pods and
ResourceSlices. The service-account signing key is an EC P-256 key (tokens signed ES256), which
--service-account-key-file / --service-account-signing-key-file accept as PEM.

Everything is made fresh per fixture in its temp dir: nothing here is reused across runs, so
unlike nodeagent/apiserver/certs.py there is no renewal logic.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# The first address of --service-cluster-ip-range: the `kubernetes` Service's ClusterIP, which pods
# (and in-cluster clients) use, so the serving certificate names it as kubeadm's does.
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"
SERVING_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local")
SERVING_IPS = ("127.0.0.1", SERVICE_IP)
BACKDATE = dt.timedelta(hours=1)  # as client-go's self-signed certificates: absorbs clock skew
VALIDITY = dt.timedelta(days=2)  # a test cluster lives for one session

Key = ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Pki:
    """The files of one test cluster's PKI (all PEM) and the CA, to issue client certificates later."""

    directory: Path
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    sa_key: Path
    sa_pub: Path
    ca: tuple[x509.Certificate, Key]

    def client(self, user: str, groups: Sequence[str] = ()) -> tuple[bytes, bytes]:
        """A client certificate and key (PEM) for `user` in `groups`, signed by the cluster CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        subject.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
        cert = _issue(self.ca, x509.Name(subject), key, ExtendedKeyUsageOID.CLIENT_AUTH, sans=None)
        return _cert_pem(cert), _key_pem(key)


def make_pki(directory: Path) -> Pki:
    """A CA, the serving certificate for loopback and the in-cluster names, and the service-account keys."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = dt.datetime.now(dt.UTC)
    ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE).not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca = (ca_cert, ca_key)
    serving_key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in SERVING_NAMES]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVING_IPS]
    serving = _issue(ca, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]), serving_key,
                     ExtendedKeyUsageOID.SERVER_AUTH, sans=sans)
    sa_key = ec.generate_private_key(ec.SECP256R1())
    pki = Pki(
        directory=directory,
        ca_cert=directory / "ca.crt",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
        ca=ca,
    )
    _write(pki.ca_cert, _cert_pem(ca_cert))
    _write(pki.serving_cert, _cert_pem(serving))
    _write(pki.serving_key, _key_pem(serving_key))
    _write(pki.sa_key, _key_pem(sa_key))
    _write(pki.sa_pub, sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                         serialization.PublicFormat.SubjectPublicKeyInfo))
    return pki


def kubeconfig(server: str, pki: Pki, user: str, groups: Sequence[str] = (),
               namespace: str = "default") -> dict[str, Any]:
    """A kubeconfig (clientcmd v1 Config) for `server` authenticating as `user` by client certificate."""
    cert, key = pki.client(user, groups)
    b64 = lambda data: base64.b64encode(data).decode("ascii")  # noqa: E731
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kube-apiserver-test", "cluster": {
            "server": server, "certificate-authority-data": b64(_cert_pem(pki.ca[0]))}}],
        "users": [{"name": user, "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}],
        "contexts": [{"name": user, "context": {"cluster": "kube-apiserver-test", "user": user,
                                                "namespace": namespace}}],
        "current-context": user,
        "preferences": {},
    }


def write_kubeconfig(path: Path, config: dict[str, Any]) -> Path:
    _write(path, yaml.safe_dump(config, sort_keys=False).encode())
    return path


def _issue(ca: tuple[x509.Certificate, Key], subject: x509.Name, key: Key, usage: x509.ObjectIdentifier,
           sans: list[x509.GeneralName] | None) -> x509.Certificate:
    ca_cert, ca_key = ca
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE).not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=False, key_cert_sign=cert_sign, crl_sign=cert_sign, encipher_only=False, decipher_only=False,
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: Key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)
