"""The identity of a request's sender, as k8s.io/apiserver's user.Info carries it.

Pure data: authenticators build it, authorizers and admission read it, audit and logs print it.
The well-known names are upstream's (k8s.io/apiserver/pkg/authentication/user), spelled once here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

ANONYMOUS = "system:anonymous"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ALL_AUTHENTICATED = "system:authenticated"
SYSTEM_PRIVILEGED_GROUP = "system:masters"
NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
KUBE_SCHEDULER = "system:kube-scheduler"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
APISERVER_USER = "system:apiserver"


@dataclass(frozen=True)
class UserInfo:
    """One authenticated (or anonymous) identity: name, uid, groups and extra, as user.DefaultInfo."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def node_name(self) -> str | None:
        """The node this identity is, when it is a node's (system:node:NAME in system:nodes), else None."""
        if self.name.startswith(NODE_USER_PREFIX) and NODES_GROUP in self.groups:
            return self.name[len(NODE_USER_PREFIX):] or None
        return None


def anonymous() -> UserInfo:
    """The identity of a request that carried no credential (the anonymous authenticator's answer)."""
    return UserInfo(ANONYMOUS, groups=(ALL_UNAUTHENTICATED,))
