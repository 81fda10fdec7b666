"""A ListAndWatch snapshot as the plugin client yields it: the device list, and what changed.

A plugin resends all of its devices for every health change of one. The plugin client
(devices/snapshot_decode.py) finds which devices differ from the snapshot before at the
cost of a few byte comparisons, so it can say "only the health of these moved since
`base`". DeviceState then touches only those (when `base` is what it applied last), instead
of comparing 100,000 devices on the event loop. A plain list of devices stays a valid
snapshot: DeviceState compares it in full then.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodeagent.devices.model import Device


class DeviceSnapshot(list[Device]):
    """The complete device list of one snapshot, with its delta from the stream's previous one.

    `moved` is set only when every device kept its id, place and NUMA nodes since `base`
    (the previous snapshot object of the same stream): the devices whose health differs."""

    __slots__ = ("base", "moved")

    def __init__(
        self, devices: Iterable[Device], base: Sequence[Device] | None = None, moved: tuple[Device, ...] | None = None
    ) -> None:
        super().__init__(devices)
        self.base = base
        self.moved = moved
