"""The bytes of the kubelet's state files, as the v1.37.2 kubelet writes them, from plain snapshots.

- cpu_manager_state: cpumanager/state/checkpoint.go, the v4 layout the 1.37 kubelet writes: the
  v2 fields (policyName, defaultCpuSet, entries, checksum over the spew of the v2 struct with
  its name as `CPUManagerCheckpoint`) for older readers, plus `data` (the JSON of
  CPUManagerCheckpointData) and `dataChecksum` (checksum of that string). podEntries and
  baselines stay empty: their gates (PodLevelResourceManagers, InPlacePodVerticalScaling-
  ExclusiveCPUs) are off by default in 1.37 and nodeagent implements neither.
- memory_manager_state: memorymanager/state/checkpoint.go, the v3 layout (v1 fields + data).
- device-plugins/kubelet_internal_checkpoint: devicemanager/checkpoint/checkpoint.go
  (`{"Data":{"PodDeviceEntries":...,"RegisteredDevices":...},"Checksum":...}`, AllocResp the
  protobuf bytes of the plugin's ContainerAllocateResponse, base64 as encoding/json writes []byte).
- dra_manager_state: dra/state/checkpoint.go (`{"Data":"<DRACheckpoint JSON>","Checksum":crc32}`).

Map orders are Go's (encoding/json sorts keys); where the kubelet's order is a map iteration
(the claim list, the device ids of a NUMA node, registered device ids) it is arbitrary there and
sorted or in allocation order here. Pure: no I/O.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.kubeletstate import gohash
from nodeagent.kubeletstate.gohash import Map, Pointer, Scalar, Slice, Struct

CPU_FILE = "cpu_manager_state"
MEMORY_FILE = "memory_manager_state"
DEVICES_FILE = "kubelet_internal_checkpoint"  # in ROOT/device-plugins
DRA_FILE = "dra_manager_state"

DRA_KIND = "DRACheckpoint"
DRA_API_VERSION = "checkpoint.dra.kubelet.k8s.io/v1"


# --- cpu manager ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CPUState:
    """policy name as the kubelet names it (`none`, `static`), the shared pool as a cpuset string
    (empty under `none`), and pod uid -> container -> exclusive cpuset string."""

    policy: str
    default_cpuset: str
    entries: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def _string_map_of_maps(type_: str, inner: str, entries: Mapping[str, Mapping[str, str]]) -> Map:
    return Map(type_, {pod: Map(inner, {c: Scalar("string", s) for c, s in cs.items()})
                       for pod, cs in entries.items()})


def cpu_manager_state(state: CPUState) -> bytes:
    entries = {pod: dict(sorted(cs.items())) for pod, cs in sorted(state.entries.items())}
    data: dict[str, Any] = {"policyName": state.policy, "defaultCpuSet": state.default_cpuset}
    if entries:
        data["entries"] = entries
    data_text = gohash.go_json(data)
    legacy = Pointer(Struct("state.CPUManagerCheckpointV2", (
        ("PolicyName", Scalar("string", state.policy)),
        ("DefaultCPUSet", Scalar("string", state.default_cpuset)),
        ("Entries", _string_map_of_maps("map[string]map[string]string", "map[string]string", entries)),
        ("Checksum", Scalar("checksum.Checksum", 0)),
    )))
    out: dict[str, Any] = {"policyName": state.policy, "defaultCpuSet": state.default_cpuset}
    if entries:
        out["entries"] = entries
    out["checksum"] = gohash.checksum(legacy, rename=("CPUManagerCheckpointV2", "CPUManagerCheckpoint"))
    out["data"] = data_text
    out["dataChecksum"] = gohash.string_checksum(data_text)
    return gohash.go_json(out).encode()


# --- memory manager -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryTable:
    total: int
    system_reserved: int
    allocatable: int
    reserved: int
    free: int


@dataclass(frozen=True)
class NUMANodeState:
    number_of_assignments: int
    memory_map: Mapping[str, MemoryTable]  # memory type (memory, hugepages-2Mi) -> table
    cells: tuple[int, ...]


@dataclass(frozen=True)
class MemoryBlock:
    numa_affinity: tuple[int, ...]
    type: str
    size: int


@dataclass(frozen=True)
class MemoryState:
    """policy (`None`, `Static`), NUMA node -> state (empty under None), pod -> container -> blocks."""

    policy: str
    machine: Mapping[int, NUMANodeState] = field(default_factory=dict)
    entries: Mapping[str, Mapping[str, Sequence[MemoryBlock]]] = field(default_factory=dict)


_TABLE_FIELDS = (("TotalMemSize", "total", "total"), ("SystemReserved", "systemReserved", "system_reserved"),
                 ("Allocatable", "allocatable", "allocatable"), ("Reserved", "reserved", "reserved"),
                 ("Free", "free", "free"))


def _by_key_text(mapping: Mapping[int, Any]) -> list[tuple[int, Any]]:
    """Items of an int-keyed map in encoding/json's order: sorted by the key's text ("10" < "2")."""
    return sorted(mapping.items(), key=lambda item: str(item[0]))


def _machine_json(machine: Mapping[int, NUMANodeState]) -> dict[str, Any]:
    return {str(node): {
        "numberOfAssignments": s.number_of_assignments,
        "memoryMap": {name: {key: getattr(t, attr) for _, key, attr in _TABLE_FIELDS}
                      for name, t in sorted(s.memory_map.items())},
        "cells": list(s.cells),
    } for node, s in _by_key_text(machine)}


def _entries_json(entries: Mapping[str, Mapping[str, Sequence[MemoryBlock]]]) -> dict[str, Any]:
    return {pod: {c: [{"numaAffinity": list(b.numa_affinity), "type": b.type, "size": b.size} for b in blocks]
                  for c, blocks in sorted(cs.items())}
            for pod, cs in sorted(entries.items())}


def _machine_go(machine: Mapping[int, NUMANodeState]) -> Map:
    def table(t: MemoryTable) -> Pointer:
        return Pointer(Struct("state.MemoryTable", tuple(
            (name, Scalar("uint64", getattr(t, attr))) for name, _, attr in _TABLE_FIELDS)))

    return Map("state.NUMANodeMap", {node: Pointer(Struct("state.NUMANodeState", (
        ("NumberOfAssignments", Scalar("int", s.number_of_assignments)),
        ("MemoryMap", Map("map[v1.ResourceName]*state.MemoryTable",
                          {name: table(t) for name, t in s.memory_map.items()})),
        ("Cells", Slice("[]int", [Scalar("int", c) for c in s.cells])),
    ))) for node, s in machine.items()})


def _entries_go(entries: Mapping[str, Mapping[str, Sequence[MemoryBlock]]]) -> Map:
    def block(b: MemoryBlock) -> Struct:
        return Struct("state.Block", (
            ("NUMAAffinity", Slice("[]int", [Scalar("int", n) for n in b.numa_affinity])),
            ("Type", Scalar("v1.ResourceName", b.type)),
            ("Size", Scalar("uint64", b.size)),
        ))

    return Map("state.ContainerMemoryAssignments", {
        pod: Map("map[string][]state.Block", {c: Slice("[]state.Block", [block(b) for b in blocks])
                                              for c, blocks in cs.items()})
        for pod, cs in entries.items()})


def memory_manager_state(state: MemoryState) -> bytes:
    machine, entries = _machine_json(state.machine), _entries_json(state.entries)
    data: dict[str, Any] = {"policyName": state.policy, "machineState": machine}
    if entries:
        data["entries"] = entries
    data_text = gohash.go_json(data)
    legacy = Pointer(Struct("state.MemoryManagerCheckpointV1", (
        ("PolicyName", Scalar("string", state.policy)),
        ("MachineState", _machine_go(state.machine)),
        ("Entries", _entries_go(state.entries)),
        ("Checksum", Scalar("checksum.Checksum", 0)),
    )))
    out: dict[str, Any] = {"policyName": state.policy, "machineState": machine}
    if entries:
        out["entries"] = entries
    out["checksum"] = gohash.checksum(legacy, rename=("MemoryManagerCheckpointV1", "MemoryManagerCheckpoint"))
    out["data"] = data_text
    out["dataChecksum"] = gohash.string_checksum(data_text)
    return gohash.go_json(out).encode()


# --- device manager -------------------------------------------------------------------------------

NODE_WITHOUT_TOPOLOGY = -1  # devicemanager's nodeWithoutTopology


@dataclass(frozen=True)
class PodDevicesEntry:
    pod_uid: str
    container: str
    resource: str
    device_ids: Mapping[int, Sequence[str]]  # NUMA node (-1 without topology) -> device ids
    alloc_resp: bytes  # the plugin's ContainerAllocateResponse, protobuf-encoded


@dataclass(frozen=True)
class DeviceCheckpoint:
    entries: Sequence[PodDevicesEntry] = ()
    registered: Mapping[str, Sequence[str]] = field(default_factory=dict)  # resource -> healthy ids


def device_manager_checkpoint(cp: DeviceCheckpoint) -> bytes:
    entries = list(cp.entries)
    go = Struct("checkpoint.checkpointData", (
        ("PodDeviceEntries", Slice("[]checkpoint.PodDevicesEntry", [Struct("checkpoint.PodDevicesEntry", (
            ("PodUID", Scalar("string", e.pod_uid)),
            ("ContainerName", Scalar("string", e.container)),
            ("ResourceName", Scalar("string", e.resource)),
            ("DeviceIDs", Map("checkpoint.DevicesPerNUMA", {
                n: Slice("[]string", [Scalar("string", i) for i in ids]) for n, ids in e.device_ids.items()})),
            ("AllocResp", Slice("[]uint8", [Scalar("uint8", b) for b in e.alloc_resp])),
        )) for e in entries] if entries else None)),
        ("RegisteredDevices", Map("map[string][]string", {
            r: Slice("[]string", [Scalar("string", i) for i in ids]) for r, ids in cp.registered.items()})),
    ))
    data = {
        "PodDeviceEntries": [{
            "PodUID": e.pod_uid, "ContainerName": e.container, "ResourceName": e.resource,
            "DeviceIDs": {str(n): list(ids) for n, ids in _by_key_text(e.device_ids)},
            "AllocResp": base64.b64encode(e.alloc_resp).decode(),
        } for e in entries] if entries else None,
        "RegisteredDevices": {r: list(ids) for r, ids in sorted(cp.registered.items())},
    }
    return gohash.go_json({"Data": data, "Checksum": gohash.checksum(go)}).encode()


# --- DRA manager ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DRADevice:
    pool_name: str
    device_name: str
    share_id: str | None
    request_names: tuple[str, ...]
    cdi_device_ids: tuple[str, ...]


@dataclass(frozen=True)
class DriverState:
    """The prepared devices of one driver (None until NodePrepareResources answered) and the node
    operations every device of it skips."""

    devices: tuple[DRADevice, ...] | None
    skip_node_operations: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClaimState:
    uid: str
    name: str
    namespace: str
    pod_uids: frozenset[str]
    drivers: Mapping[str, DriverState]


def _dra_device(d: DRADevice) -> dict[str, Any]:
    return {"PoolName": d.pool_name, "DeviceName": d.device_name, "ShareID": d.share_id,
            "RequestNames": list(d.request_names) or None, "CDIDeviceIDs": list(d.cdi_device_ids) or None}


def _driver_state(s: DriverState) -> dict[str, Any]:
    out: dict[str, Any] = {"Devices": None if s.devices is None else [_dra_device(d) for d in s.devices] or None}
    if s.skip_node_operations:
        out["skipNodeOperations"] = list(s.skip_node_operations)
    return out


def dra_manager_state(claims: Sequence[ClaimState]) -> bytes:
    data = gohash.go_json({"kind": DRA_KIND, "apiVersion": DRA_API_VERSION, "ClaimInfoStateList": [{
        "ClaimUID": c.uid, "ClaimName": c.name, "Namespace": c.namespace,
        "PodUIDs": {uid: {} for uid in sorted(c.pod_uids)},
        "DriverState": {driver: _driver_state(s) for driver, s in sorted(c.drivers.items())},
    } for c in claims]})
    return gohash.go_json({"Data": data, "Checksum": zlib.crc32(data.encode())}).encode()

