"""The API server's credentials: created once, reused, re-issued when unfit, and usable over real TLS."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import ipaddress
import re
import ssl
import stat
import time
import warnings
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from nodeagent.apiserver.authn.chain import Authenticator
from nodeagent.apiserver.authn.tokens import TokenRow, TokenTable
from nodeagent.apiserver.authn.user import UserInfo
from nodeagent.apiserver.certs import (
    Credentials,
    ensure_credentials,
    kubeconfig,
    server_ssl_context,
    write_kubeconfig,
)
from nodeagent.util.httpserve import start_site

NOW = 1_750_000_000.0  # 2025-06-15, a fixed wall-clock instant for the file-level tests
DAY = 86400.0
FILES = {"ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "token"}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def sans(cert: x509.Certificate) -> tuple[set[str], set[str]]:
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(ext.get_values_for_type(x509.DNSName)), {str(ip) for ip in ext.get_values_for_type(x509.IPAddress)}


def test_creates_files_private(tmp_path: Path) -> None:
    state = tmp_path / "state" / "apiserver"
    creds = ensure_credentials(state, hosts=["127.0.0.1"], clock_now=NOW)
    assert mode(state) == 0o700
    assert {p.name for p in state.iterdir()} == FILES  # no temporary file left behind
    for name in FILES:
        assert mode(state / name) == 0o600, name
    assert creds.cert_path == state / "apiserver.crt"
    assert creds.key_path == state / "apiserver.key"
    assert creds.ca_path == state / "ca.crt"
    assert creds.ca_pem == (state / "ca.crt").read_bytes()
    assert creds.token == (state / "token").read_text().strip()
    assert len(base64.urlsafe_b64decode(creds.token + "=")) == 32  # secrets.token_urlsafe(32)


def test_certificate_shapes(tmp_path: Path) -> None:
    creds = ensure_credentials(tmp_path, hosts=["127.0.0.1"], clock_now=NOW)
    ca, serving = load(creds.ca_path), load(creds.cert_path)
    start = dt.datetime.fromtimestamp(NOW, tz=dt.UTC)

    assert ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "nodeagent-ca"
    assert ca.issuer == ca.subject
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert ca.not_valid_before_utc == start - dt.timedelta(hours=1)
    assert ca.not_valid_after_utc == start + dt.timedelta(days=3650)

    assert serving.issuer == ca.subject
    serving.verify_directly_issued_by(ca)
    assert serving.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    eku = serving.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert serving.not_valid_after_utc == start + dt.timedelta(days=365)


@pytest.mark.parametrize(
    ("hosts", "dns", "ips"),
    [
        ([], {"localhost"}, {"127.0.0.1"}),
        (["127.0.0.1"], {"localhost"}, {"127.0.0.1"}),
        (["::1"], {"localhost"}, {"127.0.0.1", "::1"}),
        (["[::1]", "node-1.example", "192.0.2.7", "Node-1.Example"],
         {"localhost", "node-1.example"}, {"127.0.0.1", "::1", "192.0.2.7"}),
        (["2001:db8::5", "localhost"], {"localhost"}, {"127.0.0.1", "2001:db8::5"}),
    ],
)
def test_sans_cover_hosts(tmp_path: Path, hosts: list[str], dns: set[str], ips: set[str]) -> None:
    creds = ensure_credentials(tmp_path, hosts=hosts, clock_now=NOW)
    assert sans(load(creds.cert_path)) == (dns, ips)


def test_reused_on_next_start(tmp_path: Path) -> None:
    first = ensure_credentials(tmp_path, hosts=["192.0.2.7", "node-1"], clock_now=NOW)
    blobs = {name: (tmp_path / name).read_bytes() for name in FILES}
    # a later start with a subset of the hosts, months on, keeps everything
    second = ensure_credentials(tmp_path, hosts=["node-1"], clock_now=NOW + 200 * DAY)
    assert second == first
    assert {name: (tmp_path / name).read_bytes() for name in FILES} == blobs


@pytest.mark.parametrize(
    ("later", "reissued"),
    [(334 * DAY, False), (336 * DAY, True), (400 * DAY, True)],
)
def test_serving_cert_renewed_before_expiry(tmp_path: Path, later: float, reissued: bool) -> None:
    first = ensure_credentials(tmp_path, hosts=[], clock_now=NOW)
    old = first.cert_path.read_bytes()
    second = ensure_credentials(tmp_path, hosts=[], clock_now=NOW + later)
    assert (second.cert_path.read_bytes() != old) is reissued
    # the CA and the token outlive the serving certificate
    assert (second.ca_pem, second.token) == (first.ca_pem, first.token)
    load(second.cert_path).verify_directly_issued_by(load(second.ca_path))


def test_serving_cert_reissued_for_new_host(tmp_path: Path) -> None:
    first = ensure_credentials(tmp_path, hosts=["node-1"], clock_now=NOW)
    old = first.cert_path.read_bytes()
    second = ensure_credentials(tmp_path, hosts=["node-1", "192.0.2.9"], clock_now=NOW)
    assert second.cert_path.read_bytes() != old
    assert sans(load(second.cert_path)) == ({"localhost", "node-1"}, {"127.0.0.1", "192.0.2.9"})
    assert (second.ca_pem, second.token) == (first.ca_pem, first.token)


@pytest.mark.parametrize(
    ("damage", "new_ca"),
    [
        ("apiserver.crt", False),
        ("apiserver.key", False),
        ("ca.key", True),
        ("ca.crt", True),
    ],
)
def test_damaged_files_are_replaced(tmp_path: Path, damage: str, new_ca: bool) -> None:
    first = ensure_credentials(tmp_path, hosts=[], clock_now=NOW)
    old_cert = first.cert_path.read_bytes()
    (tmp_path / damage).write_bytes(b"-----BEGIN GARBAGE-----\n")
    second = ensure_credentials(tmp_path, hosts=[], clock_now=NOW)
    assert (second.ca_pem != first.ca_pem) is new_ca
    assert second.cert_path.read_bytes() != old_cert
    assert second.token == first.token
    load(second.cert_path).verify_directly_issued_by(load(second.ca_path))


def test_mismatched_key_pair_is_reissued(tmp_path: Path) -> None:
    """A crash between writing the new key and the new certificate leaves a pair that does not match."""
    first = ensure_credentials(tmp_path, hosts=["a.example"], clock_now=NOW)
    stale_cert = first.cert_path.read_bytes()
    ensure_credentials(tmp_path, hosts=["a.example", "b.example"], clock_now=NOW)
    first.cert_path.write_bytes(stale_cert)
    ensure_credentials(tmp_path, hosts=["a.example"], clock_now=NOW)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(first.cert_path, first.key_path)  # raises on a mismatched pair


def test_missing_token_and_loose_modes(tmp_path: Path) -> None:
    first = ensure_credentials(tmp_path, hosts=[], clock_now=NOW)
    (tmp_path / "token").unlink()
    (tmp_path / "apiserver.key").chmod(0o644)
    tmp_path.chmod(0o755)
    second = ensure_credentials(tmp_path, hosts=[], clock_now=NOW)
    assert second.token != first.token and second.ca_pem == first.ca_pem
    assert mode(tmp_path / "apiserver.key") == 0o600 and mode(tmp_path) == 0o700


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Bearer s3cret", True),
        ("bearer s3cret", True),
        ("BEARER s3cret", True),
        ("  Bearer s3cret \t", True),  # the header is trimmed first
        ("Bearer s3cret trailing", True),  # upstream reads the second field only
        ("Bearer  s3cret", False),  # split on single spaces: the second field is empty
        ("Bearer s3cre", False),
        ("Bearer s3cret2", False),
        ("Bearer", False),
        ("Bearer ", False),
        ("Basic s3cret", False),
        ("s3cret", False),
        ("Bearer sécret", False),
        ("", False),
        (None, False),
    ],
)
def test_bearer_token_authentication(header: str | None, expected: bool) -> None:
    """The token table through the chain (authn/chain.py), parsed as upstream's bearertoken authenticator."""
    chain = Authenticator(TokenTable([TokenRow("s3cret", UserInfo("admin"))]), anonymous=False)
    assert (chain.authenticate(None, header).user is not None) is expected


def test_an_empty_token_never_matches() -> None:
    chain = Authenticator(TokenTable([TokenRow("", UserInfo("nobody"))]), anonymous=False)
    assert chain.authenticate(None, "Bearer ").user is None
    assert chain.token_user("")[0] is None


def test_kubeconfig_shape(tmp_path: Path) -> None:
    creds = Credentials(ca_pem=b"PEM", cert_path=tmp_path / "c", key_path=tmp_path / "k", token="tok",
                        ca_path=tmp_path / "ca")
    assert kubeconfig("https://127.0.0.1:6443", creds, namespace="kube-system") == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "nodeagent", "cluster": {"server": "https://127.0.0.1:6443",
                                                        "certificate-authority-data": "UEVN"}}],
        "users": [{"name": "nodeagent-admin", "user": {"token": "tok"}}],
        "contexts": [{"name": "nodeagent", "context": {"cluster": "nodeagent", "user": "nodeagent-admin",
                                                       "namespace": "kube-system"}}],
        "current-context": "nodeagent",
        "preferences": {},
    }
    named = kubeconfig("https://x:1", creds, cluster="c1", user="u1", context="ctx1")
    assert named["current-context"] == "ctx1"
    assert named["contexts"][0] == {"name": "ctx1", "context": {"cluster": "c1", "user": "u1", "namespace": "default"}}


def test_write_kubeconfig(tmp_path: Path) -> None:
    creds = ensure_credentials(tmp_path / "state", hosts=[], clock_now=NOW)
    path = tmp_path / "home" / ".kube" / "config"
    write_kubeconfig(path, kubeconfig("https://127.0.0.1:6443", creds))
    assert mode(path) == 0o600
    doc = yaml.safe_load(path.read_text())
    assert base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"]) == creds.ca_pem
    path.chmod(0o644)
    write_kubeconfig(path, kubeconfig("https://127.0.0.1:7443", creds))  # replaced whole, private again
    assert mode(path) == 0o600
    assert yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:7443"
    assert {p.name for p in path.parent.iterdir()} == {"config"}


async def serve_tls(creds: Credentials) -> tuple[web.AppRunner, int, list[str | None]]:
    seen: list[str | None] = []

    async def api(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        chain = Authenticator(TokenTable([TokenRow(creds.token, UserInfo("admin"))]), anonymous=False)
        if chain.authenticate(None, request.headers.get("Authorization")).user is None:
            return web.json_response({"kind": "Status", "code": 401}, status=401)
        return web.json_response({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{request.url.port}"}]})

    app = web.Application()
    app.router.add_get("/api", api)
    app.router.add_get("/api/", api)  # the Python client asks with the trailing slash
    runner, port = await start_site(app, "127.0.0.1", 0, ssl_context=server_ssl_context(creds))
    return runner, port, seen


async def test_tls_handshake_against_ca(tmp_path: Path) -> None:
    creds = ensure_credentials(tmp_path, hosts=["127.0.0.1"], clock_now=time.time())
    runner, port, seen = await serve_tls(creds)
    try:
        client = ssl.create_default_context(cafile=str(creds.ca_path))
        async with aiohttp.ClientSession() as session:
            for host in ("127.0.0.1", "localhost"):
                async with session.get(f"https://{host}:{port}/api", ssl=client,
                                       headers={"Authorization": f"Bearer {creds.token}"}) as resp:
                    assert resp.status == 200
                    assert (await resp.json())["versions"] == ["v1"]
            async with session.get(f"https://127.0.0.1:{port}/api", ssl=client,
                                   headers={"Authorization": "Bearer wrong"}) as resp:
                assert resp.status == 401
        assert seen[-1] == "Bearer wrong"

        # a name the certificate does not carry fails hostname verification
        mismatch = re.escape("Hostname mismatch, certificate is not valid for 'elsewhere.example'")
        with pytest.raises(ssl.SSLCertVerificationError, match=mismatch):
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client,
                                                      server_hostname="elsewhere.example")
            writer.close()
        # a client trusting only the system roots cannot chain the leaf to a root it trusts (OpenSSL sends the
        # CA after the leaf, as the server holds it to verify client certificates: the chain ends untrusted)
        with pytest.raises(ssl.SSLCertVerificationError, match="self-signed certificate in certificate chain"):
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ssl.create_default_context(),
                                                      server_hostname="localhost")
            writer.close()
        # TLS below 1.2 is refused
        old = ssl.create_default_context(cafile=str(creds.ca_path))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # asking for TLS 1.1 is the point here
            old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
            old.maximum_version = ssl.TLSVersion.TLSv1_1
        with pytest.raises(ssl.SSLError):
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=old, server_hostname="localhost")
            writer.close()
    finally:
        await runner.cleanup()


async def test_kubernetes_client_uses_kubeconfig(tmp_path: Path) -> None:
    """The official Python client loads the written kubeconfig and reaches the server with it over TLS."""
    kube_config = pytest.importorskip("kubernetes.config")
    kube_client = pytest.importorskip("kubernetes.client")
    creds = ensure_credentials(tmp_path / "state", hosts=["127.0.0.1"], clock_now=time.time())
    runner, port, seen = await serve_tls(creds)
    try:
        path = tmp_path / "kubeconfig"
        write_kubeconfig(path, kubeconfig(f"https://127.0.0.1:{port}", creds))
        configuration = kube_client.Configuration()
        kube_config.load_kube_config(config_file=str(path), client_configuration=configuration,
                                     temp_file_path=str(tmp_path))
        assert configuration.host == f"https://127.0.0.1:{port}"
        assert configuration.api_key == {"BearerToken": f"Bearer {creds.token}"}
        assert Path(configuration.ssl_ca_cert).read_bytes() == creds.ca_pem

        def call() -> list[str]:
            with kube_client.ApiClient(configuration) as api:
                return list(kube_client.CoreApi(api).get_api_versions().versions)

        assert await asyncio.to_thread(call) == ["v1"]
        assert seen == [f"Bearer {creds.token}"]
    finally:
        await runner.cleanup()


def test_ip_sans_are_ip_entries(tmp_path: Path) -> None:
    """IP hosts go in as iPAddress entries, never as DNS names (clients only match IPs against those)."""
    creds = ensure_credentials(tmp_path, hosts=["192.0.2.7", "::1"], clock_now=NOW)
    ext = load(creds.cert_path).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(ext.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"), ipaddress.ip_address("192.0.2.7")}
    assert ext.get_values_for_type(x509.DNSName) == ["localhost"]
