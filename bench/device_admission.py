"""Benchmark: per-pod device admission time next to a raw Allocate round trip, in one run.

Setup, as the daemon has it: the device subsystem (DeviceManager, the real kubelet.sock
registration server, the checkpoint in a SQLite StateDB on disk) and the fake device
plugin as its own process (`python -m plugins.fake_device_plugin`, a real plugin on a
real socket) with a generated profile of 216 devices on 2 NUMA nodes; it registers
through kubelet.sock as it would with the daemon.

Measured, interleaved one by one so drift hits both sides alike:
* admission: PodManager.apply(pod) of a pod whose one container holds one device, the
  path `nodeagent apply` takes (fit check, the device manager's admit: choose a device
  topology-aware, Allocate over the plugin connection, checkpoint commit; then the pod
  record commit). The device manager is the only admitter (no CPU manager) and pod
  cgroups are a no-op, so the figure is the device path. 200 pods.
* raw: the same plugin's v1beta1.DevicePlugin/Allocate called directly over its own
  grpc.aio channel for one device, 200 calls.
Also, for information, DeviceManager.admit alone (without the pod manager).

Prints median/mean/p95 of each and the ratio admission/raw (goal: at most 2x).
The plugin does not offer GetPreferredAllocation (one RPC per admission, like the raw
call); `--preferred` turns it on to see the cost of the second RPC.

Run: python bench/device_admission.py [--pods 200] [--preferred]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from prometheus_client import CollectorRegistry

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.clock import RealClock
from nodeagent.config import Config, KubeletConfig, NodeAgentConfig
from nodeagent.devices.subsystem import DeviceSubsystem
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod import Pod
from nodeagent.objects.pod_manifest import pod_from_manifest
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import NodeResources
from nodeagent.rpc.server import channel
from nodeagent.state.db import StateDB

REPO = Path(__file__).resolve().parent.parent
GPU = "example.com/gpu"
WARMUP = 8
NATIVE = {"cpu": 512_000, "memory": 4 << 40, "ephemeral-storage": 4 << 40, "pods": 1000}


class _NoCgroups:
    def create_pod_cgroup(self, pod: Pod, qos_class: str) -> None:
        pass

    def remove_pod_cgroup(self, pod: Pod, qos_class: str) -> None:
        pass


def profile(devices: int, preferred: bool) -> dict[str, Any]:
    return {
        "resourceName": GPU,
        "socketName": "bench-gpu.sock",
        "getPreferredAllocation": preferred,
        "devices": [{"id": f"gpu-{i:03d}", "numaNode": i % 2} for i in range(devices)],
        "allocate": {
            "envs": {"FAKE_GPU_DEVICES": "{ids}"},
            "annotations": {"example.com/gpu-devices": "{ids}"},
            "mounts": [{"containerPath": "/usr/local/fake-gpu", "hostPath": "/opt/fake-gpu", "readOnly": True}],
            "deviceNodes": [{"containerPath": "/dev/fake-gpu{index}", "hostPath": "/dev/null"}],
            "cdiKind": GPU,
        },
        "watchIntervalSeconds": 0.2,
    }


def gpu_pod(name: str) -> Pod:
    res = {"cpu": "100m", "memory": "64Mi", GPU: 1}
    doc = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "bench"},
        "spec": {"containers": [{"name": "main", "image": "pause", "resources": {"requests": res, "limits": res}}]},
    }
    return pod_from_manifest(doc, default_namespace="bench", clock=RealClock())


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (f"median {statistics.median(samples) * 1e6:7.0f} us   mean {statistics.fmean(samples) * 1e6:7.0f} us   "
            f"p95 {p95 * 1e6:7.0f} us")


async def wait_until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def run(args: argparse.Namespace, base: Path) -> float:
    cfg = Config(
        kubelet=KubeletConfig(topology_manager_policy=args.policy),
        agent=NodeAgentConfig(node_name="bench", root_dir=base / "root", state_dir=base / "state"),
    )
    cfg.agent.state_dir.mkdir(parents=True)
    db = StateDB(cfg.state_db)
    clock = RealClock()
    registry = CollectorRegistry()
    instruments = Instruments(registry)
    devices = DeviceSubsystem(cfg, db, instruments, clock)
    manager = devices.manager

    def node_resources() -> NodeResources:
        capacity, allocatable = manager.extended_resources()
        return NodeResources({**NATIVE, **capacity}, {**NATIVE, **allocatable})

    class Resources:
        def node_resources(self) -> NodeResources:
            return node_resources()

    pods = PodManager(
        node_name="bench", resources=Resources(), admitters=[manager], cgroups=_NoCgroups(), db=db,
        clock=clock, instruments=instruments, recorder=EventRecorder(clock=clock, host="bench"),
    )
    await devices.start()
    total = args.pods + WARMUP + 1  # held by the applied pods; +1 for the admit-only pod (released each time)
    prof = base / "bench-gpu.yaml"
    prof.write_text(yaml.safe_dump(profile(total, args.preferred)))
    plugin = subprocess.Popen(
        [sys.executable, "-m", "plugins.fake_device_plugin", "--config", str(prof),
         "--device-plugins-dir", str(cfg.device_plugins_dir), "--log-level", "WARNING"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        await wait_until(lambda: manager.extended_resources()[1].get(GPU, 0) == total, 20, "plugin registration")
        endpoint = manager.registered_endpoints()[GPU]
        async with channel(endpoint) as chan:
            stub = api_pb2_grpc.DevicePluginStub(chan)

            async def raw(i: int) -> float:
                req = api_pb2.AllocateRequest(
                    container_requests=[api_pb2.ContainerAllocateRequest(devices_ids=[f"gpu-{i % total:03d}"])])
                t = time.perf_counter()
                await stub.Allocate(req, timeout=10)
                return time.perf_counter() - t

            async def apply(pod: Pod) -> float:
                t = time.perf_counter()
                stored, _ = await pods.apply(pod)
                elapsed = time.perf_counter() - t
                if pods.status(stored.uid).phase != "Running":
                    raise SystemExit(f"bench: pod {pod.name} not admitted: {pods.status(stored.uid).reason}")
                return elapsed

            async def admit(pod: Pod) -> float:
                """DeviceManager.admit alone, released right after (not timed) so it holds nothing."""
                t = time.perf_counter()
                result = await manager.admit(pod, pods.active_pods())
                elapsed = time.perf_counter() - t
                if not result.admit:
                    raise SystemExit(f"bench: pod {pod.name} refused: {result.reason}")
                await manager.remove(pod)
                return elapsed

            for i in range(WARMUP):
                await raw(i)
                await apply(gpu_pod(f"warm-{i}"))
                await admit(gpu_pod(f"warm-admit-{i}"))
            batch = [gpu_pod(f"pod-{i:03d}") for i in range(args.pods)]
            direct = [gpu_pod(f"direct-{i:03d}") for i in range(args.pods)]
            def alloc_seconds() -> float:
                """Time the manager spent inside Allocate calls (kubelet_device_plugin_alloc_duration_seconds)."""
                value = registry.get_sample_value(
                    "kubelet_device_plugin_alloc_duration_seconds_sum", {"resource_name": GPU})
                return value or 0.0

            rpc_before = alloc_seconds()
            raws: list[float] = []
            applies: list[float] = []
            admits: list[float] = []
            for i in range(args.pods):
                raws.append(await raw(i))
                applies.append(await apply(batch[i]))
                admits.append(await admit(direct[i]))
            rpc_in_admission = (alloc_seconds() - rpc_before) / (2 * args.pods)
        held = {d.device_id for p in pods.active_pods() for d in manager.container_devices(p.uid, "main")}
        assert len(held) == args.pods + WARMUP, "a device was given twice"
    finally:
        await devices.stop()
        plugin.terminate()
        plugin.wait(10)
        db.close()

    ratio = statistics.median(applies) / statistics.median(raws)
    print(f"device admission bench: {args.pods} pods x 1 device of {total}, topologyManagerPolicy {args.policy}, "
          f"plugin {'with' if args.preferred else 'without'} GetPreferredAllocation, in its own process")
    print(f"  raw Allocate round trip           {summary(raws)}")
    print(f"  admission (PodManager.apply)      {summary(applies)}")
    print(f"  DeviceManager.admit alone (info)  {summary(admits)}")
    print(f"  of which Allocate inside the manager: mean {rpc_in_admission * 1e6:7.0f} us "
          f"(the rest, {(statistics.fmean(applies) - rpc_in_admission) * 1e6:.0f} us mean, is nodeagent's own work)")
    mean_ratio = statistics.fmean(applies) / statistics.fmean(raws)
    admit_ratio = statistics.median(admits) / statistics.median(raws)
    print(f"  ratio admission/raw (medians)     {ratio:.2f}x   (mean {mean_ratio:.2f}x; "
          f"admit alone {admit_ratio:.2f}x)   goal <= 2.00x")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--preferred", action="store_true", help="plugin offers GetPreferredAllocation")
    parser.add_argument("--policy", default="best-effort", help="topologyManagerPolicy (default: the demo's)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    base = Path(tempfile.mkdtemp(prefix="na-bench-", dir="/tmp"))
    try:
        asyncio.run(run(args, base))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
