"""The identities the daemon hands out: a node's and a spawned plugin's (who each is, not what it may do).

Why spelled once: the credentials the daemon issues (node certificates, certs.issue_client_cert;
plugin service-account tokens, apiserver/plugin_credentials.py), the kubeconfigs it writes, and the
authorizers that decide on these names must agree on them. A node is `system:node:NAME` in
`system:nodes`, as kubelet client certificates are. A plugin process is the service account
`kube-system/nodeagent-plugin-NAME` (`system:serviceaccount:kube-system:nodeagent-plugin-NAME` in
`system:serviceaccounts` and `system:serviceaccounts:kube-system`, the groups upstream's service
account authenticator gives: serviceaccount.MakeUsername/MakeGroupNames); kube-system because a
driver of the node is cluster infrastructure, as kubeadm's and the DRA example driver's are.
Pure.
"""

from __future__ import annotations

import re

from nodeagent.apiserver.authn.user import (
    NODE_USER_PREFIX,
    NODES_GROUP,
    SERVICE_ACCOUNT_PREFIX,
    SERVICE_ACCOUNTS_GROUP,
    UserInfo,
)

PLUGIN_NAMESPACE = "kube-system"
PLUGIN_PREFIX = "nodeagent-plugin-"
_NOT_DNS = re.compile(r"[^a-z0-9-]+")


def node_user(node: str) -> UserInfo:
    return UserInfo(NODE_USER_PREFIX + node, groups=(NODES_GROUP,))


def service_account_user(namespace: str, name: str) -> UserInfo:
    return UserInfo(f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
                    groups=(SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}"))


def plugin_account(plugin: str) -> str:
    """The service account name of a spawned plugin (`fake-dra@node-1` → nodeagent-plugin-fake-dra-node-1):
    a DNS label, lowercase, at most 63 characters."""
    label = _NOT_DNS.sub("-", plugin.lower()).strip("-") or "plugin"
    return (PLUGIN_PREFIX + label)[:63].rstrip("-")


def plugin_user(plugin: str) -> UserInfo:
    return service_account_user(PLUGIN_NAMESPACE, plugin_account(plugin))
