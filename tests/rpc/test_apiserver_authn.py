"""Authentication on the real API server over HTTPS: each identity's credential and only its own.

Client certificates of the embedded CA (CN user, O groups) are accepted; one of another CA or an
expired one is refused in the TLS handshake (the documented difference from upstream's 401); the
token table's rows each authenticate their own user; SelfSubjectReview (what `kubectl auth whoami`
asks) tells who the caller is; `anonymous: true` serves credential-less requests as
system:anonymous, never as the administrator, and still refuses a wrong token; wrong tokens from one
address are answered 429 with Retry-After beyond the bucket and logged in one line with their count."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import logging
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from nodeagent.apiserver import certs
from nodeagent.apiserver.server import APIServer, APIServerOptions
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import RealClock

pytestmark = pytest.mark.rpc
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


@asynccontextmanager
async def serving(tmp_path: Path, *, anonymous: bool = False) -> AsyncIterator[APIServer]:
    store = ObjectStore.memory(admitted_kinds(), RealClock())
    server = APIServer(store, RealClock(), APIServerOptions(
        bind_address="127.0.0.1:0", credentials_dir=tmp_path / "creds", kubeconfig=tmp_path / "kubeconfig",
        anonymous=anonymous))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
        store.close()


def context(server: APIServer, cert: tuple[bytes, bytes] | None, tmp_path: Path) -> ssl.SSLContext:
    assert server.credentials is not None
    ctx = ssl.create_default_context(cafile=str(server.credentials.ca_path))
    if cert is not None:
        (tmp_path / "c.crt").write_bytes(cert[0])
        (tmp_path / "c.key").write_bytes(cert[1])
        ctx.load_cert_chain(tmp_path / "c.crt", tmp_path / "c.key")
    return ctx


async def call(server: APIServer, ctx: ssl.SSLContext, method: str, path: str, *, token: str | None = None,
               body: Any = None) -> tuple[int, Any, aiohttp.ClientResponse]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session, \
            session.request(method, server.url + path, json=body, headers=headers) as resp:
        text = await resp.read()
        try:
            doc: Any = await resp.json(content_type=None)
        except ValueError:
            doc = text.decode()
        return resp.status, doc, resp


def foreign_cert(user: str, *, days: float = 1.0) -> tuple[bytes, bytes]:
    """A client certificate from a CA of its own (not the server's)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "other-ca")])
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, user)]))
            .issuer_name(name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


async def test_client_certificates_of_the_ca_name_the_user(tmp_path: Path) -> None:
    async with serving(tmp_path) as server:
        creds = tmp_path / "creds"
        node = certs.issue_client_cert(creds, user="system:node:n1", groups=["system:nodes"],
                                       clock_now=RealClock().now())
        status, doc, _ = await call(server, context(server, node, tmp_path), "POST", WHOAMI, body=REVIEW)
        assert status == 201
        assert doc["kind"] == "SelfSubjectReview" and doc["apiVersion"] == "authentication.k8s.io/v1"
        der = x509.load_pem_x509_certificate(node[0]).public_bytes(serialization.Encoding.DER)
        assert doc["status"]["userInfo"] == {
            "username": "system:node:n1", "groups": ["system:nodes", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": [f"X509SHA256={hashlib.sha256(der).hexdigest()}"]}}
        # the certificate wins over a token sent with it (x509 is the first authenticator)
        assert server.credentials is not None
        status, doc, _ = await call(server, context(server, node, tmp_path), "POST", WHOAMI, body=REVIEW,
                                    token=server.credentials.token)
        assert doc["status"]["userInfo"]["username"] == "system:node:n1"
        # the administrator's token names the administrator
        status, doc, _ = await call(server, context(server, None, tmp_path), "POST", WHOAMI, body=REVIEW,
                                    token=server.credentials.token)
        assert doc["status"]["userInfo"] == {"username": "nodeagent-admin",
                                             "groups": ["system:masters", "system:authenticated"]}
        # expired (from the same CA, an hour ago) and foreign certificates: the handshake fails and the server
        # closes the connection unanswered (asyncio drops the TLS alert); the node's certificate gets its answer
        assert (await raw_request(server, context(server, node, tmp_path))).startswith("answered: b'HTTP/1.1 ")
        expired = certs.issue_client_cert(creds, user="late", groups=[], clock_now=RealClock().now() - 7200,
                                          days=1 / 24)
        for cert in (expired, foreign_cert("mallory")):
            answer = await raw_request(server, context(server, cert, tmp_path))
            assert answer == "answered: b''" or "UNEXPECTED_EOF_WHILE_READING" in answer, answer


async def raw_request(server: APIServer, ctx: ssl.SSLContext) -> str:
    """What the server sends back to one request over a connection with `ctx` (TLS 1.3 verifies the client's
    certificate after the client thinks the handshake is done: a refusal shows when reading)."""
    def attempt() -> str:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            try:
                tls.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n")
                return f"answered: {tls.recv(100)!r}"
            except ssl.SSLError as err:
                return str(err)

    return await asyncio.to_thread(attempt)


async def test_token_table_rows_are_each_their_own_identity(tmp_path: Path) -> None:
    async with serving(tmp_path) as server:
        assert server.credentials is not None
        table = (tmp_path / "creds" / certs.TOKEN_FILE)
        assert table.stat().st_mode & 0o777 == 0o600
        assert table.read_text() == f"{server.credentials.token},nodeagent-admin,,system:masters\n"
    with table.open("a") as f:
        f.write('viewer-token,viewer,uid-1,"team-a,team-b"\n')
    async with serving(tmp_path) as server:
        ctx = context(server, None, tmp_path)
        status, doc, _ = await call(server, ctx, "POST", WHOAMI, body=REVIEW, token="viewer-token")
        assert doc["status"]["userInfo"] == {"username": "viewer", "uid": "uid-1",
                                             "groups": ["team-a", "team-b", "system:authenticated"]}
        # a TokenReview answers from the same table; an unknown token with upstream's error. Creating
        # one needs system:auth-delegator's permission (the administrator's here): viewer may not
        admin = server.credentials.token
        status, doc, _ = await call(server, ctx, "POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                    token="viewer-token", body={"spec": {"token": "viewer-token"}})
        assert status == 403 and doc["message"].startswith('tokenreviews.authentication.k8s.io is forbidden: '
                                                           'User "viewer" cannot create resource "tokenreviews"')
        status, doc, _ = await call(server, ctx, "POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                    token=admin, body={"spec": {"token": "viewer-token"}})
        assert status == 201 and doc["status"]["authenticated"] is True
        assert doc["status"]["user"]["username"] == "viewer"
        status, doc, _ = await call(server, ctx, "POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                    token=admin, body={"spec": {"token": "guess"}})
        assert doc["status"] == {"user": {}, "error": "invalid bearer token"}


async def test_401_is_upstreams_status(tmp_path: Path) -> None:
    async with serving(tmp_path) as server:
        status, doc, resp = await call(server, context(server, None, tmp_path), "GET", "/api/v1/pods", token="x")
        assert status == 401 and "WWW-Authenticate" not in resp.headers
        assert resp.headers["Content-Type"] == "application/json"
        assert doc == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


async def test_anonymous_is_system_anonymous_not_the_administrator(tmp_path: Path) -> None:
    async with serving(tmp_path, anonymous=True) as server:
        ctx = context(server, None, tmp_path)
        # anonymous reaches authorization as system:anonymous, which RBAC's bootstrap policy lets read
        # health and version only (system:basic-user is bound to system:authenticated): 403, as upstream
        status, doc, _ = await call(server, ctx, "POST", WHOAMI, body=REVIEW)
        assert status == 403
        assert doc["message"] == ('selfsubjectreviews.authentication.k8s.io is forbidden: User "system:anonymous" '
                                  'cannot create resource "selfsubjectreviews" in API group "authentication.k8s.io" '
                                  "at the cluster scope")
        status, _, _ = await call(server, ctx, "GET", "/version")
        assert status == 200
        status, _, _ = await call(server, ctx, "DELETE", "/api/v1/nodes/any")
        assert status == 403
        # a wrong token is refused, not served as anonymous (union.NewFailOnError)
        status, _, _ = await call(server, ctx, "GET", "/api/v1/namespaces", token="wrong")
        assert status == 401


async def test_wrong_tokens_are_throttled_and_logged_once_with_a_count(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with serving(tmp_path) as server:
        assert server.authn is not None and server.credentials is not None
        server.authn.throttle.rate = 0.01  # no refill during the loop on a slow machine: the counts are exact
        ctx = context(server, None, tmp_path)
        codes: list[int] = []
        retry: set[str] = set()
        with caplog.at_level(logging.WARNING, logger="nodeagent.apiserver.authn.filter"):
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
                for i in range(1000):
                    async with session.get(server.url + "/api/v1/namespaces",
                                           headers={"Authorization": f"Bearer wrong-{i}"}) as resp:
                        codes.append(resp.status)
                        if resp.status == 429:
                            retry.add(resp.headers["Retry-After"])
                            assert await resp.text() == "Too many requests, please try again later.\n"
                # a good token from the same address still waits for the bucket (its answer says nothing)
                async with session.get(server.url + "/api/v1/namespaces",
                                       headers={"Authorization": f"Bearer {server.credentials.token}"}) as resp:
                    assert resp.status == 429
                # a client certificate is never throttled
            node = certs.issue_client_cert(tmp_path / "creds", user="system:node:n1", groups=["system:nodes"],
                                           clock_now=RealClock().now())
            # (a node may list services, not namespaces: the Node authorizer's static rules, as upstream)
            status, _, _ = await call(server, context(server, node, tmp_path), "GET", "/api/v1/services")
            assert status == 200
            burst = server.authn.throttle.burst
            assert codes[:burst] == [401] * burst and set(codes[burst:]) == {429}
            # the seconds until one failure is allowed again: 1 / rate, less the time gone since the bucket emptied
            assert {int(r) for r in retry} <= set(range(1, 101)) and "100" in retry
            server.authn.throttle.interval = 0.0  # the next flush is due: one line for the rest
            server.authn.flush()
        # the filter's own lines (a test before in the same worker may have left other loggers at INFO)
        lines = [r.getMessage() for r in caplog.records if r.name == "nodeagent.apiserver.authn.filter"]
        assert len(lines) == 2, lines
        assert "source=127.0.0.1 reason=invalid bearer token" in lines[0]
        assert "count=1000 last_reason=too many failed authentications" in lines[1]
        server.authn.throttle.rate = 10.0  # the 429s drained nothing: the bucket refills at its rate
        await asyncio.sleep(0.2)
        status, _, _ = await call(server, ctx, "GET", "/api/v1/namespaces", token=server.credentials.token)
        assert status == 200


@pytest.mark.parametrize(("bind", "expected"), [
    ("0.0.0.0:0", ["10.1.2.3", "127.0.0.1", "192.0.2.10", "localhost"]),
    ("[::]:0", ["127.0.0.1", "2001:db8::10", "::1", "localhost"]),  # a "::" socket takes IPv6 only (V6ONLY)
    ("192.0.2.10:0", ["127.0.0.1", "192.0.2.10", "localhost"]),
])
def test_serving_certificate_names(tmp_path: Path, bind: str, expected: list[str]) -> None:
    store = ObjectStore.memory(admitted_kinds(), RealClock())
    try:
        server = APIServer(store, RealClock(), APIServerOptions(
            bind_address=bind, credentials_dir=tmp_path, host_addresses=lambda: [
                "127.0.0.1", "::1", "10.1.2.3", "192.0.2.10", "2001:db8::10"]))
        assert server.serving_hosts() == expected
    finally:
        store.close()
