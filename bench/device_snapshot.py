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
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2, api_pb2_grpc
from nodeagent.devices.plugin_client import INLINE_CONVERT_MAX, GrpcPluginDialer
from nodeagent.metrics.instruments import Instruments
from nodeagent.rpc.server import Service, UnixServer

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
    asyncio.run(main(parser.parse_args()))
