"""Benchmark: v1 PodResourcesLister/List of the real daemon against an empty handler, in one run.

The real daemon (nodeagent.daemon.serve, in this process) runs on a throwaway root and
state dir under /tmp/na-bench-*, with a node profile large enough for the whole load
(cpuManagerPolicy static, 1000 cpus on 2 NUMA nodes, 4Ti memory, maxPods 200) and the
fake device plugin it spawns itself (NodeAgentConfiguration.plugins) with 448 fake GPUs
on 2 NUMA nodes. 110 Guaranteed pods of 4 containers each (2 exclusive cpus, 1Gi memory
and one example.com/gpu per container, requests = limits) are created through the daemon's
Kubernetes API and must all be Running before anything is measured. List is then served by the
daemon's own pod-resources socket, from its real providers (pod, device, cpu and memory
managers). An identical server (UnixServer with the same interceptors: metrics and a
rate limiter with the daemon's podResources qps/burst, raised so it never rejects)
answers List with an empty ListPodResourcesResponse, in the same process and event loop.

Load comes from a separate client process, as monitoring agents are: N channels with
several calls in flight each, responses fully decoded, a fixed duration per measurement,
rounds alternating between the two servers; the first answer's shape is checked (110
pods, 440 containers, each with its cpus and its device). Prints pods, containers, List/s
for both and the ratio (goal >= 0.7), plus the answer size and CPU per call of the server
(daemon) process and of the client process. Everything started is stopped (daemon, plugin,
client) and the temp dir deleted.

Run: python bench/podresources.py [--seconds 2.5] [--rounds 2] [--clients 8] [--inflight 4]
     [--profile FILE]  (cProfile of the server process during the real-List rounds)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import multiprocessing
import os
import pstats
import resource
import shutil
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from prometheus_client import CollectorRegistry  # noqa: E402

from bench.kube import KubeAPI  # noqa: E402
from nodeagent import config as config_mod  # noqa: E402
from nodeagent import daemon  # noqa: E402
from nodeagent.apis.podresources.v1 import api_pb2, api_pb2_grpc  # noqa: E402
from nodeagent.metrics.instruments import Instruments  # noqa: E402
from nodeagent.podresources import service  # noqa: E402
from nodeagent.rpc import interceptors  # noqa: E402
from nodeagent.rpc.server import Service, UnixServer, channel  # noqa: E402

PODS = 110
CONTAINERS = 4
CPUS_PER_CONTAINER = 2
GPUS_PER_NUMA = 224  # 448 devices >= 440 containers
RESOURCE = "example.com/gpu"
QPS, BURST = 1e9, 1_000_000  # podResources limiter: present on both servers, never rejects here
START_TIMEOUT = 20.0

add_lister = api_pb2_grpc.add_PodResourcesListerServicer_to_server


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


# --- the daemon under test ---

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_plugin_profile(base: Path) -> Path:
    devices = [{"id": f"gpu-{n}-{i}", "numaNode": n} for n in (0, 1) for i in range(GPUS_PER_NUMA)]
    path = base / "fake-gpu.yaml"
    path.write_text(yaml.safe_dump({
        "resourceName": RESOURCE,
        "socketName": "fake-gpu.sock",
        "getPreferredAllocation": True,
        "devices": devices,
        "allocate": {"envs": {"FAKE_GPU_DEVICES": "{ids}"}},
    }))
    return path


def daemon_config(base: Path) -> config_mod.Config:
    kubelet = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "port": 0,  # the kubelet endpoint on a free port
        "cpuManagerPolicy": "static",
        "topologyManagerPolicy": "best-effort",
        "maxPods": 200,
        "reservedSystemCPUs": "0",
        "kubeReserved": {"cpu": "1", "memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi"},
    }
    agent = {
        "apiVersion": "nodeagent.dev/v1alpha1",
        "kind": "NodeAgentConfiguration",
        "nodeName": "bench-node",
        "rootDir": str(base / "root"),
        "stateDir": str(base / "state"),
        "adminSocket": str(base / "admin.sock"),
        "metricsBindAddress": f"127.0.0.1:{_free_port()}",
        "nodeProfile": {
            "capacity": {"cpu": "1000", "memory": "4Ti", "ephemeral-storage": "10Ti"},
            "numaNodes": [
                {"id": 0, "cpus": "0-499", "memory": "2Ti"},
                {"id": 1, "cpus": "500-999", "memory": "2Ti"},
            ],
        },
        "plugins": [{
            "name": "fake-gpu",
            "command": [sys.executable, "-m", "plugins.fake_device_plugin",
                        "--config", str(write_plugin_profile(base)), "--log-level", "WARNING"],
        }],
        "podResources": {"qps": QPS, "burst": BURST},
        "shutdownTimeout": "10s",
        "controlPlane": {"apiServer": {"bindAddress": "127.0.0.1:0"}},  # a free port, never 6443
    }
    return config_mod.parse_documents([kubelet, agent])


def manifest() -> str:
    res = {"cpu": str(CPUS_PER_CONTAINER), "memory": "1Gi", RESOURCE: "1"}
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"bench-{i:03d}"},
            "spec": {"containers": [
                {"name": f"c{j}", "image": "busybox", "resources": {"requests": res, "limits": res}}
                for j in range(CONTAINERS)
            ]},
        }
        for i in range(PODS)
    ]
    return yaml.safe_dump_all(docs)


async def _until(what: str, check: Any, timeout: float = START_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.1)
    raise SystemExit(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


async def admit_pods(api: KubeAPI, node_name: str) -> None:
    async def gpus() -> int:
        node = await api.get("Node", node_name)
        return int(node["status"].get("allocatable", {}).get(RESOURCE, "0"))

    await _until(f"{2 * GPUS_PER_NUMA} allocatable {RESOURCE}", lambda: _at_least(gpus, 2 * GPUS_PER_NUMA))
    await api.create(manifest())

    async def running() -> bool | str:
        pods = await api.list("Pod")
        phases = [p["status"].get("phase") for p in pods]
        if len(pods) == PODS and all(ph == "Running" for ph in phases):
            return True
        failed = [(p["metadata"]["name"], p["status"].get("reason")) for p in pods
                  if p["status"].get("phase") == "Failed"]
        if failed:
            raise SystemExit(f"pods refused by the daemon: {failed[:5]}")
        return False

    await _until(f"{PODS} Running pods", running)


async def _at_least(value: Any, want: int) -> bool:
    return bool(await value() >= want)


# --- client process ---

@dataclass
class Round:
    """One measurement: rate, the first answer's shape and size, CPU per call on both sides."""

    qps: float
    calls: int
    pods: int
    containers: int
    complete: int  # containers holding their exclusive cpus and their one device
    answer_bytes: int
    client_cpu: float  # client process CPU seconds during the timed part
    server_cpu: float = 0.0  # server (daemon) process CPU seconds, all threads


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(path: Path, seconds: float, clients: int, inflight: int) -> Round:
    channels = [channel(path) for _ in range(clients)]
    stubs = [api_pb2_grpc.PodResourcesListerStub(ch) for ch in channels]
    request = api_pb2.ListPodResourcesRequest()
    count = 0
    try:
        for stub in stubs:  # connect
            answer = await stub.List(request)
        complete = sum(
            1 for p in answer.pod_resources for c in p.containers
            if len(c.cpu_ids) == CPUS_PER_CONTAINER
            and sum(len(d.device_ids) for d in c.devices if d.resource_name == RESOURCE) == 1
        )
        deadline = time.perf_counter() + seconds

        async def worker(stub: Any) -> None:
            nonlocal count
            while time.perf_counter() < deadline:
                await stub.List(request)  # the stub decodes every answer
                count += 1

        cpu, started = _cpu(), time.perf_counter()
        await asyncio.gather(*(worker(stub) for stub in stubs for _ in range(inflight)))
        elapsed, cpu = time.perf_counter() - started, _cpu() - cpu
    finally:
        for ch in channels:
            await ch.close(None)
    return Round(
        qps=count / elapsed,
        calls=count,
        pods=len(answer.pod_resources),
        containers=sum(len(p.containers) for p in answer.pod_resources),
        complete=complete,
        answer_bytes=answer.ByteSize(),
        client_cpu=cpu,
    )


def client_process(conn: Connection, clients: int, inflight: int) -> None:
    while True:
        job = conn.recv()
        if job is None:
            return
        path, seconds = job
        conn.send(asyncio.run(measure(Path(path), seconds, clients, inflight)))


# --- server process ---

async def run_job(conn: Connection, path: Path, seconds: float) -> Round:
    cpu = _cpu()
    conn.send((str(path), seconds))
    while not conn.poll():  # keep the event loop (and so the servers) running
        await asyncio.sleep(0.02)
    result: Round = conn.recv()
    result.server_cpu = _cpu() - cpu  # includes connecting and the first call: a small overcount
    return result


def check_shape(answer: Round) -> None:
    want = PODS * CONTAINERS
    if (answer.pods, answer.containers, answer.complete) != (PODS, want, want):
        raise SystemExit(
            f"daemon List returned {answer.pods} pods / {answer.containers} containers / {answer.complete} "
            f"with {CPUS_PER_CONTAINER} cpus and 1 device, expected {PODS} / {want} / {want}"
        )


async def bench(args: argparse.Namespace, cfg: config_mod.Config, base: Path) -> dict[str, list[Round]]:
    empty = EmptyLister()
    empty_server = UnixServer(
        base / "empty.sock",
        [Service(service.V1_SERVICE, lambda s: add_lister(empty, s))],
        interceptors=[
            interceptors.MetricsInterceptor(Instruments(CollectorRegistry())),
            interceptors.rate_limit(cfg.agent.pod_resources.qps, cfg.agent.pod_resources.burst),
        ],
    )
    paths = {"empty": empty_server.path, "list": cfg.pod_resources_socket}
    results: dict[str, list[Round]] = {name: [] for name in paths}
    profiler = cProfile.Profile() if args.profile else None
    ctx = multiprocessing.get_context("spawn")
    conn, child_conn = ctx.Pipe()
    client = ctx.Process(target=client_process, args=(child_conn, args.clients, args.inflight), daemon=True)
    await empty_server.start()
    try:
        client.start()
        for name in ("empty", "list"):  # warm-up
            answer = await run_job(conn, paths[name], min(0.3, args.seconds))
            if name == "list":
                check_shape(answer)
        for _ in range(args.rounds):
            for name in ("empty", "list"):
                if profiler and name == "list":
                    profiler.enable()
                answer = await run_job(conn, paths[name], args.seconds)
                if profiler and name == "list":
                    profiler.disable()
                results[name].append(answer)
                if name == "list":
                    check_shape(answer)
    finally:
        if client.is_alive():
            conn.send(None)
            client.join(5)
        if client.is_alive():
            client.kill()
        await empty_server.stop(0.5)
    if profiler:
        profiler.dump_stats(args.profile)
        pstats.Stats(args.profile).sort_stats("cumulative").print_stats(30)
    return results


async def main(args: argparse.Namespace) -> float:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    started = time.perf_counter()
    base = Path(tempfile.mkdtemp(prefix="na-bench-", dir="/tmp"))
    try:
        cfg = daemon_config(base)
        environ = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
        environ.pop("NOTIFY_SOCKET", None)
        environ.pop("WATCHDOG_USEC", None)
        ready, stop = asyncio.Event(), asyncio.Event()
        run = asyncio.ensure_future(daemon.serve(cfg, environ=environ, ready=ready, stop=stop))
        try:
            waiter = asyncio.ensure_future(ready.wait())
            await asyncio.wait({run, waiter}, timeout=START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if run.done():
                run.result()  # raises the daemon's error
                raise SystemExit("daemon stopped before it was ready")
            if not ready.is_set():
                raise SystemExit(f"daemon not ready after {START_TIMEOUT}s")
            api = KubeAPI(cfg.kubeconfig_path)
            try:
                await admit_pods(api, cfg.agent.node_name)
            finally:
                await api.close()
            setup = time.perf_counter() - started
            results = await bench(args, cfg, base)
        finally:
            stop.set()
            await run
    finally:
        shutil.rmtree(base, ignore_errors=True)
    empty_qps = sum(r.qps for r in results["empty"]) / len(results["empty"])
    list_qps = sum(r.qps for r in results["list"]) / len(results["list"])
    ratio = list_qps / empty_qps
    print(f"real daemon (in-process), pods={PODS} containers={PODS * CONTAINERS} "
          f"(each: {CPUS_PER_CONTAINER} exclusive cpus, 1Gi, 1 {RESOURCE}); setup {setup:.1f}s")
    print(f"client process: channels={args.clients} inflight/channel={args.inflight} "
          f"seconds={args.seconds} rounds={args.rounds}")
    for label, name, qps in (("empty handler:", "empty", empty_qps), ("daemon List:  ", "list", list_qps)):
        rounds = results[name]
        calls = sum(r.calls for r in rounds)
        print(f"{label} {qps:8.1f} List/s  rounds={[round(r.qps) for r in rounds]}  "
              f"answer={rounds[0].answer_bytes} B  cpu/call: server "
              f"{1e6 * sum(r.server_cpu for r in rounds) / calls:.0f} us, client "
              f"{1e6 * sum(r.client_cpu for r in rounds) / calls:.0f} us")
    print(f"ratio:         {ratio:8.3f}  (goal >= 0.7) {'OK' if ratio >= 0.7 else 'BELOW GOAL'}")
    print(f"total {time.perf_counter() - started:.1f}s")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--inflight", type=int, default=4)
    parser.add_argument("--profile", default="", help="write a cProfile of the real-List rounds to FILE")
    asyncio.run(main(parser.parse_args()))
