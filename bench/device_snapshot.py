"""Benchmark: how long a 100,000-device ListAndWatch snapshot stalls the event loop, in one run.

A device plugin (in this process, on a unix socket under /tmp/na-bench-*) streams four
snapshots of --devices devices built beforehand (one device's health differs in each; the
plugin side only serializes them), and the node's plugin
client (GrpcPluginConnection.list_and_watch) receives and converts them. A ticker task on the
same loop measures the longest stall: what every other socket (pod-resources List, kubelet.sock,
the API server) waits at worst. Rounds alternate between converting every snapshot on the loop
and the client's default (snapshots over INLINE_CONVERT_MAX devices converted in a worker thread),
and the ratio of the worst stalls is printed. Everything started is stopped and the folder removed.

Run: python bench/device_snapshot.py [--devices 100000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import multiprocessing
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.apis.podresources.v1 import api_pb2 as pr_pb2
from nodeagent.apis.podresources.v1 import api_pb2_grpc as pr_grpc
from nodeagent.config import Config, KubeletConfig, NodeAgentConfig
from nodeagent.devices.plugin_client import INLINE_CONVERT_MAX, GrpcPluginDialer
from nodeagent.devices.subsystem import DeviceSubsystem
from nodeagent.metrics.instruments import Instruments
from nodeagent.podresources import service as pr_service
from nodeagent.podresources.fakes import VersionedResources
from nodeagent.rpc.server import Service, UnixServer, channel
from nodeagent.state.db import StateDB
from nodeagent.util.clock import RealClock

SNAPSHOTS = 4
TICK = 0.005


class _Plugin(api_pb2_grpc.DevicePluginServicer):
    def __init__(self, devices: int) -> None:
        # Built before the measurement: only the node side's work is on the measured loop.
        self._snapshots = [api_pb2.ListAndWatchResponse(devices=[
            api_pb2.Device(ID=f"dev-{i}", health="Unhealthy" if i == k else "Healthy",
                           topology=api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=i % 2)]))
            for i in range(devices)]) for k in range(SNAPSHOTS)]

    async def ListAndWatch(self, request: Any, context: Any) -> Any:
        for snapshot in self._snapshots:
            yield snapshot
        await asyncio.sleep(3600)


async def worst_stall(devices: int, inline_max: int) -> float:
    base = Path(tempfile.mkdtemp(prefix="na-bench-", dir="/tmp"))
    server = UnixServer(base / "p.sock", [Service(
        "v1beta1.DevicePlugin", lambda s: api_pb2_grpc.add_DevicePluginServicer_to_server(_Plugin(devices), s))])
    worst = 0.0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            worst = max(worst, now - last - TICK)
            last = now

    try:
        await server.start()
        dialer = GrpcPluginDialer(Instruments(CollectorRegistry()), allocate_timeout=5.0,
                                  inline_convert_max=inline_max)
        conn = await dialer.dial("example.com/dev", base / "p.sock")
        tick = asyncio.ensure_future(ticker())
        try:
            seen = 0
            async for _ in conn.list_and_watch():
                seen += 1
                if seen == SNAPSHOTS:
                    break
        finally:
            stop.set()
            await tick
            await conn.close()
    finally:
        await server.stop(grace=0)
        shutil.rmtree(base, ignore_errors=True)
    return worst


RESOURCE = "example.com/dev"


class _Flapper(api_pb2_grpc.DevicePluginServicer):
    """Sends the full device list with device 0's health switched, `rate` times a second."""

    def __init__(self, devices: int, rate: float) -> None:
        self._snapshots = [api_pb2.ListAndWatchResponse(devices=[
            api_pb2.Device(ID=f"dev-{i}", health="Unhealthy" if i == 0 and k else "Healthy",
                           topology=api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=i % 2)]))
            for i in range(devices)]).SerializeToString() for k in range(2)]
        self._rate = rate

    async def GetDevicePluginOptions(self, request: Any, context: Any) -> api_pb2.DevicePluginOptions:
        return api_pb2.DevicePluginOptions()

    async def ListAndWatch(self, request: Any, context: Any) -> Any:
        k = 0
        while True:
            yield api_pb2.ListAndWatchResponse.FromString(self._snapshots[k])
            k = 1 - k
            await asyncio.sleep(1.0 / self._rate)


def _plugin_main(plugins_dir: str, devices: int, rate: float) -> None:
    async def run() -> None:
        servicer = _Flapper(devices, rate)
        server = UnixServer(Path(plugins_dir) / "flap.sock", [Service(
            "v1beta1.DevicePlugin", lambda s: api_pb2_grpc.add_DevicePluginServicer_to_server(servicer, s))])
        await server.start()
        async with channel(Path(plugins_dir) / "kubelet.sock") as ch:
            await api_pb2_grpc.RegistrationStub(ch).Register(api_pb2.RegisterRequest(
                version="v1beta1", endpoint="flap.sock", resource_name=RESOURCE), timeout=30)
        await asyncio.Event().wait()

    asyncio.run(run())


def _client_main(sock: str, seconds: float, out: Any) -> None:
    async def run() -> dict[str, list[float]]:
        times: dict[str, list[float]] = {"List": [], "GetAllocatableResources": []}
        async with channel(Path(sock)) as ch:
            stub = pr_grpc.PodResourcesListerStub(ch)
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                t = time.perf_counter()
                await stub.List(pr_pb2.ListPodResourcesRequest(), timeout=60)
                times["List"].append(time.perf_counter() - t)
                t = time.perf_counter()
                await stub.GetAllocatableResources(pr_pb2.AllocatableResourcesRequest(), timeout=60)
                times["GetAllocatableResources"].append(time.perf_counter() - t)
        return times

    out.send(asyncio.run(run()))


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def podresources_latency(devices: int, rate: float, seconds: float,
                               profile: int = 0) -> dict[str, tuple[float, float, int]]:
    """(p50, p99, calls) per method while a plugin of `devices` devices flaps at `rate` snapshots/s."""
    base = Path(tempfile.mkdtemp(prefix="na-bench-", dir="/tmp"))
    ctx = multiprocessing.get_context("spawn")
    procs: list[Any] = []
    clock = RealClock()
    cfg = Config(kubelet=KubeletConfig(),
                 agent=NodeAgentConfig(node_name="bench", root_dir=base / "root", state_dir=base / "state"))
    db = StateDB(base / "state" / "state.db")
    subsystem = DeviceSubsystem(cfg, db, Instruments(CollectorRegistry()), clock)
    others = VersionedResources()
    server = UnixServer(base / "pr.sock", pr_service.services(
        others, subsystem.manager, others, others, instruments=Instruments(CollectorRegistry())))
    try:
        await subsystem.start()
        await server.start()
        plugin = ctx.Process(target=_plugin_main, args=(str(cfg.device_plugins_dir), devices, rate), daemon=True)
        plugin.start()
        procs.append(plugin)
        for _ in range(1200):
            if subsystem.manager.extended_resources()[0].get(RESOURCE) == devices:
                break
            await asyncio.sleep(0.05)
        else:
            raise SystemExit(f"the flapping plugin of {devices} devices did not register")
        start_gen = subsystem.manager.generation()
        receiver, sender = ctx.Pipe(duplex=False)
        client = ctx.Process(target=_client_main, args=(str(base / "pr.sock"), seconds, sender), daemon=True)
        client.start()
        procs.append(client)
        prof = cProfile.Profile() if profile else None
        if prof is not None:
            prof.enable()
        while not receiver.poll():
            await asyncio.sleep(0.05)
        times = receiver.recv()
        if prof is not None:
            prof.disable()
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(profile)
        flips = subsystem.manager.generation() - start_gen
        print(f"  devices {devices:6}: {flips} health changes applied while measuring")
        return {m: (_pct(v, 0.5), _pct(v, 0.99), len(v)) for m, v in times.items()}
    finally:
        for proc in procs:
            proc.terminate()
            proc.join(5)
        await server.stop(grace=0)
        await subsystem.stop()
        db.close()
        shutil.rmtree(base, ignore_errors=True)


async def podresources_main(args: argparse.Namespace) -> None:
    print(f"pod-resources while a plugin flaps one device's health {args.flip_rate:g} times a second:")
    small = await podresources_latency(100, args.flip_rate, args.seconds)
    large = await podresources_latency(args.devices, args.flip_rate, args.seconds, args.profile)
    for method in small:
        s50, s99, sn = small[method]
        l50, l99, ln = large[method]
        print(f"{method:24} 100 devices p50 {s50 * 1e3:7.1f} ms p99 {s99 * 1e3:7.1f} ms ({sn} calls)   "
              f"{args.devices} devices p50 {l50 * 1e3:7.1f} ms p99 {l99 * 1e3:7.1f} ms ({ln} calls)   "
              f"p99 ratio {l99 / s99:.1f}")


async def main(args: argparse.Namespace) -> None:
    results: dict[str, list[float]] = {"on the loop": [], "worker thread": []}
    for _ in range(args.rounds):
        results["on the loop"].append(await worst_stall(args.devices, 1 << 62))
        results["worker thread"].append(await worst_stall(args.devices, INLINE_CONVERT_MAX))
    for mode, stalls in results.items():
        print(f"{mode:14} worst loop stall {max(stalls):6.3f} s   (rounds: {', '.join(f'{s:.3f}' for s in stalls)})")
    ratio = max(results["worker thread"]) / max(results["on the loop"])
    print(f"devices {args.devices}   snapshots {SNAPSHOTS}   worst stall thread/loop {ratio:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--flip-rate", type=float, default=10.0, help="snapshots per second of the flapping plugin")
    parser.add_argument("--seconds", type=float, default=4.0, help="pod-resources measurement per device count")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions (large run)")
    parser.add_argument("--only", choices=["stall", "podresources"], default=None)
    parsed = parser.parse_args()
    if parsed.only != "podresources":
        asyncio.run(main(parsed))
    if parsed.only != "stall":
        asyncio.run(podresources_main(parsed))
