"""Authentication answers compared with the real kube-apiserver (opt-in tier: NODEAGENT_KUBE_APISERVER=1).

Both servers get the same token row (`--token-auth-file` upstream, tokens.csv here) and a node's client
certificate of their CA; then, side by side: the 401 answer to a wrong token (code, headers, Status
body), `kubectl auth whoami` (table and JSON userInfo) for the node's certificate and for the token's
user (the certificate's credential id, its SHA-256, compared in form), and a TokenReview of the token and
of an unknown one, as the administrator asks it.
"""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import running_daemon
from tests.integration.kubeapiserver import running_kube_apiserver

pytestmark = [pytest.mark.integration, pytest.mark.kube_apiserver]

ROW = 'viewer-t0ken,viewer,uid-1,"team-a,team-b"\n'
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"


@dataclass
class Side:
    server: str
    ca: Path
    admin: Path  # kubeconfig
    node: Path  # kubeconfig of system:node:n1
    viewer: Path  # kubeconfig of the token row
    admin_cert: tuple[Path, Path] | None = None  # the administrator's client certificate (upstream's admin)


def token_kubeconfig(path: Path, server: str, ca: Path, token: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("kubectl")
    if tool is None:
        pytest.skip("kubectl is not installed")
    return subprocess.run([tool, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          timeout=60, check=False)


def raw(side: Side, method: str, path: str, *, token: str | None, body: Any = None,
        as_admin: bool = False) -> tuple[int, dict[str, str], Any]:
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    ctx = ssl.create_default_context(cafile=str(side.ca))
    if as_admin:
        token = yaml.safe_load(side.admin.read_text())["users"][0]["user"].get("token")
        if token is None:
            assert side.admin_cert is not None
            ctx.load_cert_chain(*side.admin_cert)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(side.server + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), json.loads(err.read())


@pytest.fixture(scope="module")
def real(kube_apiserver_binary: Path) -> Iterator[Side]:
    base = Path(tempfile.mkdtemp(prefix="na-kas-", dir="/tmp"))
    (base / "tokens.csv").write_text(ROW)
    try:
        with running_kube_apiserver(kube_apiserver_binary, base, [f"--token-auth-file={base / 'tokens.csv'}"]) as k:
            yield Side(k.url, k.pki.ca_cert, k.kubeconfig, k.node_kubeconfig("n1"),
                       token_kubeconfig(base / "viewer.kubeconfig", k.url, k.pki.ca_cert, "viewer-t0ken"),
                       (base / "pki" / "admin.crt", base / "pki" / "admin.key"))
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def ours() -> Iterator[Side]:
    base = Path(tempfile.mkdtemp(prefix="na-", dir="/tmp"))
    try:
        with running_daemon(base) as d:
            ca = base / "state" / "apiserver" / "ca.crt"
            tokens = base / "state" / "apiserver" / "tokens.csv"
            tokens.write_text(tokens.read_text() + ROW)  # read at start: restart to take it
        with running_daemon(base) as d:
            node = base / "n1.kubeconfig"
            out = subprocess.run(["python", "-m", "nodeagent.cli", "kubeconfig", "--config", str(d.config),
                                  "--node", "n1", "-o", str(node)], capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            server = yaml.safe_load(d.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
            yield Side(server, ca, d.kubeconfig, node, token_kubeconfig(base / "viewer.kubeconfig", server, ca,
                                                                         "viewer-t0ken"))
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_401_for_a_wrong_token(real: Side, ours: Side) -> None:
    answers = []
    for side in (real, ours):
        code, headers, body = raw(side, "GET", "/api/v1/namespaces", token="wrong")
        answers.append((code, headers.get("Content-Type"), "WWW-Authenticate" in headers, body))
    assert answers[0] == answers[1]
    assert answers[0][3] == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                             "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


@pytest.mark.parametrize("who", ["node", "viewer"])
def test_kubectl_auth_whoami(real: Side, ours: Side, who: str) -> None:
    tables, infos = [], []
    for side in (real, ours):
        kc = getattr(side, who)
        table = kubectl(kc, "auth", "whoami")
        assert table.returncode == 0, table.stderr
        tables.append(same_hash(table.stdout))  # each side's certificate has its own hash
        doc = json.loads(same_hash(kubectl(kc, "auth", "whoami", "-o", "json").stdout))
        infos.append((doc["kind"], doc["apiVersion"], doc["status"]["userInfo"]))
    assert tables[0] == tables[1]
    assert infos[0] == infos[1]


def same_hash(text: str) -> str:
    return re.sub(r"X509SHA256=[0-9a-f]{64}", "X509SHA256=<sha256 of the certificate>", text)


def test_token_reviews(real: Side, ours: Side) -> None:
    answers = []
    for side in (real, ours):
        found = []
        for token in ("viewer-t0ken", "nobody"):
            code, _, body = raw(side, "POST", TOKEN_REVIEWS, token=None, as_admin=True, body={
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
            found.append((code, body.get("status")))
        answers.append(found)
    assert answers[0] == answers[1]


def test_a_client_certificate_of_another_ca(real: Side, ours: Side, tmp_path: Path) -> None:
    """The measured difference certs.server_ssl_context writes down: kube-apiserver requests a client
    certificate without verifying it in the handshake (VerifyClientCertIfGiven) and its x509
    authenticator answers 401 for an unknown CA, the same Status as a wrong token; Python's ssl has no
    verification callback, so nodeagent's handshake fails and the connection closes unanswered."""
    from tests.rpc.test_apiserver_authn import foreign_cert

    cert, key = foreign_cert("mallory")
    (tmp_path / "c.pem").write_bytes(cert)
    (tmp_path / "k.pem").write_bytes(key)
    answers: list[Any] = []
    for side in (real, ours):
        ctx = ssl.create_default_context(cafile=str(side.ca))
        ctx.load_cert_chain(tmp_path / "c.pem", tmp_path / "k.pem")
        req = urllib.request.Request(side.server + "/api/v1/namespaces", headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                answers.append((resp.status, json.loads(resp.read())))
        except urllib.error.HTTPError as err:
            with err:
                answers.append((err.code, json.loads(err.read())))
        except (urllib.error.URLError, ConnectionError, ssl.SSLError) as err:
            answers.append(("no answer", type(err).__name__))
    assert answers[0] == (401, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    assert answers[1][0] == "no answer", answers[1]
