"""What a spawned plugin's identity may write beyond its RBAC verbs: ResourceSlices of its own node only.

Why: RBAC grants verbs on a resource, not on the node an object names, so nodeagent:plugin's
`create resourceslices` would let one node's driver publish (or delete) slices for every node. On a
real cluster dra-example-driver's chart closes that hole with a ValidatingAdmissionPolicy
(resourceslices-policy-dra-example-driver): for its service account, the node named by the token's
authentication.kubernetes.io/node-name extra must be the slice's spec.nodeName (the old object's on
a delete). nodeagent applies the same rule in process to its plugin identities (authn/identities.py),
whose tokens it binds to their node (apiserver/plugin_credentials.py), and refuses as kube-apiserver
refuses for such a policy (422 Invalid, `ValidatingAdmissionPolicy '...' with binding '...' denied
request: ...`, the chart's messages; compared with the real kube-apiserver running the chart's policy
in test_kube_apiserver_sa_tokens.py: codes, texts and details identical). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.authn import identities
from nodeagent.apiserver.authn.serviceaccount import NODE_NAME
from nodeagent.apiserver.authn.user import SERVICE_ACCOUNT_PREFIX, UserInfo

POLICY = "resourceslices-policy-nodeagent-plugin"
BINDING = "resourceslices-policy-nodeagent-plugin"
_PREFIX = f"{SERVICE_ACCOUNT_PREFIX}{identities.PLUGIN_NAMESPACE}:{identities.PLUGIN_PREFIX}"


def restricted(user: UserInfo, group: str, plural: str) -> bool:
    """Whether `user` writing `group`/`plural` is judged here (the policy's match constraints)."""
    return group == "resource.k8s.io" and plural == "resourceslices" and user.name.startswith(_PREFIX)


def refusal(user: UserInfo, obj: Mapping[str, Any] | None) -> str:
    """The policy's message for `user` writing (or deleting) slice `obj`, "" when allowed."""
    extra = user.extra.get(NODE_NAME) or ()
    user_node = extra[0] if extra else ""
    if not user_node:
        return ("no node association found for user, this user must run in a pod on a node and "
                "ServiceAccountTokenPodNodeInfo must be enabled")
    object_node = str(((obj or {}).get("spec") or {}).get("nodeName") or "")
    if user_node == object_node:
        return ""
    what = "cluster resourceslices" if not object_node else f"resourceslices on node '{object_node}'"
    return f"this user running on node '{user_node}' may not modify {what}"


def denied_message(name: str, message: str) -> str:
    """kube-apiserver's text for a request a ValidatingAdmissionPolicy denied."""
    return (f'resourceslices.resource.k8s.io "{name}" is forbidden: ValidatingAdmissionPolicy \'{POLICY}\' with '
            f"binding '{BINDING}' denied request: {message}")
