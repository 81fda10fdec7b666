"""The tokens controller: `kubernetes.io/service-account-token` Secrets filled and removed as upstream's.

Why (k8s.io/kubernetes pkg/controller/serviceaccount/tokens_controller.go, kube-controller-manager's
serviceaccount-token controller): a Secret of that type naming a ServiceAccount in its
`kubernetes.io/service-account.name` annotation is how a long-lived token is still made by hand; the
controller writes into it `token` (a legacy JWT of the account, authn/legacy.py, signed with the API
server's service-account key), `ca.crt` (the cluster CA, restored when it differs) and `namespace`, and
annotates the account's uid; a Secret whose account is missing (or has another uid than the Secret
names) is deleted (uid precondition), every token Secret of a deleted account too, and a deleted Secret
is dropped from its account's `secrets` list. Only what is missing is written: a token already there
is kept, whoever wrote it.

Embedded, so a cluster without kube-controller-manager still gets its tokens; switched off with
controlPlane.controllers (`-serviceaccount-token`) where the real one takes over. The real one needs
the same signing key to make tokens this server accepts (--service-account-private-key-file).
"""

from __future__ import annotations

import base64
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.authn import legacy
from nodeagent.apiserver.authn.serviceaccount import Signer
from nodeagent.errors import Conflict, NotFound
from nodeagent.store import DELETED, RESYNC, ObjectStore

logger = logging.getLogger(__name__)

KINDS = ("ServiceAccount", "Secret")


def _md(obj: Mapping[str, Any] | None, key: str) -> str:
    return str(((obj or {}).get("metadata") or {}).get(key) or "")


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


class TokensController:
    """Fills and removes the legacy token Secrets of one API server's store."""

    def __init__(self, store: ObjectStore, signer: Signer, root_ca: bytes) -> None:
        self.store = store
        self.signer = signer
        self.root_ca = root_ca

    def _account(self, namespace: str, name: str, uid: str) -> Mapping[str, Any] | None:
        sa = self.store.peek("ServiceAccount", namespace, name)
        return sa if sa is not None and (not uid or _md(sa, "uid") == uid) else None

    def _needs(self, secret: Mapping[str, Any]) -> dict[str, str]:
        """secretUpdateNeeded: the data keys to write (base64), the token left to the caller."""
        data = secret.get("data") or {}
        out: dict[str, str] = {}
        ca = base64.b64encode(self.root_ca).decode("ascii")
        if self.root_ca and data.get("ca.crt") != ca:
            out["ca.crt"] = ca
        if not data.get("namespace"):
            out["namespace"] = base64.b64encode(_md(secret, "namespace").encode()).decode("ascii")
        if not data.get("token"):
            out["token"] = ""
        return out

    def sync_secret(self, secret: Mapping[str, Any]) -> None:
        """syncSecret for a Secret that exists."""
        if secret.get("type") != legacy.SECRET_TYPE:
            return
        annotations = _annotations(secret)
        name = annotations.get(legacy.NAME_ANNOTATION) or ""
        if not name:
            return
        namespace = _md(secret, "namespace")
        sa = self._account(namespace, name, annotations.get(legacy.UID_ANNOTATION) or "")
        if sa is None:
            logger.info("service account does not exist, deleting token secret=%s/%s", namespace, _md(secret, "name"))
            with contextlib.suppress(NotFound, Conflict):
                self.store.delete("Secret", namespace, _md(secret, "name"), uid=_md(secret, "uid") or None)
            return
        needs = self._needs(secret)
        if not needs:
            return
        if "token" in needs:
            token = self.signer.sign(legacy.claims(sa, _md(secret, "name")))
            needs["token"] = base64.b64encode(token.encode("ascii")).decode("ascii")
        md = dict(secret.get("metadata") or {})
        md["annotations"] = {**annotations, legacy.NAME_ANNOTATION: _md(sa, "name"),
                             legacy.UID_ANNOTATION: _md(sa, "uid")}
        # the Secret as read, resourceVersion included: a writer in between wins (Conflict), as upstream's
        # check of the live Secret's resourceVersion against the cached one
        with contextlib.suppress(NotFound, Conflict):
            self.store.update({**secret, "metadata": md, "data": {**(secret.get("data") or {}), **needs}})

    def account_deleted(self, sa: Mapping[str, Any]) -> None:
        """syncServiceAccount for a gone account: delete its token Secrets (deleteTokens)."""
        namespace = _md(sa, "namespace")
        if self._account(namespace, _md(sa, "name"), _md(sa, "uid")) is not None:
            return
        for secret in self.store.scan("Secret", namespace):
            if legacy.is_token_secret_of(secret, sa):
                with contextlib.suppress(NotFound, Conflict):
                    self.store.delete("Secret", namespace, _md(secret, "name"), uid=_md(secret, "uid") or None)

    def secret_deleted(self, secret: Mapping[str, Any]) -> None:
        """removeSecretReference: the account's `secrets` no longer lists a deleted token Secret."""
        if secret.get("type") != legacy.SECRET_TYPE:
            return
        annotations = _annotations(secret)
        namespace, gone = _md(secret, "namespace"), _md(secret, "name")
        sa = self._account(namespace, annotations.get(legacy.NAME_ANNOTATION) or "",
                           annotations.get(legacy.UID_ANNOTATION) or "")
        if sa is None:
            return
        refs = sa.get("secrets") or []
        kept = [r for r in refs if not (isinstance(r, Mapping) and r.get("name") == gone)]
        if len(kept) != len(refs):
            with contextlib.suppress(NotFound, Conflict):
                self.store.update({**sa, "secrets": kept})

    def sync_all(self) -> None:
        for secret in self.store.scan("Secret"):
            self.sync_secret(secret)

    async def run(self) -> None:
        """Follow service accounts and secrets from any writer."""
        async with self.store.watch(KINDS) as watch:
            self.sync_all()
            async for ev in watch:
                try:
                    if ev.type == RESYNC:  # the watch fell behind: look at everything again
                        self.sync_all()
                    elif ev.object.get("kind") == "Secret":
                        if ev.type == DELETED:
                            self.secret_deleted(ev.object)
                        else:
                            self.sync_secret(ev.object)
                    elif ev.type == DELETED:
                        self.account_deleted(ev.object)
                    else:  # a new account (or its uid changed): Secrets that waited for it
                        for secret in self.store.scan("Secret", _md(ev.object, "namespace")):
                            if _annotations(secret).get(legacy.NAME_ANNOTATION) == _md(ev.object, "name"):
                                self.sync_secret(secret)
                except Exception:  # one bad object never ends the controller
                    logger.exception("token controller sync failed")
