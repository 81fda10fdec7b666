"""CDI spec files for prepared claims: one valid CDI JSON spec per claim, written atomically.

A container runtime's CDI cache watches the directory and reads any *.json file in it, so a
half-written file must never be visible: write a temporary file (not *.json), fsync it,
os.replace it into place, fsync the directory. Device names carry the claim uid, so two
claims holding specs of the same kind never define the same CDI device (the runtime refuses
such conflicts). Pure builders (`spec_document`, validation) plus the writer; no gRPC.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CDI_VERSION = "0.6.0"

_VENDOR = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")
_CLASS = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def check_kind(kind: str) -> str:
    """Return `kind` if it is a valid CDI kind "<vendor>/<class>"; else raise ValueError."""
    vendor, sep, klass = kind.partition("/")
    if not sep or not _VENDOR.match(vendor) or not _CLASS.match(klass):
        raise ValueError(f'"{kind}" is not a CDI kind of the form VENDOR/CLASS (e.g. example.com/gpu)')
    return kind


def check_device_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f'"{name}" is not a valid CDI device name (letters, digits, "-", "_", ".", ":")')
    return name


def check_env(entry: str) -> str:
    if not _ENV.match(entry):
        raise ValueError(f'"{entry}" is not an environment entry NAME=VALUE')
    return entry


@dataclass(frozen=True)
class DeviceNode:
    path: str  # inside the container
    host_path: str = ""  # empty: same as path
    permissions: str = "rw"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.host_path:
            out["hostPath"] = self.host_path
        if self.permissions:
            out["permissions"] = self.permissions
        return out


@dataclass(frozen=True)
class CDIDevice:
    """One CDI device: its name within the kind and the container edits it brings."""

    name: str
    env: tuple[str, ...] = ()
    device_nodes: tuple[DeviceNode, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)


def _edits(env: Sequence[str], nodes: Sequence[DeviceNode]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if env:
        out["env"] = [check_env(e) for e in env]
    if nodes:
        out["deviceNodes"] = [n.to_json() for n in nodes]
    return out


def spec_document(kind: str, devices: Sequence[CDIDevice], common_env: Sequence[str] = ()) -> dict[str, Any]:
    """A CDI spec (cdiVersion 0.6.0). Every device has at least one edit, as CDI requires."""
    check_kind(kind)
    out_devices: list[dict[str, Any]] = []
    for d in devices:
        edits = _edits(d.env, d.device_nodes)
        if not edits:
            raise ValueError(f"CDI device {d.name}: no container edits (CDI requires at least one)")
        entry: dict[str, Any] = {"name": check_device_name(d.name), "containerEdits": edits}
        if d.annotations:
            entry["annotations"] = dict(d.annotations)
        out_devices.append(entry)
    doc: dict[str, Any] = {"cdiVersion": CDI_VERSION, "kind": kind, "devices": out_devices}
    common = _edits(common_env, ())
    if common:
        doc["containerEdits"] = common
    return doc


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write `data` to `path` so readers see the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class CDIWriter:
    """Per-claim CDI spec files of one driver in one directory."""

    def __init__(self, directory: Path, kind: str, driver: str) -> None:
        self.directory = directory
        self.kind = check_kind(kind)
        self.driver = driver

    def path(self, claim_uid: str) -> Path:
        return self.directory / f"{self.driver}-{claim_uid}.json"

    def device_name(self, claim_uid: str, device: str) -> str:
        return check_device_name(f"{claim_uid}-{device}")

    def device_id(self, name: str) -> str:
        """The fully qualified CDI device id the runtime resolves: "<kind>=<name>"."""
        return f"{self.kind}={name}"

    def write(self, claim_uid: str, devices: Sequence[CDIDevice], common_env: Sequence[str] = ()) -> list[str]:
        """Write the claim's spec; returns the CDI device ids in device order."""
        doc = spec_document(self.kind, devices, common_env)
        write_atomic(self.path(claim_uid), json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n")
        return [self.device_id(d.name) for d in devices]

    def remove(self, claim_uid: str) -> bool:
        """Remove the claim's spec; False when there was none (unprepare is idempotent)."""
        try:
            self.path(claim_uid).unlink()
        except FileNotFoundError:
            return False
        return True

    def claims(self) -> list[str]:
        """Claim uids that have a spec file of this driver."""
        prefix = f"{self.driver}-"
        if not self.directory.is_dir():
            return []
        return sorted(p.name[len(prefix):-len(".json")] for p in self.directory.glob(f"{prefix}*.json"))
