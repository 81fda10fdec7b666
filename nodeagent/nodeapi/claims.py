"""The DRA manager's ClaimSource through the node's API port.

Exists because the DRA manager reads claims synchronously while its pod is being prepared:
in process the store's committed objects are read directly; over the network the
claims come from the remote claim cache (a reflector over ResourceClaims, topped up by GETs)
and, at each prepare, from a GET as the kubelet's (`fetch_claim`), and the pod's
resourceClaimStatuses from the node sync's view of its pods.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from nodeagent.objects.pod.model import Pod


class PodObjects(Protocol):
    def pod_object(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...


class NodeClaims:
    """ClaimSource: claims from `get_claim`, the pod's claim statuses from the node sync (attached later)."""

    def __init__(self, get_claim: Callable[[str, str], Mapping[str, Any] | None],
                 get_pod: Callable[[str, str], Mapping[str, Any] | None] | None = None, *,
                 fetch: Callable[[str, str], Awaitable[Mapping[str, Any] | None]] | None = None) -> None:
        self._get_claim = get_claim
        self._get_pod = get_pod
        self._fetch = fetch  # the API server's claim now (a GET); None: `get_claim` is current (in process)
        self._pods: PodObjects | None = None

    def attach(self, pods: PodObjects) -> None:
        self._pods = pods

    def get_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._get_claim(namespace, name)

    async def fetch_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        if self._fetch is None:
            return self._get_claim(namespace, name)
        return await self._fetch(namespace, name)

    def pod_claim_names(self, pod: Pod) -> Sequence[tuple[str, str]]:
        if self._get_pod is not None:
            stored = self._get_pod(pod.namespace, pod.name) or {}
        else:
            stored = (self._pods.pod_object(pod.namespace, pod.name) if self._pods is not None else None) or {}
        generated = {
            str(s.get("name")): str(s.get("resourceClaimName") or "")
            for s in (stored.get("status") or {}).get("resourceClaimStatuses") or []
        }
        return [
            (rc.name, rc.resource_claim_name or generated.get(rc.name, ""))
            for rc in pod.resource_claims
        ]
