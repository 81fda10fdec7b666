"""The kubelet endpoint's TLS: its serving certificate and the CA its clients' certificates must chain to.

Why: with no tlsCertFile/tlsPrivateKeyFile the kubelet makes itself a self-signed pair
(cmd/kubelet/app/server.go InitializeTLS: a CA "HOST-ca@UNIX" and a certificate "HOST@UNIX" for the
host name, chain in ROOT/pki/kubelet.crt, key in kubelet.key) and reuses it while both files
exist; nodeagent does the same, so clients and kube-apiserver meet the same certificate shape.
Client certificates are asked for and checked against the client CA when one is known (the
TLS layer refuses a certificate that does not chain: a difference from Go's kubelet, which
accepts the connection and answers 401). Files are written whole (temporary file, then rename),
the key owner-only. Intended difference: P-256 keys where client-go's GenerateSelfSignedCertKey
makes RSA 2048 ones: each full virtual node makes its own pair, and a thousand RSA keys cost
minutes of CPU where these cost a second; TLS clients accept either.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

logger = logging.getLogger(__name__)

CERT_FILE, KEY_FILE = "kubelet.crt", "kubelet.key"
VALIDITY = dt.timedelta(days=365)
BACKDATE = dt.timedelta(hours=1)


def ensure_self_signed(pki_dir: Path, hostname: str, clock_now: float) -> tuple[Path, Path]:
    """ROOT/pki/kubelet.crt and kubelet.key: reused when both exist, else made as the kubelet makes them."""
    cert_path, key_path = pki_dir / CERT_FILE, pki_dir / KEY_FILE
    if cert_path.is_file() and key_path.is_file():
        return cert_path, key_path
    pki_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
    now = dt.datetime.fromtimestamp(clock_now, tz=dt.UTC)
    stamp = int(clock_now)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hostname}-ca@{stamp}")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - BACKDATE).not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hostname}@{stamp}")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE).not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    logger.info("creating kubelet serving certificate path=%s", cert_path)
    _write(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()), 0o600)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM),
           0o644)
    return cert_path, key_path


def server_context(cert: Path, key: Path, client_ca: bytes | None) -> ssl.SSLContext:
    """TLS 1.2+ presenting `cert`; a client certificate is asked for and verified against `client_ca`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    if client_ca:
        context.load_verify_locations(cadata=client_ca.decode("ascii", "replace"))
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


def _write(path: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
