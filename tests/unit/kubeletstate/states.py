"""Kubelet states covering what changes the files' bytes: empty and nil collections, policies
none/static, many NUMA nodes (encoding/json orders int keys as text: "10" < "2"), devices
without topology (NUMA -1), empty Allocate answers, HTML characters Go escapes, shared and
unprepared DRA devices, skipped node operations. Shared by the golden unit test and the test
against the kubelet's own code (tests/integration/test_kubelet_state_files.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nodeagent.kubeletstate import formats as f

GIB = 1 << 30


def _table(total: int, reserved: int, used: int) -> f.MemoryTable:
    return f.MemoryTable(total, reserved, total - reserved, used, total - reserved - used)


def _machine(nodes: int) -> dict[int, f.NUMANodeState]:
    return {n: f.NUMANodeState(1 if n == 0 else 0, {"memory": _table(16 * GIB, GIB if n == 0 else 0, GIB if n == 0
                                                                      else 0),
                                                    "hugepages-2Mi": _table(0, 0, 0),
                                                    "hugepages-1Gi": _table(2 * GIB, 0, 0)}, (n,))
            for n in range(nodes)}


STATES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "cpu-none": (f.CPU_FILE, lambda: f.cpu_manager_state(f.CPUState("none", ""))),
    "cpu-static-empty": (f.CPU_FILE, lambda: f.cpu_manager_state(f.CPUState("static", "0-15"))),
    "cpu-static": (f.CPU_FILE, lambda: f.cpu_manager_state(f.CPUState("static", "0,3-7,12-15", {
        "6f1c-b": {"main": "1-2", "side": "9-10"}, "6f1c-a": {"main": "8,11"}}))),
    "memory-none": (f.MEMORY_FILE, lambda: f.memory_manager_state(f.MemoryState("None"))),
    "memory-static": (f.MEMORY_FILE, lambda: f.memory_manager_state(f.MemoryState("Static", _machine(11), {
        "6f1c-a": {"main": [f.MemoryBlock((0,), "memory", GIB), f.MemoryBlock((0, 1), "hugepages-1Gi", 2 * GIB)]},
    }))),
    "devices-registered-only": (f.DEVICES_FILE, lambda: f.device_manager_checkpoint(f.DeviceCheckpoint(
        registered={"example.com/gpu": ["gpu-1", "gpu-0"], "example.com/gone": []}))),
    "devices": (f.DEVICES_FILE, lambda: f.device_manager_checkpoint(f.DeviceCheckpoint(
        entries=[
            f.PodDevicesEntry("6f1c-a", "main", "example.com/gpu", {0: ["gpu-0", "gpu-1"], 10: ["gpu-9"]},
                              b"\n\x15\n\x10FAKE_GPU_DEVICES\x12\x01<"),
            f.PodDevicesEntry("6f1c-a", "init", "example.com/nic", {f.NODE_WITHOUT_TOPOLOGY: ["nic&0"]}, b""),
        ],
        registered={"example.com/gpu": ["gpu-2"], "example.com/nic": []}))),
    "dra-empty": (f.DRA_FILE, lambda: f.dra_manager_state([])),
    "dra": (f.DRA_FILE, lambda: f.dra_manager_state([
        f.ClaimState("0b4f-1", "trainer-gpu-x7k2q", "default", frozenset({"pod-2", "pod-1"}), {
            "gpu.example.com": f.DriverState((
                f.DRADevice("node-a", "gpu-0", None, ("gpu",), ("k8s.gpu.example.com/gpu=gpu-0",)),
                f.DRADevice("node-a", "gpu-1", "5e1b4c2a-0000-4000-8000-000000000001", (), ()),
            )),
            "net.example.com": f.DriverState(None, ("NodePrepareResources", "NodeUnprepareResources")),
        }),
        f.ClaimState("0b4f-2", "waiting", "ns-<b>", frozenset(), {"gpu.example.com": f.DriverState(())}),
    ])),
}


def write(root: Path, name: str) -> Path:
    """Write state `name` where the kubelet keeps its file under `root`; its path."""
    file, render = STATES[name]
    path = root / "device-plugins" / file if file == f.DEVICES_FILE else root / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(render())
    return path
