"""Benchmark: bench/scheduler.py's plain workload with the nodes as API clients over the network,
divided by the same workload in one process, in one run (issue 11, cluster mode).

(a) In process: bench/scheduler.py's `run` (store, control plane and 500 virtual nodes with 10
    devices each in this process; an init batch, then the measured batch of ResourceClaimTemplate
    pods, counted from the first create until every pod is bound).
(b) Cluster mode: a control plane process (`nodeagent run`, `node.enabled: false`, its API server
    on loopback, as configs/controlplane.yaml) and ONE node process (`cluster.kubeconfig`,
    `node.enabled: false`) serving the same 500 virtual nodes as API clients (nodeapi/virtual.py:
    Nodes, slices, Leases, one pod watch, pod status patches). This process is the user: it applies
    the DeviceClass and the ResourceClaimTemplate through the API, creates an init batch and a
    measured batch of pods with several requests in flight (a client at QPS), and counts each batch
    until every pod is bound, from a watch (fieldSelector spec.nodeName!=).
Printed: both rates, the CPU each process spent per measured pod (where cluster mode spends its
time), and last `cluster_ratio=X` (goal: >= 0.3).

Run: python bench/nodes.py --cluster [--cluster-nodes 500] [--cluster-pods 2500]
     (or python bench/nodes_cluster.py [--nodes 500] [--pods 2500] [--inflight 16])
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import orjson  # noqa: E402
import yaml  # noqa: E402
from kubernetes_asyncio import client as k8s  # noqa: E402

from bench import scheduler as scheduler_bench  # noqa: E402
from nodeagent.nodeapi.remote import RemoteAPI  # noqa: E402
from nodeagent.util import gcsettings  # noqa: E402
from nodeagent.util.kubeclient import load_client  # noqa: E402

HOST = "bench-vhost"
START_TIMEOUT = 180.0
TICK = os.sysconf("SC_CLK_TCK")
PATHS = {"DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
         "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (/proc/<pid>/stat), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def write_config(path: Path, base: Path, agent: dict[str, Any]) -> Path:
    doc = {"apiVersion": "nodeagent.dev/v1alpha1", "kind": "NodeAgentConfiguration",
           "rootDir": str(base / "root"), "stateDir": str(base / "state"), "adminSocket": str(base / "admin.sock"),
           "metricsBindAddress": f"127.0.0.1:{free_port()}", **agent}
    path.write_text(yaml.safe_dump_all([{"apiVersion": "kubelet.config.k8s.io/v1beta1",
                                         "kind": "KubeletConfiguration", "port": 0}, doc]))
    return path


@dataclass
class Proc:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited {self.proc.returncode}: {self.log.read_text()[-3000:]}")


KEEP = False
"""--keep: leave the processes' folder (configs, logs) in /tmp."""
PROFILE_DIR: Path | None = None
"""--profile DIR: each process runs under cProfile, written to DIR/<name>.prof at its exit."""


@contextlib.contextmanager
def started(name: str, config: Path, log: Path) -> Iterator[Proc]:
    prefix = ["-m", "cProfile", "-o", str(PROFILE_DIR / f"{name}.prof")] if PROFILE_DIR else []
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, *prefix, "-m", "nodeagent.cli", "run", "--config", str(config)],
                                stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        try:
            yield Proc(name, proc, log)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


async def wait_until(what: str, check: Any, procs: list[Proc], timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in procs:
            p.check()
        with contextlib.suppress(Exception):
            if await check():
                return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


class Client:
    """The user's side of the measured batches: a real HTTPS client of the API (the kubeconfig's
    server, CA and credentials, one keep-alive session) that sends pre-encoded JSON and decodes
    with orjson. It is not the system under test: kubernetes_asyncio's per-request model
    serialisation would only take CPU from the two processes measured on the same cores."""

    def __init__(self, api: k8s.ApiClient) -> None:
        self.api = api
        self.host = str(api.configuration.host).rstrip("/")
        self.session: aiohttp.ClientSession = api.rest_client.pool_manager
        self.headers: dict[str, str] = {"Accept": "application/json", "Content-Type": "application/json"}

    @classmethod
    async def load(cls, kubeconfig: Path) -> Client:
        api = await load_client(kubeconfig, "bench-nodes-cluster")
        out = cls(api)
        token = await api.configuration.get_api_key_with_prefix("BearerToken")
        if token:
            out.headers["Authorization"] = token
        return out

    async def close(self) -> None:
        await self.api.close()

    async def get(self, path: str, query: list[tuple[str, str]]) -> Any:
        async with self.session.get(self.host + path, params=query, headers=self.headers) as resp:
            body = await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"GET {path}: {resp.status} {body[:300]!r}")
            return orjson.loads(body)

    async def post(self, path: str, obj: Any) -> None:
        async with self.session.post(self.host + path, data=orjson.dumps(obj), headers=self.headers) as resp:
            body = await resp.read()
            if resp.status != 201:
                raise RuntimeError(f"POST {path}: {resp.status} {body[:300]!r}")

    async def watch(self, path: str, query: list[tuple[str, str]]) -> AsyncIterator[dict[str, Any]]:
        async with self.session.get(self.host + path, params=query, headers=self.headers,
                                    timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
            if resp.status != 200:
                raise RuntimeError(f"WATCH {path}: {resp.status} {(await resp.read())[:300]!r}")
            async for line in resp.content:
                if line.strip():
                    yield orjson.loads(line)


async def batch(client: Client, prefix: str, count: int, inflight: int, procs: list[Proc]) -> dict[str, float]:
    """Create `count` pods with `inflight` requests open; until every one is bound (a watch).
    Pods/s over the whole span, and each process's CPU ms per pod."""
    listed = await client.get("/api/v1/pods", [("fieldSelector", "spec.nodeName!="), ("limit", "1")])
    rv = str(listed["metadata"]["resourceVersion"])
    bound: set[str] = set()
    done = asyncio.Event()

    async def watch() -> None:
        query = [("fieldSelector", "spec.nodeName!="), ("watch", "true"), ("resourceVersion", rv),
                 ("allowWatchBookmarks", "true"), ("timeoutSeconds", "3600")]
        async for ev in client.watch("/api/v1/pods", query):
            name = str(((ev.get("object") or {}).get("metadata") or {}).get("name") or "")
            if ev.get("type") in ("ADDED", "MODIFIED") and name.startswith(prefix + "-"):
                bound.add(name)
                if len(bound) == count:
                    done.set()
                    return
        raise RuntimeError("pod watch ended early")

    gate = asyncio.Semaphore(inflight)

    async def create(i: int) -> None:
        async with gate:
            await client.post("/api/v1/namespaces/default/pods", scheduler_bench.pod(f"{prefix}-{i}"))

    watcher = asyncio.ensure_future(watch())
    await asyncio.sleep(0.2)  # the watch is open before the first create
    cpu0 = {p.name: cpu_seconds(p.proc.pid) for p in procs}
    me0 = time.process_time()
    start = time.perf_counter()
    await asyncio.gather(*(create(i) for i in range(count)))
    waiter = asyncio.ensure_future(done.wait())
    finished, _ = await asyncio.wait({waiter, watcher}, timeout=600, return_when=asyncio.FIRST_COMPLETED)
    if watcher in finished and not done.is_set():
        watcher.result()
        raise RuntimeError("pod watch ended early")
    if not done.is_set():
        raise RuntimeError(f"only {len(bound)} of {count} pods bound after 600 s")
    span = time.perf_counter() - start
    out = {"rate": count / span}
    for p in procs:
        out[p.name] = 1000.0 * (cpu_seconds(p.proc.pid) - cpu0[p.name]) / count
    out["client"] = 1000.0 * (time.process_time() - me0) / count
    watcher.cancel()
    waiter.cancel()
    return out


async def cluster(nodes: int, pods: int, inflight: int) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="na-nc-", dir="/tmp"))
    try:
        port = free_port()
        (base / "cp").mkdir()
        (base / "vn").mkdir()
        cp_cfg = write_config(base / "cp.yaml", base / "cp", {
            "nodeName": "bench-cp", "node": {"enabled": False},
            "controlPlane": {"enabled": True, "apiServer": {"bindAddress": f"127.0.0.1:{port}"}}})
        kubeconfig = base / "cp" / "state" / "kubeconfig"
        profile = [dict(v) for v in scheduler_bench.config(nodes).agent.raw["virtualNodes"]]  # the same 500 nodes
        vn_cfg = write_config(base / "vn.yaml", base / "vn", {
            "nodeName": HOST, "cluster": {"kubeconfig": str(kubeconfig)}, "node": {"enabled": False},
            "controlPlane": {"apiServer": {"bindAddress": ""}}, "virtualNodes": profile})
        with started("control_plane", cp_cfg, base / "cp.log") as cp:
            t0 = time.perf_counter()
            while not kubeconfig.exists():
                cp.check()
                await asyncio.sleep(0.1)
            api = RemoteAPI(kubeconfig, timeout=30.0)
            try:
                await wait_until("the API server", lambda: api.request("GET", "/api/v1/namespaces"), [cp])
                cp_ready = time.perf_counter() - t0
                with started("node_process", vn_cfg, base / "vn.log") as vn:
                    t1 = time.perf_counter()

                    async def all_there() -> bool:
                        listed = await api.request("GET", "/api/v1/nodes",
                                                   query=[("labelSelector", f"nodeagent.dev/virtual-host={HOST}")])
                        slices = await api.request("GET", PATHS["DeviceClass"].replace("deviceclasses",
                                                                                       "resourceslices"))
                        return len(listed["items"]) == nodes and len(slices["items"]) == nodes

                    await wait_until(f"{nodes} virtual nodes and their slices", all_there, [cp, vn])
                    nodes_ready = time.perf_counter() - t1
                    for obj in scheduler_bench.objects("plain"):
                        await api.request("POST", PATHS[obj["kind"]], body=obj)
                    results = []
                    client = await Client.load(kubeconfig)
                    try:
                        for b in range(2):
                            results.append(await batch(client, f"b{b}", pods, inflight, [cp, vn]))
                    finally:
                        await client.close()
                    vn.check()
                    return {"cp_ready_s": cp_ready, "nodes_ready_s": nodes_ready, "init": results[0],
                            "measured": results[1]}
            finally:
                await api.close()
    finally:
        if KEEP:
            print(f"kept: {base} (cp.log, vn.log)")
        else:
            shutil.rmtree(base, ignore_errors=True)


def run(nodes: int, pods: int, inflight: int) -> float:
    """Measure both modes, print them; the ratio."""
    if 2 * pods > 10 * nodes:
        raise SystemExit(f"--pods {pods}: two batches need {2 * pods} devices, {nodes} nodes have {10 * nodes}")
    gcsettings.apply()  # as `nodeagent run` (and bench/scheduler.py) does
    t0 = time.perf_counter()
    rates = asyncio.run(scheduler_bench.run(nodes, [pods, pods], "plain"))
    inproc, inproc_cpu = rates[1]
    print(f"in process:   nodes={nodes} init {pods} pods: {rates[0][0]:7.1f} pods/s, measured {pods} pods: "
          f"{inproc:7.1f} pods/s, {inproc_cpu:5.2f} ms CPU/pod ({time.perf_counter() - t0:.1f}s total, "
          f"load {os.getloadavg()[0]:.1f})", flush=True)
    t0 = time.perf_counter()
    r = asyncio.run(cluster(nodes, pods, inflight))
    m = r["measured"]
    print(f"cluster mode: nodes={nodes} (control plane ready {r['cp_ready_s']:.1f}s, node process's nodes and "
          f"slices registered {r['nodes_ready_s']:.1f}s) init {pods} pods: {r['init']['rate']:7.1f} pods/s, "
          f"measured {pods} pods: {m['rate']:7.1f} pods/s ({time.perf_counter() - t0:.1f}s total, "
          f"load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"cluster mode CPU per measured pod: control plane process {m['control_plane']:.2f} ms, node process "
          f"{m['node_process']:.2f} ms, client (this process) {m['client']:.2f} ms; in process "
          f"{inproc_cpu:.2f} ms", flush=True)
    ratio = float(m["rate"]) / inproc
    print(f"cluster_ratio={ratio:.2f}", flush=True)
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods", type=int, default=2500)
    ap.add_argument("--inflight", type=int, default=16)
    ap.add_argument("--profile", type=Path, help="run both processes under cProfile, profiles written here")
    ap.add_argument("--keep", action="store_true", help="keep the processes' folder (logs) in /tmp")
    args = ap.parse_args()
    global PROFILE_DIR, KEEP
    KEEP = args.keep
    PROFILE_DIR = args.profile.resolve() if args.profile else None
    run(args.nodes, args.pods, args.inflight)


if __name__ == "__main__":
    main()
