"""admin GetNode over a real socket answers typed fields (NodeView), not JSON text in a string."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nodeagent.admin.service import services
from nodeagent.apis.admin.v1 import admin_pb2, admin_pb2_grpc
from nodeagent.rpc.server import UnixServer, channel

pytestmark = pytest.mark.rpc

NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "node-a", "labels": {"kubernetes.io/hostname": "node-a"},
                 "creationTimestamp": "2026-01-02T03:04:05Z"},
    "spec": {},
    "status": {
        "capacity": {"cpu": "8", "memory": "32Gi", "example.com/gpu": "4"},
        "allocatable": {"cpu": "7", "memory": "30Gi", "example.com/gpu": "4"},
        "conditions": [
            {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
             "lastTransitionTime": "2026-01-02T03:04:05Z"},
            {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "message": "kubelet is posting ready status", "lastTransitionTime": "2026-01-02T03:04:05Z"},
        ],
        "nodeInfo": {"kubeletVersion": "v1.37.2", "operatingSystem": "linux", "architecture": "amd64",
                     "kernelVersion": "6.1"},
    },
}


class Backend:
    def describe(self, kind: str, namespace: str, name: str) -> str:
        return ""

    def node(self) -> Mapping[str, Any]:
        return NODE

    async def set_device_health(self, resource: str, device: str, health: str) -> None:
        return None


async def test_get_node_is_typed(short_dir: Path) -> None:
    server = UnixServer(short_dir / "admin.sock", services(Backend()), peer_check=True, what="admin socket")
    await server.start()
    try:
        async with channel(short_dir / "admin.sock") as ch:
            resp = await admin_pb2_grpc.AdminStub(ch).GetNode(admin_pb2.GetNodeRequest(), timeout=5)
    finally:
        await server.stop(grace=0.1)
    node = resp.node
    assert node.name == "node-a"
    assert dict(node.labels) == {"kubernetes.io/hostname": "node-a"}
    assert node.creation_timestamp == "2026-01-02T03:04:05Z"
    assert dict(node.capacity) == {"cpu": "8", "memory": "32Gi", "example.com/gpu": "4"}
    assert dict(node.allocatable)["cpu"] == "7"
    assert [(c.type, c.status, c.reason) for c in node.conditions] == [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"), ("Ready", "True", "KubeletReady")]
    assert node.conditions[1].message == "kubelet is posting ready status"
    assert (node.node_info.kubelet_version, node.node_info.architecture) == ("v1.37.2", "amd64")
    assert "node_json" not in admin_pb2.GetNodeResponse.DESCRIPTOR.fields_by_name
