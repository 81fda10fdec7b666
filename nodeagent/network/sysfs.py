"""PCI address of a host link from sysfs: the /sys/class/net/<ifname>/device symlink.

Only meaningful for links of the namespace that mounted /sys (the host's). The sysfs root
is a parameter so tests give a folder with the same layout.
"""

from __future__ import annotations

from pathlib import Path

from nodeagent.network.model import is_pci_address


def pci_address(sys_root: Path, ifname: str) -> str | None:
    """The PCI function the link sits on: the device itself or its nearest PCI ancestor.

    A virtio NIC resolves to .../0000:00:03.0/virtio2: its PCI address is the parent's.
    None for virtual links (no `device` symlink) and non-PCI buses.
    """
    link = sys_root / "class" / "net" / ifname / "device"
    if "/" in ifname or not link.is_symlink():
        return None
    try:
        target = link.resolve(strict=True)
    except OSError:
        return None
    for part in (target, *target.parents):
        if is_pci_address(part.name):
            return part.name
        if part.name == "devices" or part == sys_root:
            break
    return None
