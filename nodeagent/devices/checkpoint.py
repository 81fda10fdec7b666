"""The device manager's durable state in the daemon's StateDB (bucket "device_manager").

The kubelet writes kubelet_internal_checkpoint; we keep the same content as versioned
JSON of our own model: one key per pod (`pod/<uid>`: container -> resource -> device ids
+ the Allocate answer) and `registered` (resource -> healthy device ids, so a restart
knows which resources existed). Writes commit before returning, so a pod is admitted
only once its devices are durable. This module never holds protobuf messages.

A pod gone from the node moves to `gone/<uid>` (same document, NUMA nodes resolved) until the
next UpdateAllocatedDevices point: the kubelet's podDevices keeps a gone pod's devices until then,
its checkpoint file with them, and a restarted kubelet reads them back (readCheckpoint), so a
restarted nodeagent must too. They hold nothing: no admission, allocatable or metric counts them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.devices.model import ContainerAllocation, ContainerRef, ResourceAllocation
from nodeagent.devices.state import PodAllocations
from nodeagent.state import batch
from nodeagent.state.db import StateDB

logger = logging.getLogger(__name__)

BUCKET = "device_manager"
VERSION = 1
_POD_PREFIX = "pod/"
_GONE_PREFIX = "gone/"
_REGISTERED = "registered"


@dataclass(frozen=True)
class Restored:
    pods: tuple[PodAllocations, ...]
    registered: Mapping[str, tuple[str, ...]]
    gone: tuple[PodAllocations, ...] = ()  # pods gone since the last UpdateAllocatedDevices point


def _pod_doc(pod: PodAllocations) -> dict[str, Any]:
    return {
        "version": VERSION,
        "namespace": pod.namespace,
        "name": pod.name,
        "containers": {
            cname: {
                res: {
                    "device_ids": list(a.device_ids),
                    "numa": {i: list(n) for i, n in a.numa.items()},
                    "response": a.response.to_json(),
                }
                for res, a in per_res.items()
            }
            for cname, per_res in pod.containers.items()
        },
    }


def _pod_from_doc(uid: str, doc: Mapping[str, Any]) -> PodAllocations:
    pod = PodAllocations(uid, str(doc.get("namespace", "")), str(doc.get("name", "")))
    for cname, per_res in doc.get("containers", {}).items():
        pod.containers[cname] = {
            res: ResourceAllocation(
                res,
                tuple(str(i) for i in a.get("device_ids", [])),
                ContainerAllocation.from_json(a.get("response", {})),
                {str(i): tuple(int(n) for n in ns) for i, ns in a.get("numa", {}).items()},
            )
            for res, a in per_res.items()
        }
    return pod


class Checkpoint:
    def __init__(self, db: StateDB) -> None:
        self._db = db

    def load(self) -> Restored:
        pods: list[PodAllocations] = []
        gone: list[PodAllocations] = []
        registered: dict[str, tuple[str, ...]] = {}
        for key, doc in self._db.items(BUCKET):
            if key == _REGISTERED:
                registered = {str(r): tuple(ids) for r, ids in dict(doc).items()}
                continue
            prefix, into = ((_POD_PREFIX, pods) if key.startswith(_POD_PREFIX)
                            else (_GONE_PREFIX, gone) if key.startswith(_GONE_PREFIX) else ("", None))
            if into is None:
                continue
            if not isinstance(doc, dict) or doc.get("version") != VERSION:
                logger.warning("skipping device checkpoint entry of unknown version key=%s", key)
                continue
            into.append(_pod_from_doc(key[len(prefix):], doc))
        return Restored(tuple(pods), registered, tuple(gone))

    def save_pod(self, pod: PodAllocations) -> None:
        """Commit the pod's allocations, or stage them in the admission's batch (state/batch.py),
        where the record is encoded once, at commit, with all of its containers."""
        key = _POD_PREFIX + pod.uid
        batch.write(self._db, (BUCKET, key), lambda txn: txn.put(BUCKET, key, _pod_doc(pod)))

    def delete_pods(self, uids: Iterable[str]) -> None:
        with self._db.transaction() as txn:
            for uid in uids:
                txn.delete(BUCKET, _POD_PREFIX + uid)

    def save_gone(self, pods: Iterable[PodAllocations]) -> None:
        """Keep gone pods' devices (their NUMA nodes resolved) until `forget_gone`; written before
        the pods' own records are deleted, so a crash between keeps both, never neither."""
        with self._db.transaction() as txn:
            for pod in pods:
                txn.put(BUCKET, _GONE_PREFIX + pod.uid, _pod_doc(pod))

    def forget_gone(self, uids: Iterable[str]) -> None:
        """The UpdateAllocatedDevices point: the gone pods' devices are forgotten for good."""
        with self._db.transaction() as txn:
            for uid in uids:
                txn.delete(BUCKET, _GONE_PREFIX + uid)

    def save_registered(self, registered: Mapping[str, Iterable[str]]) -> None:
        self._db.put(BUCKET, _REGISTERED, {r: sorted(ids) for r, ids in registered.items()})


def ref_of(pod: PodAllocations, container: str) -> ContainerRef:
    return ContainerRef(pod.uid, container, pod.namespace, pod.name)
