"""nodeagent.network pure parts: model helpers, errno mapping, sysfs PCI lookup."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from nodeagent.errors import AlreadyExists, FailedPrecondition, NotFound, ValidationError
from nodeagent.network import sysfs
from nodeagent.network.errors import (
    LinkNotFound,
    NetnsNotFound,
    NetworkError,
    NetworkExists,
    NetworkPermissionDenied,
    checked_netns,
    from_errno,
)
from nodeagent.network.model import check_netns_name, is_operational, is_pci_address


@pytest.mark.parametrize(("state", "ok"), [("UP", True), ("UNKNOWN", True), ("DOWN", False),
                                           ("LOWERLAYERDOWN", False), ("DORMANT", False), ("NOTPRESENT", False)])
def test_operational(state: str, ok: bool) -> None:
    assert is_operational(state) is ok


def test_pci_address() -> None:
    assert is_pci_address("0000:00:03.0")
    assert is_pci_address("10000:af:1f.7")
    assert not is_pci_address("virtio2")
    assert not is_pci_address("0000:00:03.8")


@pytest.mark.parametrize("bad", ["", "a/b", "..", ".", "x" * 201, "sp ace"])
def test_netns_name_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="network namespace name"):
        check_netns_name(bad)
    with pytest.raises(ValidationError) as info:
        checked_netns(bad)
    assert info.value.path == "netns"


def test_errno_mapping() -> None:
    cases: list[tuple[int, type[NetworkError], type[Exception]]] = [
        (errno.ENODEV, LinkNotFound, NotFound),
        (errno.ENOENT, NetnsNotFound, NotFound),
        (errno.EEXIST, NetworkExists, AlreadyExists),
        (errno.EPERM, NetworkPermissionDenied, FailedPrecondition),
        (errno.EACCES, NetworkPermissionDenied, FailedPrecondition),
    ]
    for code, cls, base in cases:
        err = from_errno(code, "move link veth0 to netns=x")
        assert type(err) is cls and isinstance(err, base)
        assert err.errno == code
        assert str(err).startswith("move link veth0 to netns=x: ") and f"(errno {code})" in str(err)
    other = from_errno(errno.EINVAL, "set link")
    assert type(other) is NetworkError and "Invalid argument" in str(other)


def _sysfs(root: Path, ifname: str, target: str | None) -> None:
    net = root / "class" / "net" / ifname
    net.mkdir(parents=True)
    if target is not None:
        dev = root / target
        dev.mkdir(parents=True)
        (net / "device").symlink_to(dev)


def test_sysfs_pci(tmp_path: Path) -> None:
    _sysfs(tmp_path, "enp3s0", "devices/pci0000:00/0000:00:1c.0/0000:03:00.0")
    _sysfs(tmp_path, "eth0", "devices/pci0000:00/0000:00:03.0/virtio2")
    _sysfs(tmp_path, "veth0", None)
    _sysfs(tmp_path, "usb0", "devices/platform/usb1/1-1")
    assert sysfs.pci_address(tmp_path, "enp3s0") == "0000:03:00.0"
    assert sysfs.pci_address(tmp_path, "eth0") == "0000:00:03.0"
    assert sysfs.pci_address(tmp_path, "veth0") is None
    assert sysfs.pci_address(tmp_path, "usb0") is None
    assert sysfs.pci_address(tmp_path, "missing") is None
    assert sysfs.pci_address(tmp_path, "../x") is None
