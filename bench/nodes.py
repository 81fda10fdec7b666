"""Benchmark: many full virtual nodes (NodeAgentConfiguration.nodes) with real sockets in one process.

The real daemon (nodeagent.daemon.serve, in this process) runs on a throwaway root and state dir
under /tmp, with N full virtual nodes and no plugins: each node has its own device-plugins/
kubelet.sock, pod-resources/kubelet.sock and plugins_registry watch, its own state database, and
registers its own Node and Lease in the embedded store. Measured:
- start-to-ready: from the call of serve() until the daemon is ready: every node started, so every
  socket bound and every node's Node and Lease written (start_node awaits the node's first sync);
  wall time, and the CPU time (user + system) the process spent meanwhile (on a loaded machine the
  wall time includes waiting for a core);
- RSS: the process's resident set once ready, and its growth over the baseline before start
  (interpreter, imports) — the per-node cost is the growth divided by N;
- pod-resources List latency (p50/p99) on one node's socket while the others are idle, from a
  separate client process (so the client's own work does not load the server's loop).
Goals (issue 11): 1000 nodes in < 200 MiB RSS and < 10 s to ready.

Where the files go matters: each node creates ~29 inodes at start (sockets, directories, the simulated
cgroup tree), and on an ext4 disk under load the kernel's share of the start varies several-fold;
BENCH_DIR=/dev/shm puts the temp dir on a tmpfs, as the README's example puts node root dirs under /run.
Run: [BENCH_DIR=/tmp] python bench/nodes.py [--nodes 1000] [--calls 2000]
Last line: `nodes=N rss_mib=X ready_s=Y`.
With --cluster [--cluster-nodes 500 --cluster-pods 2500]: instead, the scheduler workload with the
nodes as API clients in a node process ÷ in process (bench/nodes_cluster.py), last line `cluster_ratio=X`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nodeagent import config as config_mod  # noqa: E402
from nodeagent import daemon  # noqa: E402

START_TIMEOUT = 120.0


def rss_mib() -> float:
    """The current resident set (VmRSS), not the peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def daemon_config(base: Path, nodes: int) -> config_mod.Config:
    return config_mod.parse_documents([
        {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "port": 0},
        {
            "apiVersion": "nodeagent.dev/v1alpha1",
            "kind": "NodeAgentConfiguration",
            "nodeName": "bench-local",
            "rootDir": str(base / "root"),
            "stateDir": str(base / "state"),
            "adminSocket": str(base / "admin.sock"),
            "metricsBindAddress": "127.0.0.1:0",
            "controlPlane": {"apiServer": {"bindAddress": ""}},
            "podResources": {"qps": 1000000, "burst": 100000},  # measure latency, not the rate limit
            "shutdownTimeout": "300s",
            "nodes": [{"name": "n{index}", "count": nodes, "rootDir": str(base / "n" / "{index}"),
                       "stateDir": str(base / "s" / "{index}")}],
        },
    ])


def _client(path: str, calls: int, conn: Connection) -> None:
    """In a separate process: `calls` sequential v1 List calls on one socket; latencies in seconds."""
    import grpc

    from nodeagent.apis.podresources.v1 import api_pb2, api_pb2_grpc

    async def run() -> list[float]:
        async with grpc.aio.insecure_channel(f"unix://{path}") as channel:
            stub = api_pb2_grpc.PodResourcesListerStub(channel)
            await stub.List(api_pb2.ListPodResourcesRequest())
            out = []
            for _ in range(calls):
                t = time.perf_counter()
                await stub.List(api_pb2.ListPodResourcesRequest())
                out.append(time.perf_counter() - t)
            return out

    conn.send(asyncio.run(run()))


def _pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p))]


async def measure(nodes: int, calls: int) -> dict[str, float]:
    base = Path(tempfile.mkdtemp(prefix="na-nodes-", dir=os.environ.get("BENCH_DIR", "/tmp")))
    try:
        cfg = daemon_config(base, nodes)
        baseline = rss_mib()
        ready, stop = asyncio.Event(), asyncio.Event()
        t0, cpu0 = time.perf_counter(), time.process_time()
        task = asyncio.ensure_future(daemon.serve(cfg, environ={}, ready=ready, stop=stop))
        done, _ = await asyncio.wait({task, asyncio.ensure_future(ready.wait())}, timeout=START_TIMEOUT,
                                     return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            task.result()
        if not ready.is_set():
            raise RuntimeError(f"not ready after {START_TIMEOUT}s")
        ready_s, ready_cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
        rss = rss_mib()
        sock = base / "n" / str(nodes // 2) / "pod-resources" / "kubelet.sock"
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_client, args=(str(sock), calls, child))
        proc.start()
        while not parent.poll():
            await asyncio.sleep(0.02)
        lat = parent.recv()
        proc.join(10)
        stop.set()
        t1 = time.perf_counter()
        await asyncio.wait_for(task, 330)
        stop_s = time.perf_counter() - t1
        return {"nodes": nodes, "rss_mib": rss, "growth_mib": rss - baseline, "ready_s": ready_s,
                "ready_cpu_s": ready_cpu_s, "p50_ms": _pct(lat, 0.5) * 1e3, "p99_ms": _pct(lat, 0.99) * 1e3,
                "stop_s": stop_s}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--cluster", action="store_true",
                    help="instead: cluster-mode scheduling ÷ in-process (bench/nodes_cluster.py)")
    ap.add_argument("--cluster-nodes", type=int, default=500)
    ap.add_argument("--cluster-pods", type=int, default=2500)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.cluster:
        from bench import nodes_cluster

        nodes_cluster.run(args.cluster_nodes, args.cluster_pods, inflight=16)
        return
    r = asyncio.run(measure(args.nodes, args.calls))
    print(f"pod-resources List on one node of {args.nodes}: p50={r['p50_ms']:.2f}ms p99={r['p99_ms']:.2f}ms")
    print(f"shutdown: {r['stop_s']:.1f}s")
    print(f"start to ready: {r['ready_s']:.2f}s wall, {r['ready_cpu_s']:.2f}s CPU of this process")
    print(f"rss growth over baseline: {r['growth_mib']:.1f} MiB ({r['growth_mib'] * 1024 / args.nodes:.0f} KiB/node)")
    print(f"nodes={args.nodes} rss_mib={r['rss_mib']:.0f} ready_s={r['ready_s']:.2f}")


if __name__ == "__main__":
    main()
