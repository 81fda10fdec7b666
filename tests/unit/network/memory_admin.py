"""An AdminPort in memory for the netdev driver's tests: slices applied, claims served."""

from __future__ import annotations

import json
from typing import Any

from plugins.dra_kit.model import ClaimRef

DRIVER = "netdev.nodeagent.dev"


class MemoryAdmin:
    """AdminPort in memory: objects by (kind, namespace, name)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.applied = 0

    async def apply(self, manifest: str, namespace: str) -> None:
        obj = json.loads(manifest)
        kind = {"ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims"}[obj["kind"]]
        self.objects[(kind, namespace, obj["metadata"]["name"])] = obj
        self.applied += 1

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    async def node_name(self) -> str:
        return "node-a"

    def claim(self, uid: str, name: str, devices: list[str], pool: str = "netdev") -> ClaimRef:
        self.objects[("resourceclaims", "default", name)] = {
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "status": {"allocation": {"devices": {"results": [
                {"request": "nic", "driver": DRIVER, "pool": pool, "device": d} for d in devices]}}},
        }
        return ClaimRef("default", uid, name)

    def slice_devices(self) -> dict[str, dict[str, Any]]:
        slices = [o for (k, _, _), o in self.objects.items() if k == "resourceslices"]
        assert len(slices) <= 1
        return {d["name"]: d["attributes"] for s in slices for d in s["spec"]["devices"]}
