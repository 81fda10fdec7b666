"""The Kubernetes API in memory for the netdev driver's tests: slices published, claims served.

The kit's MemoryAPI (an APIPort) plus the netdev shortcuts: `claim()` stores an allocated
claim of this driver, `slice_devices()` reads back the published devices by name.
"""

from __future__ import annotations

from typing import Any

from plugins.dra_kit.model import ClaimRef
from plugins.dra_kit.publisher import default_node_name
from tests.unit.dra_kit.memory_api import MemoryAPI

DRIVER = "netdev.nodeagent.dev"


class MemoryAdmin(MemoryAPI):
    """APIPort in memory (the name stays: tests/linux uses it too). Its Node is the host's, the
    drivers' default node name."""

    def __init__(self, node: str | None = None) -> None:
        super().__init__(node or default_node_name())

    def claim(self, uid: str, name: str, devices: list[str], pool: str = "netdev") -> ClaimRef:
        self.put_claim({
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "status": {"allocation": {"devices": {"results": [
                {"request": "nic", "driver": DRIVER, "pool": pool, "device": d} for d in devices]}}},
        })
        return ClaimRef("default", uid, name)

    def slice_devices(self) -> dict[str, dict[str, Any]]:
        slices = list(self.slices.values())
        assert len(slices) <= 1
        return {d["name"]: d["attributes"] for s in slices for d in s["spec"]["devices"]}
