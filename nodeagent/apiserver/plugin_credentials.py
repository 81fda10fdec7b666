"""Each spawned plugin's own credential: a service account, its RBAC grant, and a kubeconfig holding a
service-account token of it, issued again before it expires.

Why tokens and not a certificate of the CA: they are what a DRA driver runs with on a real cluster (a
pod's projected service-account token), they die with their service account (delete it and the plugin
is locked out at once, where a certificate lives out its year), they carry the node the plugin serves
(the token is bound to the Node, so its user has the authentication.kubernetes.io/node-name extra
that dra-example-driver's chart checks slices against), and TokenReview answers them on any server.

How: the service account `nodeagent-plugin-NAME` in kube-system (authn/identities.py) is created when
missing, nodeagent:plugin is bound to it (authz/bootstrap.py plugin_grant), and a token is requested
through the same TokenRequest code the API serves (tokenrequest.py), for the API's audiences, valid
EXPIRATION seconds, bound to the Node when it is registered (else to nothing, issued again every
UNBOUND_RETRY seconds until the node is there to bind to: a plugin spawned before its node
registered is not left for most of an hour without the node its slices are checked against). The kubeconfig holds the
token inline (read by the Python clients, which reload a changed kubeconfig) and names a token file
beside it (client-go reads `tokenFile` again every minute), both replaced atomically. The refresh
runs at 80% of a token's life, as the kubelet refreshes projected tokens.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeagent.apiserver import certs, tokenrequest
from nodeagent.apiserver.authn import identities
from nodeagent.apiserver.authn.serviceaccount import Signer
from nodeagent.apiserver.authz import bootstrap
from nodeagent.errors import AlreadyExists
from nodeagent.store import ObjectStore

logger = logging.getLogger(__name__)

EXPIRATION = 3600
REFRESH_AT = 0.8  # of a token's life, the kubelet's rule for projected tokens
RETRY = 10.0
UNBOUND_RETRY = 5.0


@dataclass
class _Issued:
    path: Path
    account: str
    node: str
    namespace: str
    refresh_at: float = 0.0


def token_kubeconfig(server: str, ca_pem: bytes, token: str, token_file: Path, *, user: str,
                     namespace: str = "default", cluster: str = "nodeagent") -> dict[str, Any]:
    """A kubeconfig for `server` holding one credential: a bearer token, inline and as a file to re-read."""
    return certs.one_credential_kubeconfig(server, ca_pem, {"token": token, "tokenFile": str(token_file)},
                                           user=user, cluster=cluster, namespace=namespace)


class PluginCredentials:
    """Issues and refreshes the plugins' service-account kubeconfigs of one API server."""

    def __init__(self, store: ObjectStore, signer: Signer, now: Callable[[], float], server: Callable[[], str],
                 ca_pem: bytes) -> None:
        self._store = store
        self._signer = signer
        self._now = now
        self._server = server
        self._ca_pem = ca_pem
        self._issued: dict[Path, _Issued] = {}

    def write(self, path: Path, account: str, node: str, namespace: str = "default") -> None:
        """Make `account` (a service account of kube-system) with its grant, and write its kubeconfig at `path`."""
        self._ensure_account(account)
        for obj in bootstrap.plugin_grant(identities.PLUGIN_NAMESPACE, account):
            existing = self._store.try_get(obj["kind"], "", obj["metadata"]["name"])
            if existing is None:
                with contextlib.suppress(AlreadyExists):
                    self._store.create(obj)
            elif any(existing.get(k) != obj.get(k) for k in ("rules", "subjects", "roleRef")):
                self._store.update({**existing, **{k: obj[k] for k in ("rules", "subjects") if k in obj}})
        issued = _Issued(path, account, node, namespace)
        self._issue(issued)
        self._issued[path] = issued

    def _ensure_account(self, account: str) -> None:
        if self._store.try_get("ServiceAccount", identities.PLUGIN_NAMESPACE, account) is None:
            with contextlib.suppress(AlreadyExists):
                self._store.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                    "metadata": {"name": account, "namespace": identities.PLUGIN_NAMESPACE}})

    def _issue(self, issued: _Issued) -> None:
        self._ensure_account(issued.account)  # deleted by someone: a plugin restarted later gets a new one
        node = self._store.peek("Node", "", issued.node) if issued.node else None
        spec: dict[str, Any] = {"expirationSeconds": EXPIRATION}
        if node is not None:
            spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Node", "name": issued.node,
                                      "uid": str((node.get("metadata") or {}).get("uid") or "")}
        now = self._now()
        answer = tokenrequest.create(identities.PLUGIN_NAMESPACE, issued.account, {"spec": spec},
                                     get=self._store.peek, signer=self._signer, now=now).answer
        token = str(answer["status"]["token"])
        token_file = issued.path.with_suffix(".token")
        issued.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        certs.write_secret(token_file, token.encode())
        user = identities.service_account_user(identities.PLUGIN_NAMESPACE, issued.account).name
        certs.write_kubeconfig(issued.path, token_kubeconfig(self._server(), self._ca_pem, token, token_file,
                                                             user=user, namespace=issued.namespace))
        # a token issued before its node registered carries no node: issued again soon, bound this time
        issued.refresh_at = now + (EXPIRATION * REFRESH_AT if node is not None or not issued.node else UNBOUND_RETRY)
        logger.info("plugin token issued account=%s bound_node=%s expires_in=%ds kubeconfig=%s", issued.account,
                    issued.node if node is not None else "", EXPIRATION, issued.path)

    def refresh_due(self) -> float:
        """Issue again every token due; the seconds until the next one is due."""
        now = self._now()
        for issued in list(self._issued.values()):
            if issued.refresh_at <= now:
                try:
                    self._issue(issued)
                except Exception:  # a refresh that failed is retried, never ends the loop
                    logger.exception("plugin token refresh failed account=%s", issued.account)
                    issued.refresh_at = now + RETRY
        due = [i.refresh_at for i in self._issued.values()]
        return max(1.0, min(due) - now) if due else EXPIRATION * REFRESH_AT

    def issued(self) -> Mapping[Path, str]:
        return {path: i.account for path, i in self._issued.items()}

    async def run(self, sleep: Callable[[float], Awaitable[None]]) -> None:
        """Refresh the tokens before they expire, until cancelled."""
        while True:
            await sleep(self.refresh_due())
