"""The validatingadmissionpolicy-status controller: writes each ValidatingAdmissionPolicy's
status.observedGeneration and status.typeChecking, as kube-controller-manager's does
(pkg/controller/validatingadmissionpolicystatus/controller.go, v1.37.2).

Why in the embedded control plane: kubectl and policy authors read status.typeChecking to learn that an
expression refers to a field the matched kinds do not have or applies an operator to the wrong types;
without kube-controller-manager nothing writes it. For each policy whose metadata.generation is above
status.observedGeneration it runs the type check (typecheck.py) and server-side-applies the status
subresource with field manager `validatingadmissionpolicy-status`, force, as upstream's ApplyStatus
does (no warnings: an empty `typeChecking: {}`). Switched off with controlPlane.controllers
(`-validatingadmissionpolicy-status-controller`) so the real kube-controller-manager can take over;
both write the same fields under the same manager. Runs in the API server process, which holds the
served schemas it checks against.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nodeagent.apiserver.catalog import Catalog
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.options import WriteOptions
from nodeagent.apiserver.registry import APPLY_PATCH, Registry
from nodeagent.store import RESYNC, ObjectStore

if TYPE_CHECKING:
    from nodeagent.apiserver.policy.typecheck import TypeChecker

logger = logging.getLogger(__name__)

CONTROLLER_NAME = "validatingadmissionpolicy-status"
"""The controller's name upstream, which is also its field manager."""
KIND = "ValidatingAdmissionPolicy"
GROUP, VERSION, PLURAL = "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"


class PolicyStatusController:
    def __init__(self, store: ObjectStore, registry: Registry, catalog: Catalog) -> None:
        self.store = store
        self.registry = registry
        self.catalog = catalog
        self._checker: TypeChecker | None = None

    @property
    def checker(self) -> TypeChecker:
        """The type checker, built at the first policy to check: it brings the CEL checker and parser
        (~80 ms of imports), which a start with no policy to check does not need (issue 25: restart to
        ready)."""
        if self._checker is None:
            from nodeagent.apiserver.policy.typecheck import TypeChecker

            self._checker = TypeChecker(self.catalog, lambda: self.registry.defs)
        return self._checker

    def status_of(self, policy: Mapping[str, Any]) -> dict[str, Any] | None:
        """The status to apply, or None when status.observedGeneration is current (reconcile)."""
        generation = int((policy.get("metadata") or {}).get("generation") or 0)
        observed = int((policy.get("status") or {}).get("observedGeneration") or 0)
        if generation <= observed:
            return None
        warnings = [{"fieldRef": w.field_ref, "warning": w.warning} for w in self.checker.check(policy)]
        return {"observedGeneration": generation,
                "typeChecking": {"expressionWarnings": warnings} if warnings else {}}

    def sync(self, name: str) -> None:
        """Reconcile one policy; a failed write is logged and left to the policy's next event."""
        policy = self.store.peek(KIND, "", name)
        if policy is None:
            return
        status = self.status_of(policy)
        if status is None:
            return
        res = self.catalog.find(GROUP, VERSION, PLURAL)
        if res is None:
            return
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": {"name": name}, "status": status}
        try:
            self.registry.patch(res, "", name, "status", APPLY_PATCH, body,
                                WriteOptions(field_manager=CONTROLLER_NAME, force=True))
        except APIError as err:
            if err.code != 404:
                logger.warning("validating admission policy status not written policy=%s err=%s", name, err)

    def sync_all(self) -> None:
        for policy in self.store.scan(KIND):
            self.sync(str(policy["metadata"]["name"]))

    async def run(self) -> None:
        """Follow the policies from any writer (an add or update enqueues, as upstream's informer handler)."""
        async with self.store.watch((KIND,)) as watch:
            self.sync_all()
            async for ev in watch:
                if ev.type == RESYNC:
                    self.sync_all()
                    continue
                if ev.type == "DELETED":
                    continue
                self.sync(str((ev.object.get("metadata") or {}).get("name") or ""))
