"""The netdev driver's profile: YAML parsed once into a frozen dataclass; errors name the field.

It says which namespace's links to publish (netns; absent: the host), which links (include /
exclude name patterns, kinds), under which driver and pool names, and what prepare does (move
the link into a per-claim namespace and set it up there, write a CDI spec). No I/O but the
one file read in load_profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeagent.plugin_kit import ConfigError
from nodeagent.plugin_kit.netlink import check_netns_name
from plugins.common import profile as common_profile
from plugins.dra_kit.cdi import check_kind
from plugins.netdev_driver.devices import LinkFilter

DEFAULT_DRIVER = "netdev.nodeagent.dev"
_DRIVER_LABEL_MAX = 63


@dataclass(frozen=True)
class Profile:
    driver_name: str = DEFAULT_DRIVER
    pool: str = "netdev"
    netns: str | None = None  # namespace whose links are published; None: the host
    links: LinkFilter = field(default_factory=LinkFilter)
    move_to_pod_netns: bool = True  # prepare moves the links into a per-claim namespace
    up_in_pod: bool = True  # and sets them up there
    pod_netns_prefix: str = "nadra-"
    cdi_dir: Path | None = None  # None: no CDI spec (prepared devices carry no CDI ids)
    cdi_kind: str = "netdev.nodeagent.dev/link"
    root_dir: Path | None = None  # None: not in the profile (main.py decides)
    kubeconfig: Path | None = None  # None: not in the profile (main.py decides)
    state_dir: Path | None = None  # None: ROOT/plugins/<driver>
    health_timeout_seconds: int = 0  # DeviceHealth.health_check_timeout_seconds; 0: the kubelet's 30 s
    health_resend_seconds: float = 10.0  # full list re-sent this often without a change
    publish_interval_seconds: float = 2.0  # ResourceSlice check period


_FIELDS = {
    "driverName", "pool", "netns", "include", "exclude", "kinds", "moveToPodNetns", "upInPod",
    "podNetnsPrefix", "cdiDir", "cdiKind", "rootDir", "kubeconfig", "stateDir",
    "healthTimeoutSeconds", "healthResendSeconds", "publishIntervalSeconds",
}


def _get(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: str, default: Any) -> Any:
    value = doc.get(key, default)
    if value is default or value is None:
        return default
    if isinstance(value, bool) and kind is not bool and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise ConfigError(f"{path}.{key}: expected {getattr(kind, '__name__', kind)}, got a boolean")
    if not isinstance(value, kind):
        raise ConfigError(f"{path}.{key}: expected {getattr(kind, '__name__', kind)}")
    return value


def _strings(doc: Mapping[str, Any], key: str, path: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = _get(doc, key, list, path, None)
    if value is None:
        return default
    for n, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise ConfigError(f"{path}.{key}[{n}]: expected a non-empty string")
    return tuple(value)


def _path(doc: Mapping[str, Any], key: str, path: str) -> Path | None:
    value = _get(doc, key, str, path, None)
    if value is None or value == "":
        return None
    p = Path(value)
    if not p.is_absolute():
        raise ConfigError(f'{path}.{key}: "{value}" must be an absolute path')
    return p


def _label(value: str, where: str, limit: int) -> str:
    ok = value and len(value) <= limit and all(c.isalnum() or c in "-." for c in value)
    if not ok or not value[0].isalnum() or not value[-1].isalnum() or value != value.lower():
        raise ConfigError(f'{where}: "{value}" must be lowercase letters, digits, "-" and ".", at most {limit}')
    return value


def parse_profile(doc: Any, origin: str = "profile") -> Profile:
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{origin}: expected a mapping")
    common_profile.reject_unknown(doc, origin, _FIELDS)
    driver = _label(_get(doc, "driverName", str, origin, DEFAULT_DRIVER), f"{origin}.driverName", 253)
    if "." not in driver:
        raise ConfigError(f'{origin}.driverName: "{driver}" must be a domain name (e.g. netdev.example.com)')
    pool = _label(_get(doc, "pool", str, origin, "netdev"), f"{origin}.pool", 253)
    netns = _get(doc, "netns", str, origin, None) or None
    if netns is not None:
        try:
            check_netns_name(netns)
        except ValueError as err:
            raise ConfigError(f"{origin}.netns: {err}") from None
    prefix = _get(doc, "podNetnsPrefix", str, origin, "nadra-")
    try:
        check_netns_name(prefix + "x")
    except ValueError:
        raise ConfigError(f'{origin}.podNetnsPrefix: "{prefix}" may hold only [A-Za-z0-9_.-]') from None
    if not prefix:
        raise ConfigError(f"{origin}.podNetnsPrefix: must not be empty (it tells our namespaces apart)")
    kind = _get(doc, "cdiKind", str, origin, "netdev.nodeagent.dev/link")
    try:
        check_kind(kind)
    except ValueError as err:
        raise ConfigError(f"{origin}.cdiKind: {err}") from None
    timeout = _get(doc, "healthTimeoutSeconds", int, origin, 0)
    resend = float(_get(doc, "healthResendSeconds", (int, float), origin, 10.0))
    interval = float(_get(doc, "publishIntervalSeconds", (int, float), origin, 2.0))
    if resend <= 0:
        raise ConfigError(f"{origin}.healthResendSeconds: must be positive")
    if interval <= 0:
        raise ConfigError(f"{origin}.publishIntervalSeconds: must be positive")
    return Profile(
        driver_name=driver,
        pool=pool,
        netns=netns,
        links=LinkFilter(
            include=_strings(doc, "include", origin, ()),
            exclude=_strings(doc, "exclude", origin, ("lo",)),
            kinds=_strings(doc, "kinds", origin, ()),
        ),
        move_to_pod_netns=_get(doc, "moveToPodNetns", bool, origin, True),
        up_in_pod=_get(doc, "upInPod", bool, origin, True),
        pod_netns_prefix=prefix,
        cdi_dir=_path(doc, "cdiDir", origin),
        cdi_kind=kind,
        root_dir=_path(doc, "rootDir", origin),
        kubeconfig=_path(doc, "kubeconfig", origin),
        state_dir=_path(doc, "stateDir", origin),
        health_timeout_seconds=timeout,
        health_resend_seconds=resend,
        publish_interval_seconds=interval,
    )


def load_profile(path: Path) -> Profile:
    return common_profile.load_profile(path, parse_profile)
