"""Legacy service-account token Secrets (type kubernetes.io/service-account-token): filled by the tokens
controller, accepted as bearer tokens, their last use stamped, refused once invalid, removed with their
account; on nodeagent's control plane, and compared with kube-apiserver + kube-controller-manager (whose
serviceaccount-token controller fills them) in the opt-in tier (NODEAGENT_KUBE_APISERVER=1).

One scenario, run on each side over HTTPS: what the controller writes (data keys, annotations, ca.crt,
the JWT's header and claims), who the token is (SelfSubjectReview, TokenReview), the
kubernetes.io/legacy-token-last-used label, the refusals (kubernetes.io/legacy-token-invalid-since, a
changed copy, the account deleted: its Secret deleted too), a Secret naming no account (deleted).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.daemon_helpers import running_daemon, wait_for
from tests.integration.kubeapiserver import KubeAPIServer
from tests.integration.test_kube_apiserver_authn import Side, raw

pytestmark = pytest.mark.integration

NS = "/api/v1/namespaces/default"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
LAST_USED = "kubernetes.io/legacy-token-last-used"
INVALID_SINCE = "kubernetes.io/legacy-token-invalid-since"


def _token_secret(name: str, account: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}}}


def _admin(side: Side, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    code, _, answer = raw(side, method, path, token=None, as_admin=True, body=body)
    return code, answer


def _filled(side: Side, name: str) -> dict[str, Any]:
    def ready() -> Any:
        code, secret = _admin(side, "GET", f"{NS}/secrets/{name}")
        return code == 200 and (secret.get("data") or {}).get("token") and secret
    found: dict[str, Any] = wait_for(ready, timeout=30, what=f"secret {name} filled by the tokens controller")
    return found


def _gone(side: Side, path: str, what: str) -> None:
    wait_for(lambda: _admin(side, "GET", path)[0] == 404, timeout=30, what=what)


def _jwt(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    head, body, _sig = token.split(".")
    return (json.loads(base64.urlsafe_b64decode(head + "==")), json.loads(base64.urlsafe_b64decode(body + "==")))


def _whoami(side: Side, token: str) -> tuple[int, Any]:
    code, _, body = raw(side, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token,
                        body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return code, body.get("status") if code == 201 else body


def _until(side: Side, token: str, code: int) -> tuple[int, Any]:
    """SelfSubjectReview with `token` once it answers `code`: kube-apiserver remembers a token's success
    for 10 s (its token authenticator cache), so a refusal shows there only after that; nodeagent's at once."""
    answer: list[tuple[int, Any]] = []

    def answered() -> bool:
        answer.append(_whoami(side, token))
        return answer[-1][0] == code

    wait_for(answered, timeout=25, what=f"the token answered {code}")
    return answer[-1]


def _warned(side: Side, token: str) -> tuple[int, str]:
    """A SelfSubjectReview with `token` once its answer carries a Warning: (code, the Warning header)."""
    answer: list[tuple[int, str]] = []

    def warned() -> bool:
        code, headers, _ = raw(side, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token,
                               body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        answer.append((code, headers.get("Warning", "")))
        return bool(answer[-1][1])

    wait_for(warned, timeout=25, what="the auto-generated token's warning")
    return answer[-1]


def _review(side: Side, token: str) -> Any:
    code, body = _admin(side, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
    assert code == 201, body
    return body["status"]


def _normal(value: Any) -> Any:
    return json.loads(UUID.sub("<uuid>", json.dumps(value)))


def scenario(side: Side) -> list[Any]:
    """The observations of one side, uids replaced; the CA and today's date checked here."""
    seen: list[Any] = []
    assert _admin(side, "POST", f"{NS}/serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                          "metadata": {"name": "legacy"}})[0] == 201
    sa_uid = _admin(side, "GET", f"{NS}/serviceaccounts/legacy")[1]["metadata"]["uid"]
    code, created = _admin(side, "POST", f"{NS}/secrets", _token_secret("legacy-token", "legacy"))
    assert code == 201, created
    secret = _filled(side, "legacy-token")
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    assert data["ca.crt"] == side.ca.read_bytes()
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"] == sa_uid
    token = data["token"].decode()
    header, claims = _jwt(token)
    seen.append(("filled", sorted(data), data["namespace"].decode(), _normal(secret["metadata"]["annotations"]),
                 sorted(header), header["alg"], _normal(claims)))
    seen.append(("whoami", _normal(_whoami(side, token))))
    seen.append(("review", _normal(_review(side, token))))
    today = dt.datetime.now(dt.UTC).date().isoformat()
    stamped = wait_for(lambda: (_admin(side, "GET", f"{NS}/secrets/legacy-token")[1]["metadata"].get("labels") or {})
                       .get(LAST_USED), timeout=15, what="the last-used label")
    assert stamped == today
    # marked invalid: refused (401), and the label removed lets it in again
    current = _admin(side, "GET", f"{NS}/secrets/legacy-token")[1]
    current["metadata"]["labels"][INVALID_SINCE] = today
    assert _admin(side, "PUT", f"{NS}/secrets/legacy-token", current)[0] == 200
    seen.append(("invalid-since", _until(side, token, 401), _normal(_review(side, token))))
    current = _admin(side, "GET", f"{NS}/secrets/legacy-token")[1]
    del current["metadata"]["labels"][INVALID_SINCE]
    assert _admin(side, "PUT", f"{NS}/secrets/legacy-token", current)[0] == 200
    seen.append(("label removed", _until(side, token, 201)[0]))
    # the Secret's copy changed: the token no longer matches it (and the controller keeps a token it did not write)
    current = _admin(side, "GET", f"{NS}/secrets/legacy-token")[1]
    current["data"]["token"] = base64.b64encode(b"replaced").decode()
    assert _admin(side, "PUT", f"{NS}/secrets/legacy-token", current)[0] == 200
    seen.append(("copy changed", _until(side, token, 401), _normal(_review(side, token))))
    # a token Secret made after the change is filled: the controller has seen the change and left the token
    assert _admin(side, "POST", f"{NS}/secrets", _token_secret("legacy-token-2", "legacy"))[0] == 201
    _filled(side, "legacy-token-2")
    kept = base64.b64decode(_admin(side, "GET", f"{NS}/secrets/legacy-token")[1]["data"]["token"])
    seen.append(("kept", kept))
    current = _admin(side, "GET", f"{NS}/secrets/legacy-token")[1]
    current["data"]["token"] = base64.b64encode(token.encode()).decode()
    assert _admin(side, "PUT", f"{NS}/secrets/legacy-token", current)[0] == 200
    seen.append(("restored", _until(side, token, 201)[0]))
    # listed in the account's `secrets`, as the tokens controller of old listed what it generated: still
    # accepted, with upstream's warning on the answer (kube-apiserver replays a cached success's warnings,
    # so the listing shows once that cache entry, up to 10 s old, is gone)
    account = _admin(side, "GET", f"{NS}/serviceaccounts/legacy")[1]
    account["secrets"] = [{"name": "legacy-token"}]
    assert _admin(side, "PUT", f"{NS}/serviceaccounts/legacy", account)[0] == 200
    seen.append(("auto-generated", _warned(side, token)))
    # the account deleted: its token Secret deleted by the controller, the token refused
    assert _admin(side, "DELETE", f"{NS}/serviceaccounts/legacy")[0] == 200
    _gone(side, f"{NS}/secrets/legacy-token", "the deleted account's token Secret deleted")
    _gone(side, f"{NS}/secrets/legacy-token-2", "every token Secret of the deleted account deleted")
    seen.append(("account deleted", _until(side, token, 401), _normal(_review(side, token))))
    # a Secret naming no account is deleted
    assert _admin(side, "POST", f"{NS}/secrets", _token_secret("orphan", "nobody"))[0] == 201
    _gone(side, f"{NS}/secrets/orphan", "a token Secret naming no account deleted")
    return seen


def _check(seen: list[Any]) -> None:
    """What upstream answers, as measured against kube-apiserver + kube-controller-manager."""
    by = {s[0]: s[1:] for s in seen}
    keys, namespace, annotations, header, alg, claims = by["filled"]
    assert keys == ["ca.crt", "namespace", "token"] and namespace == "default"
    assert annotations == {"kubernetes.io/service-account.name": "legacy",
                           "kubernetes.io/service-account.uid": "<uuid>"}
    assert header == ["alg", "kid"] and alg in ("RS256", "ES256")  # the fixture's key is ECDSA
    assert claims == {"iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "default",
                      "kubernetes.io/serviceaccount/secret.name": "legacy-token",
                      "kubernetes.io/serviceaccount/service-account.name": "legacy",
                      "kubernetes.io/serviceaccount/service-account.uid": "<uuid>",
                      "sub": "system:serviceaccount:default:legacy"}
    code, who = by["whoami"][0]
    assert code == 201
    assert who["userInfo"] == {"username": "system:serviceaccount:default:legacy", "uid": "<uuid>",
                               "groups": ["system:serviceaccounts", "system:serviceaccounts:default",
                                          "system:authenticated"]}
    code, refused = by["invalid-since"][0]
    assert code == 401 and refused["message"] == "Unauthorized"
    assert by["label removed"][0] == 201
    assert by["copy changed"][0][0] == 401
    assert by["kept"][0] == b"replaced"
    assert by["restored"][0] == 201
    assert by["auto-generated"][0] == (201, '299 - "Use tokens from the TokenRequest API or manually created '
                                            'secret-based tokens instead of auto-generated secret-based tokens."')
    assert by["account deleted"][0][0] == 401


@pytest.fixture(scope="module")
def ours() -> Iterator[Side]:
    base = Path(tempfile.mkdtemp(prefix="na-", dir="/tmp"))
    try:
        with running_daemon(base) as d:
            ca = base / "state" / "apiserver" / "ca.crt"
            server = yaml.safe_load(d.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
            yield Side(server, ca, d.kubeconfig, d.kubeconfig, d.kubeconfig)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_legacy_token_secrets(ours: Side) -> None:
    seen = scenario(ours)
    _check(seen)
    by = {s[0]: s[1:] for s in seen}
    assert by["invalid-since"][1]["error"] == (
        "[invalid bearer token, the token in secret default/legacy-token for service account default/legacy has "
        "been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or "
        "remove the 'kubernetes.io/legacy-token-invalid-since' label from the secret to temporarily allow use of "
        "this token]")


@pytest.mark.kube_apiserver
@pytest.mark.timeout(300)
def test_legacy_token_secrets_as_kube_apiserver_and_its_controller_manager(ours: Side,
                                                                         kube_apiserver: KubeAPIServer) -> None:
    k = kube_apiserver
    real = Side(k.url, k.pki.ca_cert, k.kubeconfig, k.node_kubeconfig("n1"), k.kubeconfig,
                (k.base / "pki" / "admin.crt", k.base / "pki" / "admin.key"))
    theirs = scenario(real)
    _check(theirs)
    mine = scenario(ours)
    # the signing keys differ by nature (the fixture's is ECDSA, nodeagent's RSA as kubeadm's sa.key)
    assert [s for s in mine if s[0] != "filled"] == [s for s in theirs if s[0] != "filled"], json.dumps(
        [mine, theirs], indent=1, default=str)
    assert mine[0][1:5] == theirs[0][1:5] and mine[0][6] == theirs[0][6]
