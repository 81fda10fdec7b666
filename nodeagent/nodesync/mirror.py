"""Mirror pods: the API's read-only copy of each static pod this node runs.

The kubelet's pkg/kubelet/pod/mirror_client.go (CreateMirrorPod, DeleteMirrorPod) with the
kubelet's rule for when (kubelet.go: a static pod gets its mirror pod before its status is
written, and mirror pods whose static pod is gone are deleted). The mirror pods this node keeps
are tracked: found in the first list (annotated kubernetes.io/config.mirror, bound here), added
as they are made, so no pass scans every pod of the API for orphans.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Set
from typing import Any

from nodeagent.errors import NodeAgentError, NotFound
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.objects.pod.manifest import pod_to_manifest
from nodeagent.objects.pod.model import Pod

logger = logging.getLogger(__name__)

MIRROR = "kubernetes.io/config.mirror"


class MirrorPods:
    """The mirror pods of this node's static pods: made when missing, deleted once orphaned."""

    def __init__(self, api: NodeAPI, api_pod: Callable[[str, str], Mapping[str, Any] | None]) -> None:
        self._api = api
        self._api_pod = api_pod  # (namespace, name) -> the API's pod as last received (the pod source's)
        self._keys: set[str] = set()  # namespace/name of the mirror pods this node keeps

    def found(self, key: str) -> None:
        """A mirror pod of this node in a complete list (namespace/name): kept, or deleted once orphaned."""
        self._keys.add(key)

    async def ensure(self, pod: Pod) -> bool:
        """The static pod's mirror pod exists (created if not); False when that could not be told or done."""
        self._keys.add(pod.key)
        try:
            if (self._api_pod(pod.namespace, pod.name) is not None
                    or await self._api.get_pod(pod.namespace, pod.name) is not None):
                return True
        except NodeAgentError as err:
            logger.info("mirror pod not checked pod=%s err=%s", pod.key, err)
            return False
        doc = pod_to_manifest(pod)
        meta = doc["metadata"]
        meta.pop("uid", None)
        meta.pop("creationTimestamp", None)
        meta.setdefault("annotations", {})[MIRROR] = pod.annotations.get("kubernetes.io/config.hash", pod.uid)
        doc.pop("status", None)
        try:
            await self._api.create_pod(doc)
        except NodeAgentError as err:
            logger.warning("mirror pod not created pod=%s err=%s", pod.key, err)
            return False
        return True

    async def delete_orphans(self, static_keys: Set[str]) -> bool:
        """Delete the kept mirror pods whose static pod (namespace/name in `static_keys`) is gone;
        False when one could not be deleted (tried again on the next pass)."""
        ok = True
        for key in sorted(self._keys - static_keys):
            namespace, _, name = key.partition("/")
            try:
                await self._api.delete_pod(namespace, name)
            except NotFound:
                pass
            except NodeAgentError as err:
                ok = False
                logger.info("mirror pod not deleted pod=%s err=%s", key, err)
                continue
            self._keys.discard(key)
        return ok
