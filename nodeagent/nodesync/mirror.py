"""Mirror pods: the API's read-only copy of each static pod this node runs.

The kubelet's pkg/kubelet/pod/mirror_client.go (CreateMirrorPod, DeleteMirrorPod) with the
kubelet's rule for when (kubelet.go: a static pod gets its mirror pod before its status is
written, and mirror pods whose static pod is gone are deleted). The mirror pods this node keeps
are tracked: found in the first list (annotated kubernetes.io/config.mirror, bound here), added
as they are made, so no pass scans every pod of the API for orphans.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping, Set
from typing import Any

from nodeagent.errors import AlreadyExists, NodeAgentError, NotFound
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.objects.pod.manifest import pod_to_manifest
from nodeagent.objects.pod.model import Pod

logger = logging.getLogger(__name__)

MIRROR = "kubernetes.io/config.mirror"
SEEN = "kubernetes.io/config.seen"


def go_rfc3339nano(seconds: float) -> str:
    """Go's time.Format(time.RFC3339Nano) of a UTC time: the fraction without its trailing zeros."""
    stamp = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    fraction = f"{stamp.microsecond * 1000:09d}".rstrip("0")
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


class MirrorPods:
    """The mirror pods of this node's static pods: made when missing, deleted once orphaned."""

    def __init__(self, api: NodeAPI, api_pod: Callable[[str, str], Mapping[str, Any] | None],
                 node_name: str = "", now: Callable[[], float] = time.time) -> None:
        """`node_name`: the node whose mirror pods these are (their controlling owner); `now`: wall
        clock seconds, for the config.seen annotation."""
        self._node_name = node_name
        self._now = now
        self._api = api
        self._api_pod = api_pod  # (namespace, name) -> the API's pod as last received (the pod source's)
        self._keys: set[str] = set()  # namespace/name of the mirror pods this node keeps

    def found(self, key: str) -> None:
        """A mirror pod of this node in a complete list (namespace/name): kept, or deleted once orphaned."""
        self._keys.add(key)

    async def ensure(self, pod: Pod) -> bool:
        """The static pod's mirror pod exists (created if not); False when that could not be done.

        Whether it exists is what the node's pod source has received, never a GET: the kubelet looks
        in its pod manager (its watch of the pods bound to it) and creates the mirror pod when it is
        not there (kubelet.go syncPod, CreateMirrorPod). A GET of a pod not bound to the node yet is
        refused by kube-apiserver's Node authorizer (403 "no relationship found between node ... and
        this object"), so a node joined to a real cluster never made its mirror pods. A create that
        meets an existing pod (AlreadyExists: the source has not caught up yet) is tried again on
        the next pass, when the source has it."""
        self._keys.add(pod.key)
        if self._api_pod(pod.namespace, pod.name) is not None:
            return True
        doc = pod_to_manifest(pod)
        meta = doc["metadata"]
        meta.pop("uid", None)
        meta.pop("creationTimestamp", None)
        annotations = meta.setdefault("annotations", {})
        annotations[MIRROR] = pod.annotations.get("kubernetes.io/config.hash", pod.uid)
        # The kubelet's config source stamps every pod it first sees (config.go recordFirstSeenTime) and
        # the mirror pod copies the static pod's annotations; nodeagent stamps the mirror pod when it
        # makes it (the static pod's own annotations stay as the file's content gives them).
        annotations.setdefault(SEEN, go_rfc3339nano(self._now()))
        doc.pop("status", None)
        if self._node_name:
            # MirrorPodNodeRestriction: kube-apiserver's NodeRestriction admits a node's mirror pod only
            # with the node as its controlling owner (mirror_client.go CreateMirrorPod sets it from the
            # node's uid; "can only create pods with an owner reference set to itself" otherwise)
            try:
                node = await self._api.get_node(self._node_name)
            except NodeAgentError as err:
                logger.warning("mirror pod not created: failed to get node UID pod=%s err=%s", pod.key, err)
                return False
            uid = str(((node or {}).get("metadata") or {}).get("uid") or "")
            if not uid:
                logger.warning("mirror pod not created: failed to get node UID pod=%s err=node not found", pod.key)
                return False
            meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": self._node_name, "uid": uid,
                                        "controller": True}]
        try:
            await self._api.create_pod(doc)
        except AlreadyExists:
            logger.info("mirror pod not created: a pod of that name exists, looked at again on the next "
                        "pass pod=%s", pod.key)
            return False
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
            # mirror_client.go DeleteMirrorPod: at once (grace period 0) and only the pod seen (uid
            # precondition). With the pod's own grace period kube-apiserver only marked it Terminating,
            # and no node finishes a mirror pod's termination: it stayed for good on a joined node.
            seen = self._api_pod(namespace, name) or {}
            uid = str((seen.get("metadata") or {}).get("uid") or "") or None
            try:
                await self._api.delete_pod(namespace, name, uid, grace_period=0)
            except NotFound:
                pass
            except NodeAgentError as err:
                ok = False
                logger.info("mirror pod not deleted pod=%s err=%s", key, err)
                continue
            self._keys.discard(key)
        return ok
