"""Plugin credentials (apiserver/plugin_credentials.py): the service account, its grant, the kubeconfig holding
only its token (bound to the node once it exists), and the refresh before expiry."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import yaml

from nodeagent.apiserver import plugin_credentials as pc
from nodeagent.apiserver.authn.serviceaccount import Signer, TokenAuthenticator, new_private_key
from nodeagent.store import ObjectStore
from nodeagent.store.kinds import builtin_kinds
from nodeagent.util.clock import FakeClock


def _claims(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return dict(orjson.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))))


def _user(kubeconfig: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(kubeconfig.read_text())["users"][0]["user"])


def test_issue_bind_refresh_and_recreate(tmp_path: Path) -> None:
    clock = FakeClock(start=1_800_000_000.0)
    store = ObjectStore(":memory:", builtin_kinds(), clock)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}})
    key = new_private_key()
    creds = pc.PluginCredentials(store, Signer(key), clock.now, lambda: "https://127.0.0.1:6443", b"CA")
    check = TokenAuthenticator([key.public_key()], store.peek, clock.now)
    path = tmp_path / "plugins" / "nodeagent-plugin-drv.kubeconfig"

    creds.write(path, "nodeagent-plugin-drv", "n1")
    user = _user(path)
    assert set(user) == {"token", "tokenFile"} and Path(user["tokenFile"]).read_text() == user["token"]
    assert path.stat().st_mode & 0o777 == 0o600 and Path(user["tokenFile"]).stat().st_mode & 0o777 == 0o600
    assert store.try_get("ServiceAccount", "kube-system", "nodeagent-plugin-drv") is not None
    assert store.try_get("ClusterRoleBinding", "", "nodeagent:plugin:nodeagent-plugin-drv") is not None
    first = check.authenticate(user["token"])
    assert first.user is not None and first.user.name == "system:serviceaccount:kube-system:nodeagent-plugin-drv"
    assert "node" not in _claims(user["token"])["kubernetes.io"]  # no Node yet: unbound, and soon again
    assert creds.refresh_due() == pc.UNBOUND_RETRY

    store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    clock.advance(pc.UNBOUND_RETRY)
    creds.refresh_due()
    bound = _user(path)["token"]
    assert _claims(bound)["kubernetes.io"]["node"]["name"] == "n1"
    assert abs(creds.refresh_due() - pc.EXPIRATION * pc.REFRESH_AT) < 1

    clock.advance(pc.EXPIRATION * pc.REFRESH_AT)
    creds.refresh_due()
    renewed = _user(path)["token"]
    assert renewed != bound and _claims(renewed)["exp"] == int(clock.now()) + pc.EXPIRATION
    assert check.authenticate(renewed).user is not None

    store.delete("ServiceAccount", "kube-system", "nodeagent-plugin-drv")
    assert check.authenticate(renewed).error == 'serviceaccounts "nodeagent-plugin-drv" not found'
    clock.advance(pc.EXPIRATION * pc.REFRESH_AT)
    creds.refresh_due()  # a new account: the plugin's next token is good again
    assert check.authenticate(_user(path)["token"]).user is not None
