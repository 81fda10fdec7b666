"""The fake DRA driver's profile: YAML parsed once into frozen dataclasses, errors with field paths.

A profile names the driver and its pool, lists the devices it publishes (attributes model,
uuid, pcieRoot, numa, extra attributes; capacity memory, extra capacities), says what the
CDI spec of a prepared device holds, how health is reported (a driver-wide
healthCheckTimeoutSeconds, overridable per device, and a per-device healthMessage, both sent in
every DRAResourceHealth message), which gRPC services are offered (tests narrow this to "only
v1beta1", "only v1alpha1 health" or "no health": any subset of v1.DRAPlugin, v1beta1.DRAPlugin
and the v1 / v1beta1 / v1alpha1 DRAResourceHealth tokens), and optional faults for tests.
No sockets, no gRPC here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeagent.plugin_kit import ConfigError, ValidationError, dra
from plugins.common import profile as common_profile
from plugins.dra_kit import cdi
from plugins.dra_kit.model import ALL_SERVICES, V1_PLUGIN, V1BETA1_PLUGIN, check_health

# Placeholders in cdi.env / cdi.deviceNodes: {device} {pool} {uuid} {model} {index} (position in
# the claim) {ordinal} (position in the profile) {claim} (uid) {claimName} {namespace} {request}.


@dataclass(frozen=True)
class DeviceDef:
    name: str
    model: str = ""
    uuid: str = ""
    pcie_root: str = ""
    numa: int | None = None
    memory: str = ""
    health: str = "Healthy"
    health_check_timeout_seconds: int | None = None  # None: the profile's healthCheckTimeoutSeconds
    health_message: str = ""  # sent as DeviceHealth.message until set_health changes it
    attributes: Mapping[str, Any] = field(default_factory=dict)  # extra: {"name": {"string": ...}}
    capacity: Mapping[str, str] = field(default_factory=dict)  # extra: {"name": "quantity"}

    def slice_json(self) -> dict[str, Any]:
        """The device as a resource.k8s.io/v1 ResourceSlice device."""
        attrs: dict[str, Any] = {}
        if self.model:
            attrs["model"] = {"string": self.model}
        if self.uuid:
            attrs["uuid"] = {"string": self.uuid}
        if self.pcie_root:
            attrs["pcieRoot"] = {"string": self.pcie_root}
        if self.numa is not None:
            attrs["numa"] = {"int": self.numa}
        attrs.update({k: dict(v) for k, v in self.attributes.items()})
        cap: dict[str, Any] = {}
        if self.memory:
            cap["memory"] = {"value": self.memory}
        cap.update({k: {"value": v} for k, v in self.capacity.items()})
        out: dict[str, Any] = {"name": self.name}
        if attrs:
            out["attributes"] = attrs
        if cap:
            out["capacity"] = cap
        return out


@dataclass(frozen=True)
class CDITemplate:
    kind: str  # "<vendor>/<class>"
    env: tuple[str, ...] = ()  # per device, placeholders replaced
    device_nodes: tuple[cdi.DeviceNode, ...] = ()
    common_env: tuple[str, ...] = ()  # spec-level containerEdits
    dir: Path | None = None  # None: main.py decides (ROOT/../cdi)


@dataclass(frozen=True)
class Faults:
    prepare_failures: int = 0  # the next N prepare calls fail
    prepare_failure_mode: str = "claim"  # claim: per-claim error text; rpc: the whole call fails
    prepare_error: str = "injected prepare failure"
    prepare_delay: float = 0.0  # seconds every prepare waits first
    unprepare_failures: int = 0
    crash_on_prepare: bool = False  # the process exits (code 70) when a prepare arrives
    pause_health: bool = False  # health streams stay silent (timeouts to Unknown)


@dataclass(frozen=True)
class Profile:
    driver: str
    pool: str
    devices: tuple[DeviceDef, ...]
    cdi: CDITemplate
    health_check_timeout_seconds: int = 30
    health_resend_seconds: float = 10.0
    services: tuple[str, ...] = ALL_SERVICES
    slice_check_seconds: float = 2.0
    faults: Faults = field(default_factory=Faults)

    def device_timeout(self, device: DeviceDef) -> int:
        """The health_check_timeout_seconds sent for `device` (0: let the kubelet use its default)."""
        if device.health_check_timeout_seconds is not None:
            return device.health_check_timeout_seconds
        return self.health_check_timeout_seconds


def _reject_unknown(doc: Mapping[str, Any], path: str, allowed: tuple[str, ...]) -> None:
    common_profile.reject_unknown(doc, path, allowed, list_known=True)


def _get(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: str, default: Any) -> Any:
    value = doc.get(key)
    if value is None:
        return default
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ConfigError(f"{path}.{key}: expected {name}, got {type(value).__name__}")
    return value


def _number(doc: Mapping[str, Any], key: str, path: str, default: float, *, positive: bool = False) -> float:
    value = float(_get(doc, key, (int, float), path, default))
    if value < 0 or (positive and value == 0):
        raise ConfigError(f"{path}.{key}: must be {'positive' if positive else 'zero or more'}, got {value:g}")
    return value


def _mapping(doc: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value: Mapping[str, Any] = _get(doc, key, dict, path, {})
    return value


def _device(raw: Any, p: str) -> DeviceDef:
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping")
    _reject_unknown(raw, p, ("name", "model", "uuid", "pcieRoot", "numa", "memory", "health",
                             "healthCheckTimeoutSeconds", "healthMessage", "attributes", "capacity"))
    name = _get(raw, "name", str, p, "")
    if not name:
        raise ConfigError(f"{p}.name: required")
    try:
        dra.check_device_name(f"{p}.name", name)
    except ValidationError as err:
        raise ConfigError(str(err)) from None
    memory = _get(raw, "memory", (str, int), p, "")
    if memory != "":
        try:
            memory = dra.check_quantity(f"{p}.memory", memory)
        except ValidationError as err:
            raise ConfigError(str(err)) from None
    health = _get(raw, "health", str, p, "Healthy")
    try:
        health = check_health(health)
    except ValueError as err:
        raise ConfigError(f"{p}.health: {err}") from None
    attributes: dict[str, Any] = {}
    for key, value in _mapping(raw, "attributes", p).items():
        ap = f"{p}.attributes[{key}]"
        if isinstance(value, bool):
            attributes[str(key)] = {"bool": value}
        elif isinstance(value, int):
            attributes[str(key)] = {"int": value}
        elif isinstance(value, str):
            attributes[str(key)] = {"string": value}
        elif isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("int", "bool", "string", "version"):
            attributes[str(key)] = dict(value)
        else:
            raise ConfigError(f"{ap}: expected a string, int, bool or {{int|bool|string|version: value}}")
    capacity: dict[str, str] = {}
    for key, value in _mapping(raw, "capacity", p).items():
        try:
            capacity[str(key)] = dra.check_quantity(f"{p}.capacity[{key}]", value)
        except ValidationError as err:
            raise ConfigError(str(err)) from None
    numa = _get(raw, "numa", int, p, None)
    timeout = _get(raw, "healthCheckTimeoutSeconds", int, p, None)
    if timeout is not None and timeout < 0:
        raise ConfigError(f"{p}.healthCheckTimeoutSeconds: must be zero or more, got {timeout}")
    return DeviceDef(
        name=name,
        model=_get(raw, "model", str, p, ""),
        uuid=_get(raw, "uuid", str, p, ""),
        pcie_root=_get(raw, "pcieRoot", str, p, ""),
        numa=numa,
        memory=str(memory),
        health=health,
        health_check_timeout_seconds=timeout,
        health_message=_get(raw, "healthMessage", str, p, ""),
        attributes=attributes,
        capacity=capacity,
    )


def _env_list(doc: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    out = []
    for i, entry in enumerate(_get(doc, key, list, path, [])):
        ep = f"{path}.{key}[{i}]"
        if not isinstance(entry, str):
            raise ConfigError(f"{ep}: expected a string NAME=VALUE")
        try:
            cdi.check_env(re.sub(r"\{[A-Za-z]+\}", "0", entry))  # placeholders are filled per device
        except ValueError as err:
            raise ConfigError(f"{ep}: {err}") from None
        out.append(entry)
    return tuple(out)


def _cdi(doc: Mapping[str, Any], path: str, driver: str) -> CDITemplate:
    _reject_unknown(doc, path, ("kind", "dir", "env", "deviceNodes", "commonEnv"))
    kind = _get(doc, "kind", str, path, f"{driver}/gpu")
    try:
        cdi.check_kind(kind)
    except ValueError as err:
        raise ConfigError(f"{path}.kind: {err}") from None
    nodes = []
    for i, raw in enumerate(_get(doc, "deviceNodes", list, path, [])):
        np_ = f"{path}.deviceNodes[{i}]"
        if not isinstance(raw, dict):
            raise ConfigError(f"{np_}: expected a mapping")
        _reject_unknown(raw, np_, ("path", "hostPath", "permissions"))
        node_path = _get(raw, "path", str, np_, "")
        if not node_path.startswith("/"):
            raise ConfigError(f"{np_}.path: must be an absolute path, got \"{node_path}\"")
        nodes.append(cdi.DeviceNode(node_path, _get(raw, "hostPath", str, np_, ""),
                                    _get(raw, "permissions", str, np_, "rw")))
    dir_value = _get(doc, "dir", str, path, None)
    if dir_value is not None and not dir_value.startswith("/"):
        raise ConfigError(f"{path}.dir: must be an absolute path, got \"{dir_value}\"")
    env = _env_list(doc, "env", path)
    if not env and not nodes:
        env = ("FAKE_DRA_DEVICE_{index}={device}",)  # CDI wants at least one edit per device
    return CDITemplate(
        kind=kind,
        env=env,
        device_nodes=tuple(nodes),
        common_env=_env_list(doc, "commonEnv", path),
        dir=Path(dir_value) if dir_value else None,
    )


def parse_faults(doc: Mapping[str, Any], path: str) -> Faults:
    _reject_unknown(doc, path, ("prepareFailures", "prepareFailureMode", "prepareError", "prepareDelaySeconds",
                        "unprepareFailures", "crashOnPrepare", "pauseHealth"))
    mode = _get(doc, "prepareFailureMode", str, path, "claim")
    if mode not in ("claim", "rpc"):
        raise ConfigError(f'{path}.prepareFailureMode: must be "claim" or "rpc", got "{mode}"')
    failures = _get(doc, "prepareFailures", int, path, 0)
    unfailures = _get(doc, "unprepareFailures", int, path, 0)
    for key, value in (("prepareFailures", failures), ("unprepareFailures", unfailures)):
        if value < 0:
            raise ConfigError(f"{path}.{key}: must be zero or more, got {value}")
    return Faults(
        prepare_failures=failures,
        prepare_failure_mode=mode,
        prepare_error=_get(doc, "prepareError", str, path, "injected prepare failure"),
        prepare_delay=_number(doc, "prepareDelaySeconds", path, 0.0),
        unprepare_failures=unfailures,
        crash_on_prepare=_get(doc, "crashOnPrepare", bool, path, False),
        pause_health=_get(doc, "pauseHealth", bool, path, False),
    )


def parse_profile(doc: Any, origin: str = "profile") -> Profile:
    if not isinstance(doc, dict):
        raise ConfigError(f"{origin}: expected a mapping")
    _reject_unknown(doc, origin, ("driverName", "poolName", "devices", "cdi", "healthCheckTimeoutSeconds",
                          "healthResendSeconds", "services", "sliceCheckSeconds", "faults"))
    driver = _get(doc, "driverName", str, origin, "")
    try:
        dra.check_driver_name(f"{origin}.driverName", driver)
        pool = _get(doc, "poolName", str, origin, "")
        dra.check_pool_name(f"{origin}.poolName", pool)
    except ValidationError as err:
        raise ConfigError(str(err)) from None
    devices: list[DeviceDef] = []
    seen: set[str] = set()
    raw_devices = _get(doc, "devices", list, origin, [])
    if not raw_devices:
        raise ConfigError(f"{origin}.devices: at least one device is required")
    for i, raw in enumerate(raw_devices):
        dev = _device(raw, f"{origin}.devices[{i}]")
        if dev.name in seen:
            raise ConfigError(f'{origin}.devices[{i}].name: duplicate device name "{dev.name}"')
        seen.add(dev.name)
        devices.append(dev)
    timeout = _get(doc, "healthCheckTimeoutSeconds", int, origin, 30)
    if timeout < 0:
        raise ConfigError(f"{origin}.healthCheckTimeoutSeconds: must be zero or more, got {timeout}")
    timeouts = [t for t in (timeout, *(d.health_check_timeout_seconds or 0 for d in devices)) if t > 0]
    default_resend = min(10.0, min(timeouts) / 3) if timeouts else 10.0
    services = tuple(_get(doc, "services", list, origin, list(ALL_SERVICES)))
    for i, token in enumerate(services):
        if token not in ALL_SERVICES:
            raise ConfigError(f'{origin}.services[{i}]: unknown service "{token}" (known: {", ".join(ALL_SERVICES)})')
    if not any(s in (V1_PLUGIN, V1BETA1_PLUGIN) for s in services):
        raise ConfigError(f"{origin}.services: must include {V1_PLUGIN} or {V1BETA1_PLUGIN}")
    return Profile(
        driver=driver,
        pool=pool,
        devices=tuple(devices),
        cdi=_cdi(_mapping(doc, "cdi", origin), f"{origin}.cdi", driver),
        health_check_timeout_seconds=timeout,
        health_resend_seconds=_number(doc, "healthResendSeconds", origin, default_resend, positive=True),
        services=services,
        slice_check_seconds=_number(doc, "sliceCheckSeconds", origin, 2.0, positive=True),
        faults=parse_faults(_mapping(doc, "faults", origin), f"{origin}.faults"),
    )


def load_profile(path: Path) -> Profile:
    return common_profile.load_profile(path, parse_profile)
