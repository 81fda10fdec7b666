"""What a DRA driver built on the kit implements: the `DriverBackend` Protocol.

`DriverServer` decodes the kubelet's calls and hands them to the backend as kit
dataclasses; the backend does the driver's real work (read the allocation, write CDI,
move a link, ...). Health is optional: a backend without a HealthBoard makes the health
services answer Unimplemented, as a driver that does not implement them would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from plugins.dra_kit.health import HealthBoard
from plugins.dra_kit.model import ClaimRef, PrepareResult


class DriverBackend(Protocol):
    async def prepare(self, claims: Sequence[ClaimRef]) -> Mapping[str, PrepareResult]:
        """claim uid -> result for every claim asked (a missing uid is reported as an error)."""
        ...

    async def unprepare(self, claims: Sequence[ClaimRef]) -> Mapping[str, str]:
        """claim uid -> error text ("" when done) for every claim asked."""
        ...

    def health_board(self) -> HealthBoard | None:
        """The health feed behind NodeWatchResources, or None: no health services."""
        ...
