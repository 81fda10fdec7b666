"""Benchmark: a device plugin flapping a held device's health, pod updates coalesced or not, in one run.

The node side runs in this process: the real device manager (DeviceSubsystem on kubelet.sock
under a throwaway root in /tmp/na-bench-*) and the real pod manager, one pod holding all four
devices, its allocatedResourcesStatus written on every update it receives (state DB commit and
an event, as in the daemon). A plugin in a child process registers and streams ListAndWatch with
gpu-0 flipping Healthy/Unhealthy at --rate flips per second. Rounds alternate between passing
every update to the pod manager (interval 0: what the daemon did before) and the daemon's
HealthCoalescer (HEALTH_COALESCE, 0.25 s); each round reports this process's CPU use, the
updates the pod manager received and the log lines written. Prints the CPU ratio after/before.

Run: python bench/health_flap.py [--rate 1000] [--seconds 3] [--rounds 2] [--profile N]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import multiprocessing
import pstats
import resource
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.config import Config, KubeletConfig, NodeAgentConfig
from nodeagent.devices.health import HealthCoalescer
from nodeagent.devices.subsystem import DeviceSubsystem
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod.manifest import pod_from_manifest
from nodeagent.objects.pod.model import Pod, ResourceStatus
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.pods.ports import NodeResources
from nodeagent.rpc.server import Service, UnixServer, channel
from nodeagent.state.db import StateDB
from nodeagent.util.clock import RealClock
from nodeagent.wiring.node_resources import HEALTH_COALESCE

GPU = "example.com/gpu"
DEVICES = ("gpu-0", "gpu-1", "gpu-2", "gpu-3")


class _Flapper(api_pb2_grpc.DevicePluginServicer):
    def __init__(self, rate: float) -> None:
        self._rate = rate

    async def GetDevicePluginOptions(self, request: Any, context: Any) -> api_pb2.DevicePluginOptions:
        return api_pb2.DevicePluginOptions()

    async def ListAndWatch(self, request: Any, context: Any) -> Any:
        healthy = True
        while True:
            yield api_pb2.ListAndWatchResponse(devices=[
                api_pb2.Device(ID=d, health="Healthy" if (d != "gpu-0" or healthy) else "Unhealthy")
                for d in DEVICES])
            healthy = not healthy
            await asyncio.sleep(1.0 / self._rate)

    async def Allocate(self, request: Any, context: Any) -> api_pb2.AllocateResponse:
        return api_pb2.AllocateResponse(container_responses=[
            api_pb2.ContainerAllocateResponse() for _ in request.container_requests])


def _plugin_main(plugins_dir: str, rate: float) -> None:
    async def run() -> None:
        sock = Path(plugins_dir) / "flap.sock"
        servicer = _Flapper(rate)
        server = UnixServer(sock, [Service("v1beta1.DevicePlugin",
                                           lambda s: api_pb2_grpc.add_DevicePluginServicer_to_server(servicer, s))])
        await server.start()
        async with channel(Path(plugins_dir) / "kubelet.sock") as ch:
            await api_pb2_grpc.RegistrationStub(ch).Register(
                api_pb2.RegisterRequest(version="v1beta1", endpoint="flap.sock", resource_name=GPU), timeout=10)
        await asyncio.Event().wait()

    asyncio.run(run())


class _NoCgroups:
    def create_pod_cgroup(self, pod: Pod, qos_class: str) -> None:
        pass

    def remove_pod_cgroup(self, pod: Pod, qos_class: str) -> None:
        pass


class _Resources:
    def node_resources(self) -> NodeResources:
        return NodeResources(capacity={"cpu": 64_000, "memory": 1 << 40, "pods": 110, GPU: 4},
                             allocatable={"cpu": 64_000, "memory": 1 << 40, "pods": 110, GPU: 4})


class _CountLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines = 0
        self.bytes = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.bytes += len(self.format(record)) + 1
        self.lines += 1


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main(args: argparse.Namespace) -> None:
    base = Path(tempfile.mkdtemp(prefix="na-bench-", dir="/tmp"))
    proc: multiprocessing.process.BaseProcess | None = None
    counter = _CountLines()
    logging.getLogger().addHandler(counter)
    logging.getLogger().setLevel(logging.INFO)
    try:
        clock = RealClock()
        cfg = Config(kubelet=KubeletConfig(),
                     agent=NodeAgentConfig(node_name="bench", root_dir=base / "root", state_dir=base / "state"))
        db = StateDB(base / "state" / "state.db")
        recorder = EventRecorder(clock=clock, host="bench")
        pods_ref: list[PodManager] = []
        received = [0]

        async def to_pods(uid: str, container: str, statuses: tuple[ResourceStatus, ...]) -> None:
            received[0] += 1
            await pods_ref[0].on_resource_health(uid, container, statuses)

        current: list[Any] = [to_pods]

        async def switch(uid: str, container: str, statuses: tuple[ResourceStatus, ...]) -> None:
            await current[0](uid, container, statuses)

        devices = DeviceSubsystem(cfg, db, Instruments(CollectorRegistry()), clock, on_health_change=switch,
                                  record=recorder.emit, pod_health_events=False)
        await devices.start()
        pods = PodManager(node_name="bench", resources=_Resources(), admitters=[devices.manager],
                          cgroups=_NoCgroups(), db=db, clock=clock, instruments=Instruments(CollectorRegistry()),
                          recorder=recorder)
        pods_ref.append(pods)
        proc = multiprocessing.get_context("spawn").Process(
            target=_plugin_main, args=(str(cfg.device_plugins_dir), args.rate), daemon=True)
        proc.start()
        for _ in range(200):
            if devices.manager.extended_resources()[0].get(GPU) == 4:
                break
            await asyncio.sleep(0.05)
        else:
            raise SystemExit("the flapping plugin did not register")
        res = {"cpu": "1", "memory": "64Mi", GPU: 4}
        pod = pod_from_manifest({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "holder", "namespace": "bench"},
            "spec": {"containers": [{"name": "main", "image": "pause",
                                     "resources": {"requests": res, "limits": res}}]}}, clock=clock)
        await pods.apply(pod)
        results: dict[str, list[tuple[float, int, int, float, int]]] = {"before": [], "after": []}
        prof = cProfile.Profile() if args.profile else None
        if prof is not None:
            prof.enable()
        for _ in range(args.rounds):
            for mode in ("before", "after"):
                coalescer = HealthCoalescer(to_pods, clock, HEALTH_COALESCE) if mode == "after" else None
                current[0] = coalescer if coalescer is not None else to_pods
                await asyncio.sleep(0.5)  # settle
                received[0], counter.lines, counter.bytes = 0, 0, 0
                start, wall, gen = _cpu(), clock.monotonic(), devices.manager.generation()
                await asyncio.sleep(args.seconds)
                used = _cpu() - start
                flips = max(1, devices.manager.generation() - gen)  # one device update per flip
                results[mode].append((used / (clock.monotonic() - wall), received[0], counter.lines,
                                      used / flips, counter.bytes))
                if coalescer is not None:
                    await coalescer.close()
        if prof is not None:
            prof.disable()
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(args.profile)
        for mode, rows in results.items():
            cpu = sum(r[0] for r in rows) / len(rows)
            updates = sum(r[1] for r in rows) / len(rows) / args.seconds
            lines = sum(r[2] for r in rows) / len(rows) / args.seconds
            per_flip = sum(r[3] for r in rows) / len(rows)
            log_bytes = sum(r[4] for r in rows) / len(rows) / args.seconds
            print(f"{mode:6}  cpu {cpu * 100:5.1f} %   cpu per flip {per_flip * 1e6:6.0f} us   "
                  f"pod updates {updates:7.1f}/s   log lines {lines:6.1f}/s   log {log_bytes:7.0f} B/s")
        before = sum(r[3] for r in results["before"]) / len(results["before"])
        after = sum(r[3] for r in results["after"]) / len(results["after"])
        print(f"flip rate asked {args.rate:g}/s   cpu per flip after/before {after / before:.2f}")
        await devices.stop()
        await pods.close()
        db.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.join(5)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions (cProfile)")
    asyncio.run(main(parser.parse_args()))
