"""What the admin service needs from the daemon: one backend Protocol, plain data in and out.

The gRPC servicer only decodes, calls this backend and encodes; every rule lives behind it
(admin/backend.py). The admin API carries only what the node alone knows (descriptions with
device allocations and prepared claims, the node's own view, device health); objects are
read and written through the Kubernetes API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class AdminBackend(Protocol):
    def describe(self, kind: str, namespace: str, name: str) -> str: ...

    def node(self) -> Mapping[str, Any]: ...

    async def set_device_health(self, resource: str, device: str, health: str) -> None: ...
