"""Benchmark: per-pod admission time next to a raw Allocate round trip, in one run.

Setup, as the daemon has it: the device subsystem (DeviceManager, the real kubelet.sock
registration server, the checkpoint in a SQLite StateDB on disk) and the fake device
plugin as its own process (`python -m plugins.fake_device_plugin`, a real plugin on a
real socket) with a generated profile of devices on 2 NUMA nodes; it registers through
kubelet.sock as it would with the daemon. The node is 2 sockets x 16 cores x 2 threads
(one NUMA node per socket, the profile shorthand); the pod manager admits through the
topology manager over the CPU manager (static), the memory manager (Static, when it
exists) and the device manager, as the daemon wires them (the device manager through the
daemon's DeviceAdmitter, which is also a pod starter next to the DRA manager, so a pod goes
Running through the same start path as in the daemon). Pod cgroups are a no-op.

Measured, interleaved one by one so drift hits both sides alike:
* raw: the plugin's v1beta1.DevicePlugin/Allocate called directly over its own grpc.aio
  channel for one device;
* device-only admission: PodManager.apply of a Burstable pod whose one container holds
  one device (no exclusive CPUs, no memory blocks; hints from the device manager only),
  under --policy (default best-effort);
* Guaranteed admission: PodManager.apply of a Guaranteed pod with 2 exclusive CPUs,
  1Gi of memory and one device under single-numa-node (all three on one NUMA node),
  deleted again after each measurement (not timed) so the CPUs come back.

Prints median/mean/p95 of each and the ratios admission/raw (goals: device-only <= 1.5x,
Guaranteed <= 2.0x). The plugin does not offer GetPreferredAllocation (one RPC per
admission, like the raw call); `--preferred` turns it on to see the cost of the second RPC.

Run: python bench/device_admission.py [--pods 200] [--preferred] [--policy best-effort]
     [--profile tottime|cumulative]   (cProfile of the admissions; the figures are then not comparable)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import os
import pstats
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
from nodeagent.cm.cpumanager.manager import CPUManager
from nodeagent.cm.topology.discover import from_spec
from nodeagent.cm.topologymanager.manager import TopologyManager
from nodeagent.cm.topologymanager.policy import NUMAInfo
from nodeagent.config import Config, KubeletConfig, NodeAgentConfig
from nodeagent.config.cputopology import expand
from nodeagent.config.model import CpuTopologySpec
from nodeagent.devices.subsystem import DeviceSubsystem
from nodeagent.dra.manager import DRAManager
from nodeagent.dra.registry import DRARegistry
from nodeagent.errors import ConfigError
from nodeagent.metrics.instruments import Instruments
from nodeagent.nodeapi.claims import NodeClaims
from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.model import Pod, ResourceStatus
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.hints import HintProvider
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import NodeResources
from nodeagent.rpc.server import channel
from nodeagent.state.db import StateDB
from nodeagent.util.clock import RealClock
from nodeagent.wiring.node_resources import AdmissionResources, DeviceAdmitter

REPO = Path(__file__).resolve().parent.parent
GPU = "example.com/gpu"
WARMUP = 8
TOPOLOGY = from_spec(CpuTopologySpec(cores=expand(2, 16, 2)))
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


def gpu_pod(name: str, guaranteed: bool = False) -> Pod:
    res = {"cpu": "2", "memory": "1Gi", GPU: 1} if guaranteed else {"cpu": "100m", "memory": "64Mi", GPU: 1}
    limits = res if guaranteed else {GPU: 1}
    doc = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "bench"},
        # bound to the node, as every pod the daemon's node sync applies (nodesync/podsource.py skips others)
        "spec": {"nodeName": "bench",
                 "containers": [{"name": "main", "image": "pause", "resources": {"requests": res, "limits": limits}}]},
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


def build_cm(cfg: Config, db: StateDB) -> tuple[CPUManager, HintProvider | None]:
    """The CPU manager (static, 1 reserved cpu) and the memory manager (Static) when available."""
    cpu = CPUManager("static", TOPOLOGY, db, reserved_milli=1000)
    memory: HintProvider | None = None
    try:
        from nodeagent.cm.memorymanager.manager import MemoryManager

        numa_memory = {n: {"memory": 256 << 30} for n in TOPOLOGY.numa_nodes}
        memory = MemoryManager("Static", numa_memory, db, reserved_memory={0: {"memory": 1 << 30}},
                               node_reservation={"memory": 1 << 30})
    except (ImportError, ConfigError) as err:
        print(f"  (no memory manager: {err})")
    return cpu, memory


async def run(args: argparse.Namespace, base: Path) -> None:
    cfg = Config(
        kubelet=KubeletConfig(topology_manager_policy=args.policy),
        agent=NodeAgentConfig(node_name="bench", root_dir=base / "root", state_dir=base / "state"),
    )
    cfg.agent.state_dir.mkdir(parents=True)
    db = StateDB(cfg.state_db)
    clock = RealClock()
    registry = CollectorRegistry()
    instruments = Instruments(registry)
    devices = DeviceSubsystem(cfg, db, instruments, clock, numa_nodes=TOPOLOGY.numa_nodes)
    manager = devices.manager
    cpu, memory = build_cm(cfg, db)

    async def on_health(uid: str, container: str, statuses: tuple[ResourceStatus, ...]) -> None:
        pass

    device_admitter = DeviceAdmitter(manager, on_health)
    providers: list[HintProvider] = [cpu, *([memory] if memory is not None else []), device_admitter]
    # The DRA manager as the daemon's first pod starter (these pods have no claims).
    dra = DRAManager(DRARegistry(clock, instruments), NodeClaims(lambda ns, name: None, lambda ns, name: None),
                     db, clock)

    class Node:
        """What NodeView merges (native figures + the device manager's extended resources)."""

        def node_resources(self) -> NodeResources:
            capacity, allocatable = manager.extended_resources()
            return NodeResources({**NATIVE, **capacity}, {**NATIVE, **allocatable})

    # The daemon's admission view over it (the device manager's sanitizeNodeAllocatable step included).
    resources = AdmissionResources(Node(), manager)

    def pod_manager(policy: str) -> PodManager:
        tm = TopologyManager(providers, policy=policy, scope="container",
                             numa=NUMAInfo(TOPOLOGY.numa_nodes, TOPOLOGY.distances()), db=db)
        return PodManager(
            node_name="bench", resources=resources, admitters=[tm], cgroups=_NoCgroups(), db=db,
            clock=clock, instruments=instruments, recorder=EventRecorder(clock=clock, host="bench"),
            starters=[dra, device_admitter],
        )

    profiler = cProfile.Profile() if args.profile else None
    pods = pod_manager(args.policy)
    pinned = pod_manager("single-numa-node")
    await devices.start()
    total = 2 * (args.pods + WARMUP) + 2
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

            async def apply(pm: PodManager, pod: Pod) -> float:
                if profiler is not None:
                    profiler.enable()
                t = time.perf_counter()
                stored, _ = await pm.apply(pod)
                elapsed = time.perf_counter() - t
                if profiler is not None:
                    profiler.disable()
                if pm.status(stored.uid).phase != "Running":
                    status = pm.status(stored.uid)
                    raise SystemExit(f"bench: pod {pod.name} not admitted: {status.reason} {status.message}")
                return elapsed

            async def guaranteed(pod: Pod) -> float:
                elapsed = await apply(pinned, pod)
                cpus = set(cpu.container_cpus(pod.uid, "main"))
                numa = {TOPOLOGY.numa_of(c) for c in cpus}
                dev_numa = {n for d in manager.container_devices(pod.uid, "main") for n in d.numa_nodes}
                if len(cpus) != 2 or len(numa) != 1 or dev_numa != numa:
                    raise SystemExit(f"bench: pod {pod.name} not aligned: cpus {cpus} devices on {dev_numa}")
                await pinned.delete(pod.namespace, pod.name)
                return elapsed

            for i in range(WARMUP):
                await raw(i)
                await apply(pods, gpu_pod(f"warm-{i}"))
                await guaranteed(gpu_pod(f"warm-gu-{i}", guaranteed=True))
            batch = [gpu_pod(f"pod-{i:03d}") for i in range(args.pods)]
            gu = [gpu_pod(f"gu-{i:03d}", guaranteed=True) for i in range(args.pods)]

            def alloc_seconds() -> float:
                """Time the manager spent inside Allocate calls (kubelet_device_plugin_alloc_duration_seconds)."""
                value = registry.get_sample_value(
                    "kubelet_device_plugin_alloc_duration_seconds_sum", {"resource_name": GPU})
                return value or 0.0

            rpc_before = alloc_seconds()
            raws: list[float] = []
            applies: list[float] = []
            pinned_applies: list[float] = []
            for i in range(args.pods):
                raws.append(await raw(i))
                applies.append(await apply(pods, batch[i]))
                pinned_applies.append(await guaranteed(gu[i]))
            rpc_in_admission = (alloc_seconds() - rpc_before) / (2 * args.pods)
        held = {d.device_id for p in pods.active_pods() for d in manager.container_devices(p.uid, "main")}
        assert len(held) == args.pods + WARMUP, "a device was given twice"
    finally:
        await devices.stop()
        plugin.terminate()
        plugin.wait(10)
        db.close()

    if profiler is not None:
        stats = pstats.Stats(profiler)
        stats.sort_stats(args.profile).print_stats(40)
    ratio = statistics.median(applies) / statistics.median(raws)
    pinned_ratio = statistics.median(pinned_applies) / statistics.median(raws)
    print(f"admission bench: {args.pods} pods per kind, {total} devices, 2 sockets x 16 cores x 2 threads, "
          f"plugin {'with' if args.preferred else 'without'} GetPreferredAllocation, in its own process; "
          f"memory manager {'Static' if memory is not None else 'absent'}")
    print(f"  raw Allocate round trip                 {summary(raws)}")
    print(f"  device-only admission ({args.policy:>16}) {summary(applies)}")
    print(f"  Guaranteed cpu+memory+device (s-n-n)   {summary(pinned_applies)}")
    print(f"  of which Allocate inside the manager: mean {rpc_in_admission * 1e6:7.0f} us per admission")
    print(f"  ratio device-only/raw (medians)   {ratio:.2f}x   (mean "
          f"{statistics.fmean(applies) / statistics.fmean(raws):.2f}x)   goal <= 1.50x")
    print(f"  ratio Guaranteed/raw (medians)    {pinned_ratio:.2f}x   (mean "
          f"{statistics.fmean(pinned_applies) / statistics.fmean(raws):.2f}x)   goal <= 2.00x")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--preferred", action="store_true", help="plugin offers GetPreferredAllocation")
    parser.add_argument("--policy", default="best-effort", help="topologyManagerPolicy (default: the demo's)")
    parser.add_argument("--profile", metavar="SORT", choices=("tottime", "cumulative"),
                        help="cProfile the admissions (both kinds, in process) and print the top 40 by SORT")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    base = Path(tempfile.mkdtemp(prefix="na-bench-", dir="/tmp"))
    try:
        asyncio.run(run(args, base))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
