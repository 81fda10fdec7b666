"""Cgroup names of the node's tree, for the cgroupfs and systemd naming drivers. Pure.

The kubelet's CgroupName is a list of components ([kubepods, burstable, pod<uid>]);
the driver turns it into a path relative to the cgroup mount:

    cgroupfs: /kubepods/burstable/pod<uid>
    systemd:  /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice

(systemd escapes "-" inside a component as "_", so a pod uid's dashes become "_").
Guaranteed pods sit directly under kubepods; BestEffort and Burstable pods under
their QoS cgroup. Paths returned here are what a CgroupDriver takes.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeagent.errors import ConfigError
from nodeagent.objects.pod.model import BEST_EFFORT, BURSTABLE, GUARANTEED

KUBEPODS = "kubepods"
QOS_COMPONENT = {BURSTABLE: "burstable", BEST_EFFORT: "besteffort"}

Components = tuple[str, ...]


def to_cgroupfs(name: Components) -> str:
    return "/" + "/".join(name)


def _escape_systemd(part: str) -> str:
    return part.replace("-", "_")


def to_systemd(name: Components) -> str:
    """The kubelet's CgroupName.ToSystemd: each prefix becomes a nested slice."""
    if not name:
        return "/"
    out: list[str] = []
    prefix = ""
    for part in name:
        prefix = f"{prefix}-{_escape_systemd(part)}" if prefix else _escape_systemd(part)
        out.append(prefix + ".slice")
    return "/" + "/".join(out)


def parse_root(driver: str, root: str) -> Components:
    """cgroupRoot to components: "/" is the mount root; systemd roots are slice paths."""
    parts = tuple(p for p in root.split("/") if p)
    if driver == "systemd":
        out: list[str] = []
        for p in parts:
            if not p.endswith(".slice"):
                raise ConfigError(f'KubeletConfiguration.cgroupRoot: "{root}" is not a systemd slice path')
            out.append(p[: -len(".slice")].rsplit("-", 1)[-1])
        return tuple(out)
    return parts


@dataclass(frozen=True)
class CgroupNaming:
    driver: str = "cgroupfs"  # cgroupfs | systemd (KubeletConfiguration.cgroupDriver)
    root: str = "/"  # KubeletConfiguration.cgroupRoot

    def __post_init__(self) -> None:
        if self.driver not in ("cgroupfs", "systemd"):
            raise ConfigError(f'KubeletConfiguration.cgroupDriver: unsupported value "{self.driver}"')

    def _path(self, name: Components) -> str:
        full = parse_root(self.driver, self.root) + name
        return to_systemd(full) if self.driver == "systemd" else to_cgroupfs(full)

    def kubepods(self) -> str:
        return self._path((KUBEPODS,))

    def qos(self, qos_class: str) -> str:
        """The QoS cgroup of a class; Guaranteed has none (it is kubepods itself)."""
        if qos_class == GUARANTEED:
            return self.kubepods()
        return self._path((KUBEPODS, QOS_COMPONENT[qos_class]))

    def pod(self, uid: str, qos_class: str) -> str:
        if "/" in uid:  # the kubelet's NewCgroupName refuses "/" inside a component
            raise ValueError(f'invalid character in component "pod{uid}" of a cgroup name')
        if qos_class == GUARANTEED:
            return self._path((KUBEPODS, f"pod{uid}"))
        if qos_class not in QOS_COMPONENT:
            raise ValueError(f"unknown QoS class {qos_class!r}")
        return self._path((KUBEPODS, QOS_COMPONENT[qos_class], f"pod{uid}"))
