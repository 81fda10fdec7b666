"""Benchmark: v1 PodResourcesLister/List throughput against an empty handler, in one run.

110 admitted pods with 4 containers each (one device with NUMA, two exclusive CPUs and a
memory block per container) are served by the real v1 service on a unix socket; an
identical server (same interceptors: metrics and a rate limit raised to infinity)
answers List with an empty ListPodResourcesResponse. Load comes from a separate client
process, as monitoring agents are: N channels with several calls in flight each,
responses fully decoded, a fixed duration per measurement, rounds alternating between
the two servers. Prints List/s for both and the ratio (goal >= 0.7); for information
also the List path with providers that announce no generation (rebuilt on every call).

Run: python bench/podresources.py [--seconds 2.5] [--rounds 2] [--clients 8] [--inflight 4]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing
import shutil
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry

from nodeagent.apis.podresources.v1 import api_pb2, api_pb2_grpc
from nodeagent.metrics.instruments import Instruments
from nodeagent.objects.pod import Container, Pod
from nodeagent.podresources import service
from nodeagent.podresources.fakes import InMemoryResources, VersionedResources
from nodeagent.podresources.providers import DeviceInfo, MemoryBlock
from nodeagent.rpc import interceptors
from nodeagent.rpc.server import Service, UnixServer, channel

PODS = 110
add_lister = api_pb2_grpc.add_PodResourcesListerServicer_to_server
CONTAINERS = 4


def populate(res: InMemoryResources) -> None:
    cpu = 0
    for i in range(PODS):
        pod = Pod(
            uid=f"uid-{i:04d}",
            name=f"pod-{i:04d}",
            namespace="bench",
            containers=tuple(Container(name=f"c{j}", requests={"cpu": 2000}) for j in range(CONTAINERS)),
        )
        res.add_pod(pod)
        for j in range(CONTAINERS):
            res.assign(
                pod.uid,
                f"c{j}",
                devices=[DeviceInfo("example.com/gpu", f"gpu-{i}-{j}", (i % 2,))],
                cpus=[cpu % 256, (cpu + 1) % 256],
                memory=[MemoryBlock("memory", 1 << 30, (i % 2,))],
            )
            cpu += 2
    res.set_allocatable(cpus=range(256), memory=[MemoryBlock("memory", 64 << 30, (0,))])


class EmptyLister(api_pb2_grpc.PodResourcesListerServicer):
    async def List(
        self, request: api_pb2.ListPodResourcesRequest, context: Any
    ) -> api_pb2.ListPodResourcesResponse:
        return api_pb2.ListPodResourcesResponse()

    async def Get(
        self, request: api_pb2.GetPodResourcesRequest, context: Any
    ) -> api_pb2.GetPodResourcesResponse:
        return api_pb2.GetPodResourcesResponse()

    async def GetAllocatableResources(
        self, request: api_pb2.AllocatableResourcesRequest, context: Any
    ) -> api_pb2.AllocatableResourcesResponse:
        return api_pb2.AllocatableResourcesResponse()


def make_server(path: Path, services: list[Service], inst: Instruments) -> UnixServer:
    return UnixServer(
        path,
        services,
        interceptors=[interceptors.MetricsInterceptor(inst), interceptors.rate_limit(math.inf, 10)],
    )


# --- client process ---

async def measure(path: Path, seconds: float, clients: int, inflight: int) -> tuple[float, int]:
    channels = [channel(path) for _ in range(clients)]
    stubs = [api_pb2_grpc.PodResourcesListerStub(ch) for ch in channels]
    request = api_pb2.ListPodResourcesRequest()
    count = 0
    pods = 0
    try:
        for stub in stubs:  # connect
            pods = len((await stub.List(request)).pod_resources)
        deadline = time.perf_counter() + seconds

        async def worker(stub: Any) -> None:
            nonlocal count
            while time.perf_counter() < deadline:
                await stub.List(request)
                count += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(stub) for stub in stubs for _ in range(inflight)))
        elapsed = time.perf_counter() - started
    finally:
        for ch in channels:
            await ch.close(None)
    return count / elapsed, pods


def client_process(conn: Connection, clients: int, inflight: int) -> None:
    while True:
        job = conn.recv()
        if job is None:
            return
        path, seconds = job
        conn.send(asyncio.run(measure(Path(path), seconds, clients, inflight)))


# --- server process ---

async def run_job(conn: Connection, path: Path, seconds: float) -> tuple[float, int]:
    conn.send((str(path), seconds))
    while not conn.poll():  # keep the event loop (and so the servers) running
        await asyncio.sleep(0.02)
    qps, pods = conn.recv()
    return float(qps), int(pods)


async def main(args: argparse.Namespace) -> float:
    tmp = Path(tempfile.mkdtemp(prefix="na-bench-"))
    inst = Instruments(CollectorRegistry())
    versioned, plain = VersionedResources(), InMemoryResources()
    populate(versioned)
    populate(plain)
    empty = EmptyLister()
    servers = {
        "list": make_server(
            tmp / "list.sock",
            service.services(versioned, versioned, versioned, versioned, versioned, instruments=inst),
            inst,
        ),
        "empty": make_server(
            tmp / "empty.sock",
            [Service(service.V1_SERVICE, lambda s: add_lister(empty, s))],
            inst,
        ),
        "uncached": make_server(
            tmp / "uncached.sock", service.services(plain, plain, plain, plain, plain, instruments=inst), inst
        ),
    }
    results: dict[str, list[float]] = {name: [] for name in servers}
    ctx = multiprocessing.get_context("spawn")
    conn, child_conn = ctx.Pipe()
    client = ctx.Process(target=client_process, args=(child_conn, args.clients, args.inflight), daemon=True)
    try:
        for server in servers.values():
            await server.start()
        client.start()
        for server in servers.values():  # warm-up
            await run_job(conn, server.path, 0.3)
        for _ in range(args.rounds):
            for name in ("empty", "list"):
                qps, pods = await run_job(conn, servers[name].path, args.seconds)
                results[name].append(qps)
                if name == "list" and pods != PODS:
                    raise SystemExit(f"List returned {pods} pods, expected {PODS}")
        results["uncached"].append((await run_job(conn, servers["uncached"].path, args.seconds))[0])
    finally:
        if client.is_alive():
            conn.send(None)
            client.join(5)
        for server in servers.values():
            await server.stop(0.5)
        shutil.rmtree(tmp, ignore_errors=True)
    empty_qps = sum(results["empty"]) / len(results["empty"])
    list_qps = sum(results["list"]) / len(results["list"])
    uncached_qps = results["uncached"][0]
    ratio = list_qps / empty_qps
    print(f"pods={PODS} containers/pod={CONTAINERS} client process: channels={args.clients} "
          f"inflight/channel={args.inflight} seconds={args.seconds} rounds={args.rounds}")
    print(f"empty handler: {empty_qps:8.1f} List/s  rounds={[round(x) for x in results['empty']]}")
    print(f"real List:     {list_qps:8.1f} List/s  rounds={[round(x) for x in results['list']]}")
    print(f"ratio:         {ratio:8.3f}  (goal >= 0.7) {'OK' if ratio >= 0.7 else 'BELOW GOAL'}")
    print(f"info: List with providers without generation(), rebuilt every call: {uncached_qps:.1f} List/s "
          f"(ratio {uncached_qps / empty_qps:.3f})")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--inflight", type=int, default=4)
    asyncio.run(main(parser.parse_args()))
