"""`bench/scheduler.py --peer`: the same DRA scheduling workload through the REST API against nodeagent's
embedded control plane and against the real one (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager v1.37.2 from the kube-apiserver fixture's multi-role binary, started by
`nodeagent run` with controlPlane.kubernetes), one after the other in one run.

Both sides get the same objects from the same client: N nodes (4 cpu, 32Gi, 110 pods) each with one
ResourceSlice of 10 devices (driver gpu.example.com, memory 40Gi), DeviceClass `gpu` (CEL on driver
and memory), a ResourceClaimTemplate asking for one device, then two batches of pods that each use a
claim from the template (init, then measured, as upstream's scheduler_perf), created with 16 requests
in flight and counted bound from a watch. The embedded side's nodes and slices are its virtual nodes
(`virtualNodes` with `devices`); the real side's are created by the client as scheduler_perf does
(Node objects with capacity, ResourceSlices as a driver would publish them), with kube-controller-
manager's node lifecycle controller off since no kubelet renews their leases.

Per side: measured-batch pods/s, the CPU seconds the server side used during the measured batch
(embedded: the daemon; real: the four component processes, not the idle nodeagent process that
supervises them), and the peak RSS over the run (same processes, sampled every 0.2 s); then the ratios.
Needs the cached fixture binary (`make kube-binaries`) for the real side, or NODEAGENT_KUBE_APISERVER_BIN.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import psutil
import yaml

D = "gpu.example.com"
IN_FLIGHT = 16
REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fixture_binary() -> Path:
    given = os.environ.get("NODEAGENT_KUBE_APISERVER_BIN")
    if given:
        return Path(given)
    cache = Path(os.environ.get("NODEAGENT_GO_FIXTURE_CACHE") or Path.home() / ".cache" / "nodeagent" / "go-fixtures")
    found = sorted(cache.glob("kube-apiserver-fixture-*/kube-apiserver-fixture"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise SystemExit("--peer needs the real control plane's binary: run `make kube-binaries` first "
                         "(or set NODEAGENT_KUBE_APISERVER_BIN)")
    return found[-1]


def common_objects() -> list[dict[str, Any]]:
    sel = [f'device.driver == "{D}"', f'device.capacity["{D}"].memory.compareTo(quantity("40Gi")) >= 0']
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": e}} for e in sel]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "gpu", "namespace": "default"},
         "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}},
    ]


def node_objects(i: int) -> list[dict[str, Any]]:
    """A node as scheduler_perf makes one (no kubelet) and the slice its driver would publish."""
    name = f"node-{i}"
    resources = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": resources, "allocatable": resources,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}}
    devices = [{"name": f"gpu-{d}", "attributes": {"model": {"string": "a100"}},
                "capacity": {"memory": {"value": "40Gi"}}} for d in range(10)]
    slc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-{D}"},
           "spec": {"driver": D, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices}}
    return [node, slc]


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}}


PATHS = {"DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
         "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates",
         "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices", "Node": "/api/v1/nodes",
         "Pod": "/api/v1/namespaces/default/pods"}


class Client:
    """The one REST client both sides get: a kubeconfig's server, CA and token or client certificate."""

    def __init__(self, kubeconfig: Path, tmp: Path) -> None:
        doc = yaml.safe_load(kubeconfig.read_text())
        cluster, user = doc["clusters"][0]["cluster"], doc["users"][0]["user"]
        self.server = cluster["server"]
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if "token" in user:
            headers["Authorization"] = f"Bearer {user['token']}"
        else:
            (tmp / "c.crt").write_bytes(base64.b64decode(user["client-certificate-data"]))
            (tmp / "c.key").write_bytes(base64.b64decode(user["client-key-data"]))
            ctx.load_cert_chain(tmp / "c.crt", tmp / "c.key")
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=0), headers=headers,
                                             trust_env=False)

    async def create(self, obj: dict[str, Any]) -> None:
        for _ in range(100):
            async with self.session.post(self.server + PATHS[obj["kind"]], data=json.dumps(obj)) as r:
                if r.status in (200, 201):
                    return
                text = await r.text()
                # pods before the controller manager made the default ServiceAccount: retry shortly
                if r.status == 403 and "serviceaccount" in text.lower():
                    await asyncio.sleep(0.5)
                    continue
                raise RuntimeError(f"create {obj['kind']} {obj['metadata']['name']}: {r.status} {text[:300]}")
        raise RuntimeError(f"create {obj['kind']}: gave up")

    async def untaint(self, node: str) -> None:
        """Drop the not-ready taint kube-apiserver's TaintNodesByCondition admission puts on every new Node (the
        node lifecycle controller would lift it once a kubelet reports Ready; here no kubelet runs)."""
        async with self.session.patch(f"{self.server}{PATHS['Node']}/{node}", data=json.dumps(
                {"spec": {"taints": None}}), headers={"Content-Type": "application/merge-patch+json"}) as r:
            if r.status != 200:
                raise RuntimeError(f"untaint {node}: {r.status} {(await r.text())[:300]}")

    async def resource_version(self) -> str:
        async with self.session.get(self.server + PATHS["Pod"] + "?limit=1") as r:
            return str((await r.json())["metadata"]["resourceVersion"])

    async def close(self) -> None:
        await self.session.close()


async def batch(client: Client, prefix: str, count: int) -> float:
    """Create `count` pods, IN_FLIGHT at a time, and wait until each is bound; the seconds it took.

    Bindings are counted from a watch; when the watch ends or sends an ERROR event (a server may end any
    watch), the pods are listed again and a new watch starts from that list's resourceVersion."""
    bound: set[str] = set()
    done = asyncio.Event()

    def see(obj: dict[str, Any]) -> None:
        name = obj.get("metadata", {}).get("name", "")
        if name.startswith(prefix + "-") and obj.get("spec", {}).get("nodeName"):
            bound.add(name)

    async def watch() -> None:
        while True:
            async with client.session.get(client.server + PATHS["Pod"]) as r:
                listed = await r.json()
            for obj in listed["items"]:
                see(obj)
            if len(bound) == count:
                done.set()
                return
            rv = listed["metadata"]["resourceVersion"]
            url = f"{client.server}{PATHS['Pod']}?watch=true&resourceVersion={rv}&timeoutSeconds=1800"
            async with client.session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as r:
                tail = b""
                async for chunk in r.content.iter_any():
                    *lines, tail = (tail + chunk).split(b"\n")
                    for line in lines:
                        event = json.loads(line)
                        if event["type"] == "ERROR":
                            print(f"watch error, listing again: {event['object'].get('message')}", file=sys.stderr)
                            break
                        see(event["object"])
                    else:
                        if len(bound) == count:
                            done.set()
                            return
                        continue
                    break

    watcher = asyncio.create_task(watch())
    start = time.perf_counter()
    sem = asyncio.Semaphore(IN_FLIGHT)

    async def one(i: int) -> None:
        async with sem:
            await client.create(pod(f"{prefix}-{i}"))

    await asyncio.gather(*(one(i) for i in range(count)))
    waiter = asyncio.create_task(done.wait())
    finished, _ = await asyncio.wait({waiter, watcher}, timeout=1800, return_when=asyncio.FIRST_COMPLETED)
    took = time.perf_counter() - start
    for task in (waiter, watcher):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    if waiter not in finished:
        raise RuntimeError(f"{prefix}: {len(bound)} of {count} pods bound when the watch ended or timed out")
    return took


@dataclass
class Usage:
    """CPU seconds and RSS of the processes `pick` chooses among the daemon and its descendants."""

    root: int
    pick: Callable[[psutil.Process], bool]
    peak_rss: int = 0

    def procs(self) -> list[psutil.Process]:
        root = psutil.Process(self.root)
        return [p for p in [root, *root.children(recursive=True)] if self.pick(p)]

    def cpu(self) -> float:
        total = 0.0
        for p in self.procs():
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                total += t.user + t.system
        return total

    async def sample(self) -> None:
        while True:
            rss = 0
            for p in self.procs():
                with contextlib.suppress(psutil.Error):
                    rss += p.memory_info().rss
            self.peak_rss = max(self.peak_rss, rss)
            await asyncio.sleep(0.2)


def agent_config(base: Path, nodes: int, real: Path | None) -> Path:
    agent: dict[str, Any] = {
        "apiVersion": "nodeagent.dev/v1alpha1", "kind": "NodeAgentConfiguration", "nodeName": "bench",
        "rootDir": str(base / "root"), "stateDir": str(base / "state"), "adminSocket": str(base / "admin.sock"),
        "metricsBindAddress": f"127.0.0.1:{free_port()}", "node": {"enabled": False},
        "shutdownTimeout": "60s",
        "controlPlane": {"apiServer": {"bindAddress": f"127.0.0.1:{free_port()}"}},
    }
    if real is None:
        agent["virtualNodes"] = [{
            "name": "node-{index}", "count": nodes, "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            "devices": [{"driver": D, "count": 10, "name": "gpu-{index}", "attributes": {"model": "a100"},
                         "capacity": {"memory": "40Gi"}}]}]
    else:
        agent["controlPlane"]["kubernetes"] = {
            "binary": str(real), "etcdClientPort": free_port(), "etcdPeerPort": free_port(),
            "schedulerPort": free_port(), "controllerManagerPort": free_port(),
            # nodes without kubelets: nobody renews their leases (scheduler_perf runs no lifecycle controller)
            "extraArgs": {"kube-controller-manager": ["--controllers=-node-lifecycle-controller"]}}
    path = base / "config.yaml"
    path.write_text(yaml.safe_dump_all([{"apiVersion": "kubelet.config.k8s.io/v1beta1",
                                         "kind": "KubeletConfiguration"}, agent]))
    return path


@dataclass
class Side:
    name: str
    pods_per_s: float = 0.0
    init_pods_per_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss: int = 0
    startup_s: float = 0.0


async def run_side(name: str, nodes: int, pods: int, real: Path | None) -> Side:
    base = Path(tempfile.mkdtemp(prefix="na-peer-", dir="/tmp"))
    config = agent_config(base, nodes, real)
    log = (base / "daemon.log").open("wb")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "nodeagent.cli", "run", "--config", str(config)],
                            stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
    side = Side(name)
    client: Client | None = None
    sampler: asyncio.Task[None] | None = None
    try:
        while b"daemon: ready" not in (base / "daemon.log").read_bytes():
            if proc.poll() is not None:
                raise SystemExit(f"{name}: the daemon exited:\n{(base / 'daemon.log').read_text()[-3000:]}")
            await asyncio.sleep(0.2)
        side.startup_s = time.perf_counter() - t0
        fixture = str(real) if real else ""
        usage = Usage(proc.pid, (lambda p: fixture in " ".join(p.cmdline())) if real else
                      (lambda p: p.pid == proc.pid))
        sampler = asyncio.create_task(usage.sample())
        client = Client(base / "state" / "kubeconfig", base)
        for obj in common_objects():
            await client.create(obj)
        if real is not None:
            sem = asyncio.Semaphore(IN_FLIGHT)

            async def add(i: int) -> None:
                async with sem:
                    for obj in node_objects(i):
                        await client.create(obj)
                    await client.untaint(f"node-{i}")

            await asyncio.gather(*(add(i) for i in range(nodes)))
        else:  # the virtual nodes publish their slices at start: wait until all are there
            while True:
                async with client.session.get(client.server + PATHS["ResourceSlice"]) as r:
                    if len((await r.json())["items"]) >= nodes:
                        break
                await asyncio.sleep(0.5)
        side.init_pods_per_s = pods / await batch(client, "init", pods)
        cpu0 = usage.cpu()
        side.pods_per_s = pods / await batch(client, "measured", pods)
        side.cpu_s = usage.cpu() - cpu0
        side.peak_rss = usage.peak_rss
        return side
    finally:
        if sampler is not None:
            sampler.cancel()
        if client is not None:
            await client.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        if os.environ.get("B_KEEP"):
            print(f"{name}: kept {base}")
        else:
            import shutil

            shutil.rmtree(base, ignore_errors=True)


def peer(nodes: int, pods: int) -> None:
    real = fixture_binary()
    sides = []
    for name, binary in (("embedded", None), ("real", real)):
        side = asyncio.run(run_side(name, nodes, pods, binary))
        sides.append(side)
        print(f"{name:9s} nodes={nodes} pods={pods}+{pods}: measured {side.pods_per_s:7.1f} pods/s "
              f"(init {side.init_pods_per_s:6.1f}), {side.cpu_s:6.1f} CPU-s for the measured batch, "
              f"peak RSS {side.peak_rss / 2**20:7.0f} MiB, ready in {side.startup_s:.1f}s "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    emb, rl = sides
    print(f"ratios embedded/real: pods/s {emb.pods_per_s / rl.pods_per_s:.1f}x, CPU-s "
          f"{emb.cpu_s / rl.cpu_s:.2f}x, peak RSS {emb.peak_rss / rl.peak_rss:.2f}x")
