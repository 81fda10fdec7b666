"""Mirror pods as the kubelet makes them on a real kube-apiserver.

Found by the kubelet tier's 50-static-pod: a nodeagent node joined to kube-apiserver v1.37.2 never
made the mirror pod of its static pod. It asked GET for the pod first, which the Node authorizer
refuses for a pod not bound to the node yet (403), and once that was gone its POST lacked the
controlling owner reference to the node that NodeRestriction requires (403 "can only create pods
with an owner reference set to itself"). The kubelet looks in its own pod source and creates the
pod with the node as its owner (mirror_client.go CreateMirrorPod)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from nodeagent.errors import AlreadyExists, NotFound
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.nodesync.mirror import MIRROR, SEEN, MirrorPods
from nodeagent.objects.pod.model import Container, Pod


class API:
    """The NodeAPI calls MirrorPods makes; a GET of a pod fails as the Node authorizer answers it."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str | None, int | None]] = []
        self.exists = False
        self.node: Mapping[str, Any] | None = {"metadata": {"name": "n1", "uid": "node-uid"}}

    async def get_pod(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        raise AssertionError("a node may not GET a pod not bound to it")

    async def get_node(self, name: str) -> Mapping[str, Any] | None:
        assert name == "n1"
        return self.node

    async def create_pod(self, pod: Mapping[str, Any]) -> None:
        if self.exists:
            raise AlreadyExists("pods \"web-n1\" already exists")
        self.created.append(dict(pod))

    async def delete_pod(self, namespace: str, name: str, uid: str | None = None,
                         grace_period: int | None = None) -> None:
        self.deleted.append((f"{namespace}/{name}", uid, grace_period))
        raise NotFound(name)


def _static() -> Pod:
    return Pod(uid="hash-1", name="web-n1", namespace="ns", node_name="n1", source="file",
               annotations={"kubernetes.io/config.hash": "hash-1", "kubernetes.io/config.source": "file"},
               containers=(Container("main"),))


async def test_created_with_the_node_as_controlling_owner_without_a_get() -> None:
    api = API()
    known: dict[tuple[str, str], Mapping[str, Any]] = {}
    mirrors = MirrorPods(cast(NodeAPI, api), lambda ns, name: known.get((ns, name)), "n1", lambda: 1796000000.5)
    assert await mirrors.ensure(_static())
    (doc,) = api.created
    assert doc["metadata"]["annotations"][SEEN] == "2026-11-30T00:53:20.5Z"  # Go's RFC3339Nano
    assert doc["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "node-uid", "controller": True}]
    assert doc["metadata"]["annotations"][MIRROR] == "hash-1"
    known[("ns", "web-n1")] = doc  # the pod source received it: nothing more to do
    assert await mirrors.ensure(_static())
    assert len(api.created) == 1


async def test_an_existing_pod_or_no_node_is_tried_again() -> None:
    api = API()
    mirrors = MirrorPods(cast(NodeAPI, api), lambda ns, name: None, "n1")
    api.exists = True
    assert not await mirrors.ensure(_static())  # the source has not caught up: the next pass sees it
    api.exists, api.node = False, None
    assert not await mirrors.ensure(_static())  # the kubelet's "failed to get node UID"
    assert api.created == []


async def test_an_orphan_is_deleted_at_once_and_only_the_one_seen() -> None:
    """DeleteMirrorPod: grace period 0 and the uid as precondition. With the pod's own grace period a
    real kube-apiserver only marks the mirror pod Terminating and it stays (50-static-pod, joined node)."""
    api = API()
    known: dict[tuple[str, str], Mapping[str, Any]] = {}
    mirrors = MirrorPods(cast(NodeAPI, api), lambda ns, name: known.get((ns, name)), "n1")
    assert await mirrors.ensure(_static())
    known[("ns", "web-n1")] = {"metadata": {"name": "web-n1", "uid": "mirror-uid"}}
    assert await mirrors.delete_orphans({"ns/web-n1"})
    assert api.deleted == []
    assert await mirrors.delete_orphans(set())  # its file is gone
    assert api.deleted == [("ns/web-n1", "mirror-uid", 0)]
