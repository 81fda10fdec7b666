"""kube-apiserver's authorizer chain for `--authorization-mode=Node,RBAC`: the privileged-group
authorizer (system:masters may do anything), then the Node authorizer, then RBAC; the first to
allow (or deny) decides, and the reasons of those without an opinion are joined as upstream's
union authorizer joins them (`<name>: <reason>`, one a line).

Why a chain object: the request path, the access reviews (SubjectAccessReview and its local and
self forms) and the rules review all ask the same authorizers. Pure: no I/O beyond the reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.authn.user import SYSTEM_PRIVILEGED_GROUP, UserInfo
from nodeagent.apiserver.authz.attributes import Attributes
from nodeagent.apiserver.authz.node import NodeAuthorizer, node_identity
from nodeagent.apiserver.authz.rbac import ALLOW, DENY, NO_OPINION, RBACAuthorizer, Reader

__all__ = ["ALLOW", "DENY", "NO_OPINION", "Authorizer", "Decision"]


@dataclass(frozen=True)
class Decision:
    """An authorizer's answer: allow, deny or no-opinion (a refusal), with upstream's reason text."""

    decision: str
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision == ALLOW


class Authorizer:
    """Node,RBAC over the objects a reader holds (the object store in process)."""

    def __init__(self, reader: Reader) -> None:
        self.node = NodeAuthorizer(reader)
        self.rbac = RBACAuthorizer(reader)

    def authorize(self, attrs: Attributes) -> Decision:
        if SYSTEM_PRIVILEGED_GROUP in attrs.user.groups:
            return Decision(ALLOW)
        reasons: list[str] = []
        for name, authorizer in (("node", self.node), ("rbac", self.rbac)):
            decision, reason = authorizer.authorize(attrs)
            if reason:
                reasons.append(f"{name}: {reason}")
            if decision in (ALLOW, DENY):
                return Decision(decision, reason)
        return Decision(NO_OPINION, "\n".join(reasons))

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Mapping[str, Any]], list[str]]:
        """Every rule `user` holds in `namespace` and the errors met (the union's RulesFor):
        system:masters everything, a node the system:node role's static rules, then RBAC's."""
        rules: list[Mapping[str, Any]] = []
        if SYSTEM_PRIVILEGED_GROUP in user.groups:
            rules += [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                      {"verbs": ["*"], "nonResourceURLs": ["*"]}]
        if node_identity(user)[1]:
            rules += self.node.rules
        found, errors = self.rbac.rules_for(user, namespace)
        return rules + list(found), errors
