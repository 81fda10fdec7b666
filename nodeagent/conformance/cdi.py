"""CDI spec files as a DRA driver writes them: find, parse, validate, resolve device ids.

A pure module (file reading aside): the container runtime resolves each CDI device id a
driver returns ("vendor.com/class=name") in the spec files of its CDI directories, so the
suite checks what the runtime would: the spec parses (JSON or YAML), has a cdiVersion, a
kind "vendor/class" with the CDI spec's name rules, devices with valid unique names and
container edits, and every id returned names a device of a spec of that kind. Rules from
the CDI specification (tags.cncf.io/container-device-interface, SPEC.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_VENDOR = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_CLASS = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?$")
_DEVICE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$|^[A-Za-z0-9]$")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_EDIT_KEYS = ("env", "deviceNodes", "hooks", "mounts", "intelRdt", "additionalGids", "netDevices")


@dataclass(frozen=True)
class Spec:
    path: Path
    kind: str
    devices: tuple[str, ...]


def _edits_ok(edits: Any) -> bool:
    return isinstance(edits, dict) and any(edits.get(k) for k in _EDIT_KEYS)


def parse_spec(path: Path) -> Spec:
    """Parse and validate one spec file; raises ValueError naming the file and the problem."""
    try:
        doc = yaml.safe_load(path.read_text())  # JSON is YAML
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"CDI spec {path}: cannot be read as JSON/YAML: {err}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"CDI spec {path}: not an object")
    version = str(doc.get("cdiVersion", ""))
    if not _VERSION.match(version):
        raise ValueError(f"CDI spec {path}: cdiVersion {version!r} is not a version x.y.z")
    kind = str(doc.get("kind", ""))
    vendor, sep, cls = kind.partition("/")
    if not sep or not _VENDOR.match(vendor) or not _CLASS.match(cls):
        raise ValueError(f"CDI spec {path}: kind {kind!r} is not vendor/class (e.g. example.com/gpu)")
    devices = doc.get("devices")
    if not isinstance(devices, list) or not devices:
        raise ValueError(f"CDI spec {path}: devices must be a non-empty list")
    names: list[str] = []
    spec_edits = _edits_ok(doc.get("containerEdits"))
    for i, dev in enumerate(devices):
        name = str(dev.get("name", "")) if isinstance(dev, dict) else ""
        if not _DEVICE.match(name):
            raise ValueError(f"CDI spec {path}: devices[{i}].name {name!r} is not a valid CDI device name")
        if name in names:
            raise ValueError(f"CDI spec {path}: devices[{i}].name {name!r} is a duplicate")
        if not spec_edits and not _edits_ok(dev.get("containerEdits")):
            raise ValueError(f"CDI spec {path}: devices[{i}] ({name}) has no containerEdits")
        names.append(name)
    return Spec(path, kind, tuple(names))


def spec_files(dirs: Sequence[Path]) -> list[Path]:
    out: list[Path] = []
    for d in dirs:
        if d.is_dir():
            out.extend(sorted(p for p in d.iterdir() if p.suffix in (".json", ".yaml") and p.is_file()))
    return out


def split_id(device_id: str) -> tuple[str, str]:
    """("vendor/class", "name") of a fully qualified CDI device id; ValueError otherwise."""
    kind, sep, name = device_id.partition("=")
    if not sep or "/" not in kind or not name:
        raise ValueError(f"CDI device id {device_id!r} is not vendor/class=name")
    return kind, name


def resolve(device_ids: Sequence[str], specs: Sequence[Spec]) -> dict[str, Spec]:
    """Where each id is defined; ValueError naming the first id no spec defines."""
    out: dict[str, Spec] = {}
    for device_id in device_ids:
        kind, name = split_id(device_id)
        found = [s for s in specs if s.kind == kind and name in s.devices]
        if not found:
            where = ", ".join(sorted({str(s.path.parent) for s in specs})) or "no spec files"
            raise ValueError(f"CDI device id {device_id} is defined in no CDI spec file ({where})")
        if len(found) > 1:
            raise ValueError(f"CDI device id {device_id} is defined in {len(found)} spec files: "
                             + ", ".join(str(s.path) for s in found))
        out[device_id] = found[0]
    return out
