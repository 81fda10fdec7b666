"""What the admin service needs from the daemon: one backend Protocol, plain data in and out.

The gRPC servicer only decodes, calls this backend and encodes; every rule lives
behind it (admin/backend.py) so the CLI, tests and later the control plane share it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Applied:
    kind: str
    namespace: str
    name: str
    action: str  # created | configured | unchanged


@dataclass(frozen=True)
class EventRecord:
    type: str
    reason: str
    message: str
    involved_kind: str
    involved_namespace: str
    involved_name: str
    timestamp: float
    count: int = 1


class AdminBackend(Protocol):
    async def apply(self, manifest: str, default_namespace: str) -> Sequence[Applied]: ...

    def get(self, kind: str, namespace: str, name: str, all_namespaces: bool) -> Sequence[Mapping[str, Any]]: ...

    async def delete(self, kind: str, namespace: str, name: str) -> None: ...

    def describe(self, kind: str, namespace: str, name: str) -> str: ...

    def node(self) -> Mapping[str, Any]: ...

    async def set_device_health(self, resource: str, device: str, health: str) -> None: ...

    def events(self, namespace: str, involved: str) -> Sequence[EventRecord]: ...
