"""What a kubelet does through the Kubernetes API, and nothing more: the node side's one port.

Exists so the node side (node sync, lease, DRA claim reads, events, slice cleanup) is the
same code whether the API is the embedded object store in this process (nodeapi.inprocess)
or any API server on the network (nodeapi.remote): it never reaches the store directly.
Objects go in and out as plain dicts; errors are nodeagent.errors (NotFound, Conflict,
AlreadyExists, Unavailable) plus `Gone` for a watch whose resourceVersion is too old.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nodeagent.errors import NodeAgentError
from nodeagent.pods.events import Event

LEASE_NAMESPACE = "kube-node-lease"
"""Where node Leases live (upstream corev1.NamespaceNodeLease)."""

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
SYNC = "SYNC"
"""A pod event carrying the complete list of the node's pods (after a start, a 410 or a reconnect):
whatever the node runs that is not in it was deleted meanwhile."""


class Gone(NodeAgentError):
    """410: the resourceVersion a watch started from is too old; list again."""


@dataclass(frozen=True)
class PodEvent:
    type: str  # ADDED | MODIFIED | DELETED | SYNC
    object: Mapping[str, Any] = field(default_factory=dict)
    items: Sequence[Mapping[str, Any]] = ()  # SYNC only: every pod of the node


class PodWatch(Protocol):
    """The node's pods (fieldSelector spec.nodeName=<node>): a SYNC first, then changes.

    Relists (410 Gone, a dropped connection) are the implementation's business: the watcher
    sees another SYNC. `close` ends it."""

    async def next(self) -> PodEvent: ...

    def get_nowait(self) -> PodEvent | None:
        """An event already received, or None."""
        ...

    def close(self) -> None: ...


class NodeAPI(Protocol):
    """The Kubernetes API as the kubelet uses it. Reads return None for an absent object."""

    @property
    def description(self) -> str:
        """Where the API is, for log and status lines ("in process", "https://host:port")."""
        ...

    # Node: registration and status
    async def get_node(self, name: str) -> Mapping[str, Any] | None: ...

    async def create_node(self, node: Mapping[str, Any]) -> Mapping[str, Any]: ...

    async def patch_node_labels(self, name: str, labels: Mapping[str, str | None]) -> None:
        """A merge patch of metadata.labels (None removes a label)."""
        ...

    async def update_node_status(self, name: str, status: Mapping[str, Any]) -> None:
        """Replace the status subresource of the current Node with `status`."""
        ...

    # Lease in kube-node-lease
    async def get_lease(self, name: str) -> Mapping[str, Any] | None: ...

    async def create_lease(self, lease: Mapping[str, Any]) -> Mapping[str, Any]: ...

    async def update_lease(self, lease: Mapping[str, Any]) -> Mapping[str, Any]:
        """Replace, with metadata.resourceVersion as the precondition (Conflict when it moved)."""
        ...

    # Pods
    def watch_pods(self, node_name: str, *, unscheduled: bool = False) -> PodWatch:
        """List and watch the pods bound to `node_name` (and, with `unscheduled`, the pods bound to
        no node yet: only where the node binds pods itself, without a scheduler)."""
        ...

    async def get_pod(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    async def patch_pod_status(self, namespace: str, name: str, uid: str, status: Mapping[str, Any],
                               node_owned: frozenset[str], node_conditions: frozenset[str]) -> None:
        """The kubelet status manager's strategic merge patch of the status subresource: the
        fields in `status` set, the `node_owned` fields absent from it removed, the conditions of
        the `node_conditions` types replaced, the others kept. NotFound when the pod (with this
        uid, unless uid is empty) is gone."""
        ...

    async def create_pod(self, pod: Mapping[str, Any]) -> None:
        """Create a (mirror) pod; AlreadyExists when one of that name exists."""
        ...

    async def delete_pod(self, namespace: str, name: str, uid: str | None = None,
                         grace_period: int | None = None) -> None:
        """Delete a pod, with a uid precondition when given; NotFound when absent. `grace_period`
        is DeleteOptions.gracePeriodSeconds (0: the status manager's final delete of a pod its
        node terminated); None leaves it to the API server (a mirror pod's delete)."""
        ...

    async def bind_pod(self, namespace: str, name: str, node_name: str) -> None:
        """pods/binding: set spec.nodeName of an unscheduled pod."""
        ...

    # Events
    def post_event(self, event: Event) -> None:
        """Queue a core v1 Event for the involved object; written asynchronously, never raises."""
        ...

    # DRA
    async def get_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def watch_claims(self) -> PodWatch:
        """List and watch every ResourceClaim (the events carry claims): for a process that hosts
        many virtual nodes, whose pods wait for their claims' allocation and reservation."""
        ...

    # Many nodes in one process (virtual nodes served by a node process, nodeapi/virtual.py)
    def watch_bound_pods(self) -> PodWatch:
        """List and watch the pods bound to any node (fieldSelector spec.nodeName!=): one watch
        for all the nodes of the process, demultiplexed by spec.nodeName."""
        ...

    async def list_nodes(self, label_selector: str) -> list[Mapping[str, Any]]:
        """The Nodes matching a label selector (`key` or `key=value`)."""
        ...

    async def list_slices(self, label_selector: str) -> list[Mapping[str, Any]]:
        """The ResourceSlices matching a label selector (`key` or `key=value`)."""
        ...

    async def put_slice(self, resource_slice: Mapping[str, Any], field_manager: str) -> None:
        """Create the slice, or replace it when metadata.resourceVersion is given (Conflict when it
        moved); its managedFields record the write as `field_manager`'s."""
        ...

    async def delete_slice(self, name: str) -> None:
        """Delete one ResourceSlice; NotFound when absent."""
        ...

    async def delete_node_slices(self, node_name: str, driver: str | None = None) -> int:
        """DeleteCollection of ResourceSlices by spec.nodeName (and spec.driver when given)."""
        ...

    async def close(self) -> None: ...
