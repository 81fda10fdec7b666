"""What the Pods API serves, as plain data: watch events, the diff that makes them, the errors.

Why pure: the event rules are the kubelet's (pkg/kubelet/apis/pods/server.go) and are worth
testing without sockets: ADDED when a pod appears, MODIFIED when anything of it changes,
DELETED with only name, namespace and uid left; ListPods and the initial watch list sorted by
uid; FAILED_PRECONDITION "Kubelet is initializing" until the node has synced its pods;
NOT_FOUND "pod with UID %s not found" for GetPod. No grpc, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.errors import Exhausted, FailedPrecondition, NotFound

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

# pkg/kubelet/apis/pods/constants.go: the socket, and the limiter duplicated from pod-resources.
SOCKET_DIR = "pods-api"
SOCKET_NAME = "pods-api.sock"
DEFAULT_QPS = 100.0
DEFAULT_BURST = 10
# Events a watch stream may have queued before it is dropped (the kubelet's channel size).
WATCH_BUFFER = 100

Doc = Mapping[str, Any]


@dataclass(frozen=True)
class PodEvent:
    """One change of the node's pods: type ADDED, MODIFIED or DELETED and the pod as JSON."""

    type: str
    uid: str
    pod: Doc


class NotSynced(FailedPrecondition):
    """The node has not synced its pods yet: the API serves no partial data."""

    def __init__(self) -> None:
        super().__init__("Kubelet is initializing")


class WatchDropped(Exhausted):
    """A watch stream fell WATCH_BUFFER events behind and was dropped."""

    def __init__(self) -> None:
        super().__init__("watch client channel closed")


def pod_not_found(uid: str) -> NotFound:
    return NotFound(f"pod with UID {uid} not found")


def deleted_stub(pod: Doc) -> dict[str, Any]:
    """What a DELETED event carries: the pod's name, namespace and uid, nothing else."""
    meta = pod.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "namespace", "uid") if meta.get(k)}}


def diff(old: Mapping[str, Doc], new: Mapping[str, Doc]) -> list[PodEvent]:
    """The events that turn `old` into `new` (both uid -> pod), in uid order."""
    events = []
    for uid in sorted(old.keys() | new.keys()):
        before, after = old.get(uid), new.get(uid)
        if after is None:
            assert before is not None
            events.append(PodEvent(DELETED, uid, deleted_stub(before)))
        elif before is None:
            events.append(PodEvent(ADDED, uid, after))
        elif before != after:
            events.append(PodEvent(MODIFIED, uid, after))
    return events
