"""The API server's credentials: a private CA, its serving certificate, client certificates and tokens.

They live in the state directory and are made once, so a kubeconfig written on the
first start keeps working across restarts: the CA and the token are reused as long
as their files are sound, and only the serving certificate is re-issued (by the same
CA) when it no longer names every address the server is reached by or is about to
expire. Like client-go's self-signed certificates (k8s.io/client-go/util/cert), the
validity starts an hour early to absorb clock skew. Every file is written through a
temporary file and os.replace, readable by the owner only, so a crash never leaves a
half-written key and no other user can read the token.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import logging
import os
import secrets
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from nodeagent.apiserver.authn import serviceaccount, tokens
from nodeagent.apiserver.authn.tokens import TokenRow
from nodeagent.apiserver.authn.user import UserInfo
from nodeagent.errors import ConfigError

logger = logging.getLogger(__name__)

CA_CERT = "ca.crt"
CA_KEY = "ca.key"  # kept so a re-issued serving certificate chains to the CA kubeconfigs already trust
SERVING_CERT = "apiserver.crt"
SERVING_KEY = "apiserver.key"
TOKEN = "token"
SA_KEY = "sa.key"  # the service-account signing key, kubeadm's name (--service-account-signing-key-file)
TOKEN_FILE = "tokens.csv"  # the static token table (kube-apiserver's --token-auth-file format)
ADMIN_USER = "nodeagent-admin"
ADMIN_GROUPS = ("system:masters",)
KUBELET_CLIENT_CERT = "apiserver-kubelet-client.crt"
KUBELET_CLIENT_KEY = "apiserver-kubelet-client.key"
# The identity the API server presents to kubelets (kubeadm's apiserver-kubelet-client). kubeadm puts it in
# kubeadm:cluster-admins, bound to cluster-admin by RBAC; nodeagent serves no RBAC yet, so system:masters.
KUBELET_CLIENT_NAME = "kube-apiserver-kubelet-client"
KUBELET_CLIENT_GROUPS = ("system:masters",)

CA_NAME = "nodeagent-ca"
SERVING_NAME = "nodeagent-apiserver"
CA_DAYS = 3650
SERVING_DAYS = 365
RENEW_BEFORE = dt.timedelta(days=30)
BACKDATE = dt.timedelta(hours=1)
ALWAYS = ("127.0.0.1", "localhost")

Host = ipaddress.IPv4Address | ipaddress.IPv6Address | str
Key = ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Credentials:
    ca_pem: bytes
    cert_path: Path
    key_path: Path
    token: str
    ca_path: Path


def ensure_credentials(directory: Path, *, hosts: Sequence[str], clock_now: float) -> Credentials:
    """Load the credentials kept in `directory`, creating or renewing whatever is missing or unfit."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    now = dt.datetime.fromtimestamp(clock_now, tz=dt.UTC)
    wanted = _san_set([*hosts, *ALWAYS])

    ca = _load_ca(directory, now)
    if ca is None:
        logger.info("creating apiserver ca dir=%s", directory)
        ca = _new_ca(now)
        _write(directory / CA_KEY, _key_pem(ca[1]))
        _write(directory / CA_CERT, ca[0].public_bytes(serialization.Encoding.PEM))
        issue = True
    else:
        issue = not _serving_fit(directory, ca[0], wanted, now)
    if issue:
        logger.info("issuing apiserver serving certificate dir=%s hosts=%s", directory,
                    ",".join(sorted(str(h) for h in wanted)))
        cert, key = _new_serving(ca, wanted, now)
        # The key goes first: a crash between the two leaves a mismatched pair, which the next start re-issues.
        _write(directory / SERVING_KEY, _key_pem(key))
        _write(directory / SERVING_CERT, cert.public_bytes(serialization.Encoding.PEM))

    token_path = directory / TOKEN
    token = _read_text(token_path)
    if not token:
        token = secrets.token_urlsafe(32)
        _write(token_path, token.encode() + b"\n")
    for name in (CA_CERT, CA_KEY, SERVING_CERT, SERVING_KEY, TOKEN):
        # Reused files may come from a copy or a restore with looser modes; the token and keys must stay private.
        (directory / name).chmod(0o600)
    return Credentials(
        ca_pem=ca[0].public_bytes(serialization.Encoding.PEM),
        cert_path=directory / SERVING_CERT,
        key_path=directory / SERVING_KEY,
        token=token,
        ca_path=directory / CA_CERT,
    )


def ensure_client_cert(
    directory: Path, *, cert_name: str, key_name: str, user: str, groups: Sequence[str], clock_now: float
) -> tuple[Path, Path]:
    """A client certificate (CN user, O groups) from the CA in `directory` (ensure_credentials made it),
    reused while sound and not about to expire; (certificate path, key path)."""
    now = dt.datetime.fromtimestamp(clock_now, tz=dt.UTC)
    ca = _load_ca(directory, now)
    if ca is None:
        raise FileNotFoundError(f"{directory}: no CA to issue {cert_name} from")
    cert_path, key_path = directory / cert_name, directory / key_name
    if not _client_fit(cert_path, key_path, ca[0], user, groups, now):
        logger.info("issuing client certificate user=%s path=%s", user, cert_path)
        cert_pem, key_pem = _new_client(ca, user, groups, now, now + dt.timedelta(days=SERVING_DAYS))
        _write(key_path, key_pem)
        _write(cert_path, cert_pem)
    return cert_path, key_path


def issue_client_cert(directory: Path, *, user: str, groups: Sequence[str], clock_now: float,
                      days: float = SERVING_DAYS) -> tuple[bytes, bytes]:
    """A new client certificate (CN user, O groups) from the CA in `directory`: (certificate PEM, key PEM).

    The x509 authenticator takes CN as the user and O as the groups of anyone presenting it, so this is
    how the daemon hands an identity (a node's, a plugin's) to a program without a server-side table."""
    now = dt.datetime.fromtimestamp(clock_now, tz=dt.UTC)
    ca = _load_ca(directory, now)
    if ca is None:
        raise FileNotFoundError(f"{directory}: no CA to issue a client certificate for {user} from")
    return _new_client(ca, user, groups, now, now + dt.timedelta(days=days))


def _new_client(ca: tuple[x509.Certificate, Key], user: str, groups: Sequence[str], now: dt.datetime,
                until: dt.datetime) -> tuple[bytes, bytes]:
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups),
                         x509.NameAttribute(NameOID.COMMON_NAME, user)])
    key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = ca[0].extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca[0].subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(min(now - BACKDATE, until - dt.timedelta(seconds=1)))
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca[1], hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _client_fit(cert_path: Path, key_path: Path, ca: x509.Certificate, user: str, groups: Sequence[str],
                now: dt.datetime) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        cert.verify_directly_issued_by(ca)
    except (FileNotFoundError, ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False
    if key.public_key() != cert.public_key() or cert.not_valid_after_utc - now < RENEW_BEFORE:
        return False
    names = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    orgs = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return names == [user] and sorted(orgs) == sorted(groups)


def ensure_service_account_key(directory: Path) -> rsa.RSAPrivateKey:
    """The key that signs service-account tokens (sa.key in `directory`, 0600), made at the first start and
    kept, so tokens issued before a restart stay good (as kube-apiserver with kubeadm's sa.key). A file that
    is no RSA private key is replaced: the tokens it signed die with it, as they would upstream."""
    path = directory / SA_KEY
    try:
        # Without OpenSSL's RSA key check (its primality tests took 0.05 CPU-s of every restart to ready,
        # issue 25): the file is our own key, 0600 in the daemon's state, and kube-apiserver's Go parser
        # runs rsa.PrivateKey.Validate on its sa.key, which tests no primality either.
        key = serialization.load_pem_private_key(path.read_bytes(), password=None,
                                                 unsafe_skip_rsa_key_validation=True)
        if isinstance(key, rsa.RSAPrivateKey):
            path.chmod(0o600)
            return key
        logger.warning("service account key is not an RSA key, replacing it path=%s", path)
    except FileNotFoundError:
        pass
    except (ValueError, TypeError, UnsupportedAlgorithm) as err:
        logger.warning("service account key unreadable, replacing it path=%s err=%s", path, err)
    new = serviceaccount.new_private_key()
    _write(path, new.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))
    return new


def ensure_token_file(directory: Path, admin_token: str) -> list[TokenRow]:
    """The rows of the token table in `directory` (tokens.csv, mode 0600), the administrator's first.

    The administrator's row is always the `token` file's token (the kubeconfig's credential),
    rewritten when missing or different; rows an operator added stay as they are. A file upstream
    would refuse (fewer than three columns, broken quoting) is a ConfigError naming it."""
    path = directory / TOKEN_FILE
    admin = TokenRow(admin_token, UserInfo(ADMIN_USER, groups=ADMIN_GROUPS))
    text = _read_text(path)
    try:
        rows = tokens.parse(text, str(path)) if text else []
    except tokens.TokenFileError as err:
        raise ConfigError(str(err)) from None
    others = [r for r in rows if r.token != admin_token and r.user.name != ADMIN_USER]
    wanted = [admin, *others]
    if rows != wanted:
        _write(path, tokens.render(wanted).encode())
    path.chmod(0o600)
    return wanted


def server_ssl_context(creds: Credentials) -> ssl.SSLContext:
    """A TLS 1.2+ server context presenting the serving certificate, asking clients for a certificate.

    As kube-apiserver's --client-ca-file: a client may present a certificate of the CA (its CN and O
    are then the user and groups, authn/chain.py) or none (a bearer token or anonymous). Difference
    from upstream: Go's server only requests the certificate (tls.VerifyClientCertIfGiven) and its
    x509 authenticator refuses a bad one with a 401 (the `Unauthorized` Status a wrong token gets);
    Python's ssl cannot request without verifying (it exposes no SSL_CTX_set_verify callback, and
    no verify flag ignores an unknown issuer; CERT_NONE does not ask at all), so a certificate of
    another CA, expired, or without the client-auth usage fails the TLS handshake, and the
    connection is closed unanswered (asyncio's TLS layer drops the alert: the client reads EOF)
    instead of a 401. Measured against the real kube-apiserver in test_kube_apiserver_authn.py."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(creds.cert_path, creds.key_path)
    context.load_verify_locations(cadata=creds.ca_pem.decode("ascii"))
    context.verify_mode = ssl.CERT_OPTIONAL
    # aiohttp speaks HTTP/1.1 only; saying so lets client-go skip its HTTP/2 attempt.
    context.set_alpn_protocols(["http/1.1"])
    return context


def kubeconfig(
    server: str,
    creds: Credentials,
    *,
    cluster: str = "nodeagent",
    user: str = "nodeagent-admin",
    context: str = "nodeagent",
    namespace: str = "default",
) -> dict[str, Any]:
    """A kubeconfig (clientcmd v1 Config) for `server` trusting our CA and sending the admin token."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": cluster,
            "cluster": {
                "server": server,
                "certificate-authority-data": base64.b64encode(creds.ca_pem).decode("ascii"),
            },
        }],
        "users": [{"name": user, "user": {"token": creds.token}}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": user, "namespace": namespace}}],
        "current-context": context,
        "preferences": {},
    }


def one_credential_kubeconfig(server: str, ca_pem: bytes, credential: dict[str, Any], *, user: str,
                              cluster: str = "nodeagent", namespace: str = "default") -> dict[str, Any]:
    """A kubeconfig for `server` trusting `ca_pem` and holding one user's `credential` (its `user` map)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {
            "server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode("ascii")}}],
        "users": [{"name": user, "user": credential}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user, "namespace": namespace}}],
        "current-context": cluster,
        "preferences": {},
    }


def client_kubeconfig(server: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes, *, user: str,
                      cluster: str = "nodeagent", namespace: str = "default") -> dict[str, Any]:
    """A kubeconfig for `server` holding one credential: a client certificate (and its key), no token."""
    return one_credential_kubeconfig(server, ca_pem, {
        "client-certificate-data": base64.b64encode(cert_pem).decode("ascii"),
        "client-key-data": base64.b64encode(key_pem).decode("ascii")}, user=user, cluster=cluster, namespace=namespace)


def write_secret(path: Path, data: bytes) -> None:
    """Write `data` owner-only (0600), replacing any file there at once (a reader sees the old or the new)."""
    _write(path, data)


def write_kubeconfig(path: Path, config: dict[str, Any]) -> None:
    """Write `config` as YAML, owner-only (it holds the token), replacing any file there at once."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _write(path, yaml.safe_dump(config, sort_keys=False, default_flow_style=False).encode())


def _san_set(hosts: Sequence[str]) -> set[Host]:
    out: set[Host] = set()
    for host in hosts:
        host = host.strip().strip("[]")
        if not host:
            continue
        try:
            out.add(ipaddress.ip_address(host))
        except ValueError:
            out.add(host.lower())
    return out


def _sans(cert: x509.Certificate) -> set[Host]:
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    names: set[Host] = {name.lower() for name in ext.get_values_for_type(x509.DNSName)}
    for ip in ext.get_values_for_type(x509.IPAddress):
        if isinstance(ip, ipaddress.IPv4Address | ipaddress.IPv6Address):
            names.add(ip)
    return names


def _load_ca(directory: Path, now: dt.datetime) -> tuple[x509.Certificate, Key] | None:
    try:
        cert = x509.load_pem_x509_certificate((directory / CA_CERT).read_bytes())
        key = serialization.load_pem_private_key((directory / CA_KEY).read_bytes(), password=None)
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, UnsupportedAlgorithm) as err:
        logger.warning("apiserver ca unreadable, creating a new one dir=%s err=%s", directory, err)
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != cert.public_key():
        logger.warning("apiserver ca key does not match its certificate, creating a new one dir=%s", directory)
        return None
    if cert.not_valid_after_utc - now < RENEW_BEFORE:
        logger.warning("apiserver ca expires soon, creating a new one dir=%s", directory)
        return None
    return cert, key


def _serving_fit(directory: Path, ca: x509.Certificate, wanted: set[Host], now: dt.datetime) -> bool:
    try:
        cert = x509.load_pem_x509_certificate((directory / SERVING_CERT).read_bytes())
        key = serialization.load_pem_private_key((directory / SERVING_KEY).read_bytes(), password=None)
        cert.verify_directly_issued_by(ca)
    except (FileNotFoundError, ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False
    if key.public_key() != cert.public_key():
        return False
    if cert.not_valid_after_utc - now < RENEW_BEFORE or cert.not_valid_before_utc > now:
        return False
    return wanted <= _sans(cert)


def _new_ca(now: dt.datetime) -> tuple[x509.Certificate, Key]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _new_serving(ca: tuple[x509.Certificate, Key], hosts: set[Host], now: dt.datetime) -> tuple[x509.Certificate, Key]:
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    ips = sorted((h for h in hosts if not isinstance(h, str)), key=lambda ip: (ip.version, int(ip)))
    names = sorted(h for h in hosts if isinstance(h, str))
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in names] + [x509.IPAddress(ip) for ip in ips]
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVING_NAME)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + dt.timedelta(days=SERVING_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    # An ECDSA key only signs (the TLS handshake, or certificates for the CA): no key encipherment.
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=cert_sign, crl_sign=cert_sign,
        encipher_only=False, decipher_only=False,
    )


def _key_pem(key: Key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _read_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def _write(path: Path, data: bytes) -> None:
    # mkstemp creates the file 0600, so the secret is never readable by others, not even briefly.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
