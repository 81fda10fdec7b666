"""Every namespace's `default` ServiceAccount and `kube-root-ca.crt` ConfigMap, kept as upstream keeps them.

Why: kube-apiserver's ServiceAccount admission refuses a pod whose service account does not exist, and
every pod without one uses `default`; kube-controller-manager's serviceaccount controller creates that
account in each namespace (again when deleted) and its root-ca-cert-publisher the CA bundle ConfigMap
the pods' projected volume names (content restored when changed, again when deleted). The embedded
control plane does both, switched off one by one with controlPlane.controllers (serviceaccount,
root-ca-cert-publisher) so the real kube-controller-manager can take over.

Intended difference: upstream's controllers act a moment after the namespace appears and the admission
plugin retries its lookup of `default` for about a second meanwhile; here the companions are written in
the namespace's own create (Registry.after_create), so there is no such window, and a watch restores
them afterwards.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import AlreadyExists, Conflict, NotFound
from nodeagent.objects import serviceaccount as sa
from nodeagent.store import RESYNC, ObjectStore, Transaction

logger = logging.getLogger(__name__)

KINDS = ("Namespace", "ServiceAccount", "ConfigMap")


class NamespaceCompanions:
    def __init__(self, store: ObjectStore, ca_pem: str, *, service_accounts: bool, root_ca: bool) -> None:
        self.store = store
        self.ca_pem = ca_pem
        self.service_accounts = service_accounts
        self.root_ca = root_ca

    @property
    def enabled(self) -> bool:
        return self.service_accounts or self.root_ca

    def ensure(self, tx: Transaction, namespace: Mapping[str, Any]) -> None:
        """Create (or restore) the companions of an active namespace in `tx`."""
        md = namespace.get("metadata") or {}
        name = str(md.get("name") or "")
        if not name or md.get("deletionTimestamp"):
            return
        if self.service_accounts and tx.peek("ServiceAccount", name, sa.DEFAULT) is None:
            tx.create(sa.default_service_account(name))
        if self.root_ca:
            wanted = sa.root_ca_configmap(name, self.ca_pem)
            cur = tx.peek("ConfigMap", name, sa.ROOT_CA_CONFIGMAP)
            if cur is None:
                tx.create(wanted)
            elif cur.get("data") != wanted["data"] or (cur["metadata"].get("annotations") or {}).get(
                    "kubernetes.io/description") != sa.ROOT_CA_DESCRIPTION:
                fixed = dict(cur)
                fixed["data"] = wanted["data"]
                fixed["metadata"] = {**cur["metadata"], "annotations": {
                    **(cur["metadata"].get("annotations") or {}), **wanted["metadata"]["annotations"]}}
                tx.update(fixed)

    def sync(self, namespace: str) -> None:
        """ensure() in a transaction of its own; a race with another writer is left to the next event."""
        ns = self.store.peek("Namespace", "", namespace)
        if ns is None:
            return
        with contextlib.suppress(AlreadyExists, Conflict, NotFound), self.store.transaction() as tx:
            self.ensure(tx, ns)

    def sync_all(self) -> None:
        for ns in self.store.scan("Namespace"):
            self.sync(str(ns["metadata"]["name"]))

    async def run(self) -> None:
        """Follow namespaces, service accounts and config maps from any writer."""
        if not self.enabled:
            return
        async with self.store.watch(KINDS) as watch:
            self.sync_all()
            async for ev in watch:
                if ev.type == RESYNC:  # the watch fell behind: look at everything again
                    self.sync_all()
                    continue
                obj = ev.object
                md = obj.get("metadata") or {}
                if obj.get("kind") == "Namespace":
                    self.sync(str(md.get("name") or ""))
                elif (obj.get("kind") == "ServiceAccount" and md.get("name") == sa.DEFAULT) or \
                        (obj.get("kind") == "ConfigMap" and md.get("name") == sa.ROOT_CA_CONFIGMAP):
                    self.sync(str(md.get("namespace") or ""))
