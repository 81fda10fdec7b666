"""Benchmark: DRA on the node. Pods per second through prepare, against the raw NodePrepareResources
round trip to the same drivers, and health propagation latency, in one run.

The real daemon (`nodeagent run`, a subprocess) runs on a throwaway root and state dir under
/tmp/na-bench-dra-*, with its control plane (claim controller, scheduler) on, and spawns two fake
DRA drivers (plugins.fake_dra_driver, one process each: gpu-a.example.com and gpu-b.example.com,
100 fake GPUs each; two because a ResourceSlice holds at most 128 devices and the fake driver
publishes one slice). This process is the client: the daemon's Kubernetes API for objects (bench/kube.py,
one HTTPS request each), grpc for the drivers.

(ii) Raw: 200 ResourceClaims created, then allocated directly by a status write (no pod, no
scheduler; claim i on driver i % 2), then one NodePrepareResources per claim, sequentially,
straight to the driver's dra.sock (v1.DRAPlugin), each a fresh claim uid. The driver does its
real work each time: reads the claim through the Kubernetes API, writes the CDI spec, records the
claim. The claims are then unprepared and deleted, so their devices are free for (i).

(i) Node path, the figure the issue's goal ("prepare pods/s through nodeagent / raw
NodePrepareResources", per-pod time at most 1.5x the raw call) is judged on: 200 pods, each with
one claim, arriving at the node the way a kubelet receives them: bound (spec.nodeName), their
claims allocated (the raw side's devices) and reserved for them. A claim is reserved for a pod by
its uid, which the API server assigns at create, so the pods are created first (untimed) with a
schedulerName no scheduler serves (they wait, untouched), then their claims with allocation and
reservedFor (untimed, one status write each, as the raw side's claims). Timed: the pods are bound
(POST pods/binding, what the scheduler does; the node sees the pod the moment it is bound), with
4 bindings in flight (as a controller or kubectl apply writes), from the first binding until every
pod is Running (followed through a watch); per-pod time = span / pods. Why this one: it holds
what both sides share, one prepare per claim of an allocated claim, and adds exactly what the
node adds around the call (admission, the DRA manager's durable records, the call, container
start, pod status writes), as the raw side times only the call. Afterwards the pods are deleted
(waited until gone, so unprepared) and the claims too.

(i') End to end: 200 ResourceClaims (one request, deviceClassName = driver i % 2, not allocated),
created first and untimed, then 200 pods each using one of them by resourceClaimName, created one
after the other: the scheduler allocates, reserves and binds, then the node's DRA manager calls
NodePrepareResources (one call per pod) and the pod goes Running. Timed from the first pod create
to every pod Running (watch). Printed with its ratio to the raw call too, but that ratio holds
scheduling and allocation, which the raw side has none of: it is not the goal's measure. Pods
prepare concurrently (a worker per pod, as the kubelet's). For both (i) and (i') the daemon's own
dra_operations_duration_seconds (PrepareResources) and dra_grpc_operations_duration_seconds
(NodePrepareResources) means, and how many prepares answered "not ready" (is_error="true": the
pod waited and retried), are printed too, scraped from its /metrics.

(iii) Health: 200 flips (Unhealthy, Healthy, ...) of the device of one Running pod, sent at
random moments to the driver's control socket (`<dra.sock>.ctl`, {"set_health": ...}); the
latency is from sending the flip to the first GET of the pod (Kubernetes API) whose
containerStatuses[].allocatedResourcesStatus shows the new health (polled back to back, so it
includes up to one GET round trip; the node writes pod status to the store in 50 ms passes).
p50, p99, max.

(iv) The same with a driver on the upstream Go helper (k8s.io/dynamic-resource-allocation/
kubeletplugin): tests/fixtures/kubeletplugin-driver, built through the Go module proxy and started
beside the daemon as the README says (NODE_NAME, KUBELET_REGISTRAR_DIRECTORY_PATH,
KUBELET_PLUGINS_DIRECTORY_PATH, CDI_ROOT, --kubeconfig), in the same daemon run after (i)-(iii):
raw NodePrepareResources to its dra.sock against the node path and end to end (goal: node-path
per-pod time at most 1.5x the raw call), and health flips written into the file it polls (every
10 ms here) until the pod status shows them (goal: p99 under 100 ms). Its client runs at 1000 QPS
(client-go's default 5 QPS, burst 10, would measure the driver's rate limiter on both sides). The
helper serializes NodePrepareResources (its default, a file lock), so this driver prepares one
claim at a time however many pods the node starts at once: its node-path per-pod time is the
call's time while the daemon also does the other pods' work (the call GETs the claim from the
daemon's API, which answers after whatever its event loop is running). Without `go` or the
proxy this part is skipped with the reason printed.

Everything started is stopped (daemon and, through it, the drivers; the Go driver) and the temp
dir deleted.
The daemon's CPU time (user + system, /proc) over each timed part is printed per call or pod.
Run: python bench/dra.py [--pods 200] [--flips 200] [--helper-pods 100] [--profile FILE [--profile-part P]]
(BENCH_KEEP=1 keeps the temp dir; --profile runs the daemon under cProfile, timed in CPU seconds
(time.process_time), and writes its stats to FILE, for `python -m pstats FILE`: where the node's
CPU per pod goes; with --profile-part node (or raw) only the node path's (the raw calls') timed
parts are profiled, in both groups of drivers)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.kube import APIError, KubeAPI  # noqa: E402
from nodeagent.apis.dra.v1 import api_pb2, api_pb2_grpc  # noqa: E402
from nodeagent.rpc.server import channel  # noqa: E402
from plugins.dra_kit import control  # noqa: E402
from tests.integration import gotools  # noqa: E402

DRIVERS = ("gpu-a.example.com", "gpu-b.example.com")
POOL = "pool-a"
NODE = "bench-node"
START_TIMEOUT = 30.0
HELPER_MODULE = ROOT / "tests" / "fixtures" / "kubeletplugin-driver"
HELPER_DRIVER = "gpu.kubeletplugin.example.com"


# The daemon under cProfile with a CPU-time clock (`python -m cProfile` counts wall time, so a
# process waiting for a core on a loaded machine would show that wait in whatever it was doing).
# With "timed" the profiler only runs between SIGUSR1 and SIGUSR2, which the bench sends around
# the timed parts that --profile-part names: the stats are that part's CPU alone.
CPU_PROFILED = """
import cProfile, runpy, signal, sys, time
out, timed = sys.argv[1], sys.argv[2] == "timed"
sys.argv = ["nodeagent.cli", *sys.argv[3:]]
profiler = cProfile.Profile(time.process_time)
if timed:
    signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
    signal.signal(signal.SIGUSR2, lambda *_: profiler.disable())
    profiled = runpy.run_module
else:
    def profiled(*args, **kwargs):
        return profiler.runcall(runpy.run_module, *args, **kwargs)
try:
    profiled("nodeagent.cli", run_name="__main__", alter_sys=True)
finally:
    profiler.dump_stats(out)
"""


@dataclass(frozen=True)
class Group:
    """Drivers measured together: claim i goes to driver i % len(drivers), device gpu-(i // len(drivers));
    every object name starts with prefix."""

    drivers: tuple[str, ...]
    pool: str
    prefix: str = ""

    def driver_of(self, i: int) -> str:
        return self.drivers[i % len(self.drivers)]

    def device_of(self, i: int) -> str:
        return f"gpu-{i // len(self.drivers)}"


FAKE = Group(DRIVERS, POOL)
HELPER = Group((HELPER_DRIVER,), NODE, "helper-")  # the helper-based driver names its pool after the node


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- setup ----------------------------------------------------------------------------------


def write_files(base: Path, devices: int) -> tuple[Path, int]:
    plugins = []
    for d, driver in enumerate(DRIVERS):
        profile = yaml.safe_load((ROOT / "configs/plugins/fake-dra.yaml").read_text())
        profile["driverName"] = driver
        profile["poolName"] = POOL
        profile["devices"] = [
            {"name": f"gpu-{i}", "model": "H100", "uuid": f"GPU-{d:04d}{i:04d}", "pcieRoot": f"pci0000:{i % 4:02x}",
             "numa": i % 2, "memory": "80Gi"}
            for i in range(devices)
        ]
        profile_path = base / f"{driver}.yaml"
        profile_path.write_text(yaml.safe_dump(profile))
        plugins.append({
            "name": driver,
            "command": [sys.executable, "-m", "plugins.fake_dra_driver", "--config", str(profile_path),
                        "--cdi-dir", str(base / "cdi"), "--log-level", "WARNING"],
        })
    port = _free_port()
    kubelet = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "maxPods": 1000,
               "port": 0}  # the kubelet endpoint on a free port
    agent = {
        "apiVersion": "nodeagent.dev/v1alpha1",
        "kind": "NodeAgentConfiguration",
        "nodeName": NODE,
        "rootDir": str(base / "root"),
        "stateDir": str(base / "state"),
        "adminSocket": str(base / "admin.sock"),
        "metricsBindAddress": f"127.0.0.1:{port}",
        "nodeProfile": {"capacity": {"cpu": "64", "memory": "256Gi", "ephemeral-storage": "1Ti"}},
        "plugins": plugins,
        "controlPlane": {"apiServer": {"bindAddress": "127.0.0.1:0"}},  # a free port, never 6443
    }
    config = base / "config.yaml"
    config.write_text(yaml.safe_dump_all([kubelet, agent]))
    return config, port


async def until(what: str, check: Any, timeout: float = START_TIMEOUT, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = await check()
            if last:
                return last
        except (OSError, APIError, aiohttp.ClientError) as err:  # the daemon or driver not up yet
            last = err
        await asyncio.sleep(every)
    raise SystemExit(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def device_classes(group: Group) -> str:
    return yaml.safe_dump_all([
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}}
        for driver in group.drivers
    ])


def _claim(name: str, driver: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver}}]}}}


def raw_claims(group: Group, count: int) -> str:
    """Claims of no pod (allocated afterwards by a status write), one device of driver i % n each."""
    return yaml.safe_dump_all([_claim(f"{group.prefix}raw-{i:03d}", group.driver_of(i)) for i in range(count)])


def raw_allocation(group: Group, i: int) -> dict[str, Any]:
    """What the scheduler would write for raw claim i: device i // n of driver i % n."""
    return {"devices": {"results": [
        {"request": "gpu", "driver": group.driver_of(i), "pool": group.pool, "device": group.device_of(i)},
    ]}}


def pods_with_claims(group: Group, count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(claims, pods): claim i unallocated on driver i % n, pod i using it by resourceClaimName."""
    claims = [_claim(f"{group.prefix}claim-{i:03d}", group.driver_of(i)) for i in range(count)]
    pods = [{
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{group.prefix}bench-{i:03d}"},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": f"{group.prefix}claim-{i:03d}"}],
            "containers": [{"name": "main", "image": "pause", "resources": {"claims": [{"name": "gpu"}]}}],
        },
    } for i in range(count)]
    return claims, pods


# --- measurements ---------------------------------------------------------------------------


def dra_sock(base: Path, driver: str) -> Path:
    return base / "root" / "plugins" / driver / "dra.sock"


async def raw_prepares(api: KubeAPI, base: Path, group: Group, count: int, cpu: Callable[[], float],
                       profiling: Callable[[bool], None]) -> tuple[float, list[float], float]:
    """(prepares per second, per-call seconds, the daemon's CPU seconds over the calls, read by
    `cpu`): sequential NodePrepareResources, one fresh claim each, alternating between the group's
    drivers. Afterwards the claims are unprepared and deleted, so their devices are free again for
    the pods."""
    claims = {}
    for i, created in enumerate(await api.create(raw_claims(group, count))):
        claims[created["metadata"]["name"]] = await api.update_status(
            "ResourceClaim", {**created, "status": {"allocation": raw_allocation(group, i)}})
    names = [f"{group.prefix}raw-{i:03d}" for i in range(count)]
    refs = [api_pb2.Claim(namespace="default", uid=claims[name]["metadata"]["uid"], name=name) for name in names]
    channels = {driver: channel(dra_sock(base, driver)) for driver in group.drivers}
    try:
        stubs = {driver: api_pb2_grpc.DRAPluginStub(ch) for driver, ch in channels.items()}
        times: list[float] = []
        cpu_before, started = cpu(), time.perf_counter()
        profiling(True)
        for i, ref in enumerate(refs):
            t0 = time.perf_counter()
            answer = await stubs[group.driver_of(i)].NodePrepareResources(
                api_pb2.NodePrepareResourcesRequest(claims=[ref]), timeout=45)
            times.append(time.perf_counter() - t0)
            result = answer.claims[ref.uid]
            if result.error or len(result.devices) != 1 or not result.devices[0].cdi_device_ids:
                raise SystemExit(f"raw prepare of {ref.name} failed: {result}")
        profiling(False)
        elapsed, used = time.perf_counter() - started, cpu() - cpu_before
        for i, ref in enumerate(refs):
            done = await stubs[group.driver_of(i)].NodeUnprepareResources(
                api_pb2.NodeUnprepareResourcesRequest(claims=[ref]), timeout=45)
            if done.claims[ref.uid].error:
                raise SystemExit(f"raw unprepare of {ref.name} failed: {done.claims[ref.uid].error}")
    finally:
        for ch in channels.values():
            await ch.close(None)
    for ref in refs:
        await api.delete("ResourceClaim", ref.name)
    return count / elapsed, times, used


async def pods_through_prepare(api: KubeAPI, group: Group, count: int) -> tuple[float, float, float, float]:
    """(pods per second, seconds, seconds the pod creates took, seconds the claim creates took)
    from the first create to every pod Running, followed through a watch of the pods (listing them
    back to back would load the daemon it measures). The claims' sequential creates, with the
    daemon otherwise idle, are the floor of the per-pod time (one POST per pod); the pod creates'
    share says how much of the time is the POSTs waiting behind the daemon's work for earlier pods."""
    claims, pod_docs = pods_with_claims(group, count)
    # The claims up front, untimed, as the raw side creates its claims before its clock starts:
    # the timed part is pod create -> scheduled (claim allocated) -> admitted -> prepared -> Running.
    claims_started = time.perf_counter()
    await api.create_docs(claims)
    claim_secs = time.perf_counter() - claims_started
    names = {str(doc["metadata"]["name"]) for doc in pod_docs}
    _, version = await api.list_version("Pod")
    started = time.perf_counter()
    created = await until_running(api, version, names, api.create_docs(pod_docs))
    elapsed = time.perf_counter() - started
    return count / elapsed, elapsed, created - started, claim_secs


UNSCHEDULED = "bench-no-scheduler"  # a schedulerName no scheduler serves: the pod waits, untouched, until bound
IN_FLIGHT = 4  # node path: bindings in flight at once, as a controller's or kubectl apply's concurrent writes


def node_path_pods(group: Group, count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(claims, pods) of the node path: pod i uses claim i by resourceClaimName and waits for a
    scheduler nobody runs; claim i gets the raw side's device i // n of driver i % n."""
    claims = [_claim(f"{group.prefix}node-claim-{i:03d}", group.driver_of(i)) for i in range(count)]
    pods = [{
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{group.prefix}node-{i:03d}"},
        "spec": {
            "schedulerName": UNSCHEDULED,
            "resourceClaims": [{"name": "gpu", "resourceClaimName": f"{group.prefix}node-claim-{i:03d}"}],
            "containers": [{"name": "main", "image": "pause", "resources": {"claims": [{"name": "gpu"}]}}],
        },
    } for i in range(count)]
    return claims, pods


async def node_path(api: KubeAPI, group: Group, count: int, cpu: Callable[[], float],
                    profiling: Callable[[bool], None]) -> tuple[float, float, float, float]:
    """(pods per second, seconds, the daemon's and this process's CPU seconds over the timed part,
    the daemon's read by `cpu`) of the node path: pods arriving at the node the way a kubelet
    receives them, bound, their claims allocated and reserved for them, IN_FLIGHT bindings at once;
    from the first binding to every pod Running (watch). Untimed before: the pods (pending for a
    scheduler nobody runs), their claims, and each claim's allocation and reservation (one status
    write, as the raw side's claims get theirs). Untimed after: the pods are deleted and gone, then
    their claims, so the devices are free for the pods through the scheduler."""
    claim_docs, pod_docs = node_path_pods(group, count)
    pods = await api.create_docs(pod_docs)
    for i, (claim, pod) in enumerate(zip(await api.create_docs(claim_docs), pods, strict=True)):
        await api.update_status("ResourceClaim", {**claim, "status": {
            "allocation": raw_allocation(group, i),
            "reservedFor": [{"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}],
        }})
    names = [str(pod["metadata"]["name"]) for pod in pods]
    _, version = await api.list_version("Pod")

    async def bind_all() -> None:
        queue = list(reversed(names))

        async def worker() -> None:
            while queue:
                await api.bind(queue.pop(), NODE)
        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))

    cpu_before, client_before, started = cpu(), time.process_time(), time.perf_counter()
    profiling(True)
    await until_running(api, version, set(names), bind_all())
    profiling(False)
    elapsed, used, client = time.perf_counter() - started, cpu() - cpu_before, time.process_time() - client_before

    for name in names:
        await api.delete("Pod", name)

    async def pods_gone() -> bool:
        return not {p["metadata"]["name"] for p in await api.list("Pod")} & set(names)
    await until("the node path's pods deleted", pods_gone, timeout=120, every=0.2)
    for claim in claim_docs:
        await api.delete("ResourceClaim", claim["metadata"]["name"])
    return count / elapsed, elapsed, used, client


async def until_running(api: KubeAPI, version: str, names: set[str], start: Awaitable[Any]) -> float:
    """Run `start` (the timed creates or bindings) while following the pods' watch from `version`
    until every pod of `names` is Running; the moment `start` finished (perf_counter)."""
    running: set[str] = set()

    async def follow() -> None:
        async for event in api.watch("Pod", version):
            pod = event.get("object") or {}
            name = str((pod.get("metadata") or {}).get("name", ""))
            if event.get("type") not in ("ADDED", "MODIFIED") or name not in names:
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                raise SystemExit(f"pod {name} failed: {(pod.get('status') or {}).get('message')}")
            if phase == "Running":
                running.add(name)
                if len(running) == len(names):
                    return
        raise SystemExit(f"the pods' watch ended with {len(running)} of {len(names)} pods Running")

    watcher = asyncio.ensure_future(follow())
    try:
        await start
        done = time.perf_counter()
        await asyncio.wait_for(watcher, timeout=120)
    except TimeoutError:
        raise SystemExit(f"timed out after 120s waiting for {len(names)} pods Running ({len(running)} are)") from None
    finally:
        watcher.cancel()
    return done


def _health_of(pod: dict[str, Any]) -> str:
    for cs in pod["status"].get("containerStatuses") or []:
        for status in cs.get("allocatedResourcesStatus") or []:
            for r in status.get("resources") or []:
                return str(r.get("health", ""))
    return ""


Flip = Callable[[str, str], Awaitable[None]]  # (device, Healthy|Unhealthy): tell the driver


def control_flip(ctl: Path) -> Flip:
    """A flip sent to the fake driver's control socket."""
    async def flip(device: str, health: str) -> None:
        reply = await control.arequest(ctl, {"set_health": {"device": f"{POOL}/{device}", "health": health}})
        if not reply.get("ok"):
            raise SystemExit(f"set_health failed: {reply}")
    return flip


def file_flip(path: Path) -> Flip:
    """A flip written into the health file the helper-based driver polls (atomically: write, rename)."""
    async def flip(device: str, health: str) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f"{device}={health}\n")
        tmp.replace(path)
    return flip


async def health_latency(api: KubeAPI, group: Group, flip: Flip, flips: int) -> list[float]:
    pod_name = f"{group.prefix}bench-000"
    pod = await api.get("Pod", pod_name)
    claim = await api.get("ResourceClaim", f"{group.prefix}claim-000")
    device = claim["status"]["allocation"]["devices"]["results"][0]["device"]
    if _health_of(pod) != "Healthy":
        raise SystemExit(f"{pod_name} starts {_health_of(pod)!r}, not Healthy")
    latencies: list[float] = []
    rng = random.Random(5)
    for n in range(flips):
        want = "Unhealthy" if n % 2 == 0 else "Healthy"
        # Flips at random moments: right after the previous one is seen, the flip would always land
        # just after a node-sync pass (every 50 ms) and measure the worst case every time.
        await asyncio.sleep(rng.uniform(0.0, 0.05))
        t0 = time.perf_counter()
        await flip(device, want)
        deadline = t0 + 10
        while True:
            got = _health_of(await api.get("Pod", pod_name))
            if got == want:
                latencies.append(time.perf_counter() - t0)
                break
            if time.perf_counter() > deadline:
                raise SystemExit(f"flip {n} to {want} not seen in pod status within 10 s (still {got})")
    return latencies


def scrape(port: int) -> dict[str, float]:
    """Sum and count of the daemon's prepare figures (node-side operation and the driver call)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        if name.startswith("dra_operations_duration_seconds_") and 'operation_name="PrepareResources"' in name \
                and 'is_error="false"' in name and not name.startswith("dra_operations_duration_seconds_bucket"):
            out["op_" + name.split("{")[0].rsplit("_", 1)[1]] = float(value)
        if name.startswith("dra_operations_duration_seconds_count") and 'operation_name="PrepareResources"' in name \
                and 'is_error="true"' in name:
            out["op_not_ready"] = float(value)  # prepares answered "not ready" (the pod retried later)
        if name.startswith("dra_grpc_operations_duration_seconds_") and "NodePrepareResources" in name \
                and not name.startswith("dra_grpc_operations_duration_seconds_bucket"):
            key = "grpc_" + name.split("{")[0].rsplit("_", 1)[1]
            out[key] = out.get(key, 0.0) + float(value)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


# --- main -----------------------------------------------------------------------------------


@dataclass
class Figures:
    raw_rate: float
    raw_times: list[float]
    pod_rate: float
    pod_secs: float
    create_secs: float  # of pod_secs, until the last pod create answered
    claim_secs: float  # the claims' sequential creates (untimed), the daemon otherwise idle
    daemon: dict[str, float]  # the daemon's prepare metrics over the pods phase (sums and counts)
    latencies: list[float]
    node_rate: float  # node path: pods bound with their claims reserved, IN_FLIGHT at once
    node_secs: float
    node_daemon: dict[str, float]  # the daemon's prepare metrics over the node path
    cpu: dict[str, float]  # the daemon's CPU seconds (user + system) over each timed part: raw, node, e2e


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (all its threads; not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(api: KubeAPI, base: Path, port: int, pid: int, group: Group, count: int, flip: Flip,
                  flips: int, profile_part: str = "") -> Figures:
    """Raw prepares, then the node path, then pods through the scheduler and prepare, then health
    flips, for one group of drivers. The daemon's CPU time is read around each timed part (for
    the end-to-end part it includes the untimed claim creates before it)."""
    def profiling(part: str) -> Callable[[bool], None]:
        def toggle(on: bool) -> None:
            if part == profile_part:
                os.kill(pid, signal.SIGUSR1 if on else signal.SIGUSR2)
        return toggle

    cpu = {}
    raw_rate, raw_times, cpu["raw"] = await raw_prepares(api, base, group, count, lambda: cpu_seconds(pid),
                                                         profiling("raw"))
    before = scrape(port)
    node_rate, node_secs, cpu["node"], cpu["node_client"] = await node_path(
        api, group, count, lambda: cpu_seconds(pid), profiling("node"))
    node_daemon = _delta(before, scrape(port))
    before = scrape(port)
    t0 = cpu_seconds(pid)
    pod_rate, pod_secs, create_secs, claim_secs = await pods_through_prepare(api, group, count)
    cpu["e2e"] = cpu_seconds(pid) - t0
    daemon = _delta(before, scrape(port))
    latencies = await health_latency(api, group, flip, flips)
    return Figures(raw_rate, raw_times, pod_rate, pod_secs, create_secs, claim_secs, daemon, latencies,
                   node_rate, node_secs, node_daemon, cpu)


def _delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def _daemon_line(d: dict[str, float]) -> None:
    if d.get("op_count"):
        ms = 1000.0
        print(f"     daemon: PrepareResources mean {d['op_sum'] / d['op_count'] * ms:.2f} ms "
              f"over {d['op_count']:.0f} ops (successful), NodePrepareResources call mean "
              f"{d.get('grpc_sum', 0) / max(d.get('grpc_count', 1), 1) * ms:.2f} ms "
              f"over {d.get('grpc_count', 0):.0f} calls; {d.get('op_not_ready', 0):.0f} prepares answered not ready")


def report(title: str, f: Figures, count: int, flips: int, flipped: str) -> None:
    ms = 1000.0
    raw_ms = ms / f.raw_rate  # the mean raw call (the calls are sequential)
    print(title)
    print(f"(ii) raw NodePrepareResources, {count} claims, sequential, one claim per call:")
    print(f"     {f.raw_rate:8.1f} prepares/s   mean {statistics.mean(f.raw_times) * ms:.2f} ms  "
          f"p50 {pct(f.raw_times, 0.5) * ms:.2f} ms  p99 {pct(f.raw_times, 0.99) * ms:.2f} ms; "
          f"daemon CPU {f.cpu['raw'] / count * ms:.2f} ms per call (the driver's GET of the claim)")
    print(f"(i)  NODE PATH (the goal's measure): {count} pods x 1 claim arriving bound, claims allocated and "
          f"reserved beforehand, {IN_FLIGHT} bindings in flight, first binding -> all Running:")
    print(f"     {f.node_rate:8.1f} pods/s       ({f.node_secs:.2f} s; daemon CPU {f.cpu['node'] / count * ms:.2f} ms "
          f"per pod, this client's {f.cpu['node_client'] / count * ms:.2f} ms)")
    _daemon_line(f.node_daemon)
    print(f"     GOAL RATIO per-pod time {ms / f.node_rate:.1f} ms / raw call {raw_ms:.1f} ms = "
          f"{f.raw_rate / f.node_rate:.2f} (goal <= 1.5)")
    print(f"(i') END TO END: {count} pods x 1 claim via the scheduler (claims created unallocated beforehand), "
          f"created one after the other, first pod create -> all Running:")
    print(f"     {f.pod_rate:8.1f} pods/s       ({f.pod_secs:.2f} s; the {count} sequential pod creates answered "
          f"after {f.create_secs:.2f} s; a claim create alone, daemon idle: {f.claim_secs / count * ms:.1f} ms; "
          f"daemon CPU {f.cpu['e2e'] / count * ms:.2f} ms per pod with its claim create)")
    _daemon_line(f.daemon)
    print(f"     end-to-end ratio per-pod time {ms / f.pod_rate:.1f} ms / raw call {raw_ms:.1f} ms = "
          f"{f.raw_rate / f.pod_rate:.2f} (adds scheduling and allocation, which the raw side does not have)")
    print(f"(iii) health propagation, {flips} flips ({flipped} -> pod status via API GET):")
    print(f"     p50 {pct(f.latencies, 0.5) * ms:.1f} ms  p99 {pct(f.latencies, 0.99) * ms:.1f} ms  "
          f"max {max(f.latencies) * ms:.1f} ms  mean {statistics.mean(f.latencies) * ms:.1f} ms  (goal p99 < 100 ms)")


def build_helper(base: Path) -> tuple[Path | None, str]:
    """The helper-based driver's binary, or None and why not (no go, no Go module proxy)."""
    try:
        return gotools.build(HELPER_MODULE, base / "bin", "kubeletplugin-driver"), ""
    except pytest.skip.Exception as skipped:
        return None, str(skipped.msg)


def start_helper(binary: Path, base: Path, devices: int) -> subprocess.Popen[bytes]:
    """The helper-based driver beside the daemon, configured as the README says."""
    env = {**os.environ, "NODE_NAME": NODE,
           "KUBELET_REGISTRAR_DIRECTORY_PATH": str(base / "root" / "plugins_registry"),
           "KUBELET_PLUGINS_DIRECTORY_PATH": str(base / "root" / "plugins"),
           "CDI_ROOT": str(base / "cdi-helper")}
    log = open(base / "helper-driver.log", "wb")  # noqa: SIM115 - the child keeps it; closed with the process
    with log:
        return subprocess.Popen(
            [str(binary), "--kubeconfig", str(base / "state" / "kubeconfig"), "--driver-name", HELPER_DRIVER,
             "--num-devices", str(devices), "--health-file", str(base / "helper-health"),
             "--health-poll-interval", "10ms", "--kube-api-qps", "1000", "--kube-api-burst", "1000"],
            stdout=log, stderr=subprocess.STDOUT, env=env)


def stop(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def run(base: Path, pods: int, flips: int, helper_pods: int, profile: Path | None = None,
              profile_part: str = "") -> None:
    helper_bin, why_not = build_helper(base) if helper_pods > 0 else (None, "--helper-pods 0")
    config, port = write_files(base, devices=-(-pods // len(DRIVERS)))
    log = open(base / "daemon.log", "wb")  # noqa: SIM115 - closed below
    env = {k: v for k, v in os.environ.items() if not k.startswith("NODEAGENT_")}
    env["PYTHONPATH"] = str(ROOT)
    module = ["-m", "nodeagent.cli"] if profile is None else \
        ["-c", CPU_PROFILED, str(profile.resolve()), "timed" if profile_part else "all"]
    proc = subprocess.Popen([sys.executable, *module, "run", "--config", str(config),
                             "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    helper: subprocess.Popen[bytes] | None = None
    api: KubeAPI | None = None
    helper_figures: Figures | None = None
    try:
        async def daemon_up() -> bool:
            if proc.poll() is not None:
                raise SystemExit(f"daemon exited: {(base / 'daemon.log').read_text()[-2000:]}")
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(base / "admin.sock"))  # served once start-up is through, kubeconfig written
            return (base / "state" / "kubeconfig").exists()

        t0 = time.perf_counter()
        await until("daemon up", daemon_up)
        api = KubeAPI(base / "state" / "kubeconfig", timeout=30)
        if helper_bin is not None:
            helper = start_helper(helper_bin, base, helper_pods)
        drivers = DRIVERS + ((HELPER_DRIVER,) if helper else ())

        async def slices_up() -> bool:
            assert api is not None
            for p, what in ((proc, "daemon"), (helper, "helper-based driver")):
                if p is not None and p.poll() is not None:
                    raise SystemExit(f"{what} exited; see {base} (BENCH_KEEP=1)")
            published = {s["spec"]["driver"] for s in await api.list("ResourceSlice")}
            return published == set(drivers) and all(dra_sock(base, d).exists() for d in drivers)

        await until("daemon up and the drivers' ResourceSlices published", slices_up)
        await api.create(device_classes(FAKE))
        per_driver = -(-pods // len(DRIVERS))
        print(f"daemon and drivers up in {time.perf_counter() - t0:.1f}s; "
              f"{len(DRIVERS)} fake drivers with {per_driver} devices each"
              + (f", the helper-based driver with {helper_pods}" if helper else ""))

        fake = await measure(api, base, port, proc.pid, FAKE, pods,
                             control_flip(Path(f"{dra_sock(base, DRIVERS[0])}.ctl")), flips, profile_part)
        if helper is not None:
            await api.create(device_classes(HELPER))
            helper_figures = await measure(api, base, port, proc.pid, HELPER, helper_pods,
                                           file_flip(base / "helper-health"), flips, profile_part)
    finally:
        if api is not None:
            await api.close()
        stop(helper)
        stop(proc)
        log.close()

    report("fake DRA drivers (plugins.fake_dra_driver, Python):", fake, pods, flips, "control socket")
    if helper_figures is not None:
        report("(iv) the upstream-helper driver (tests/fixtures/kubeletplugin-driver, Go, "
               "k8s.io/dynamic-resource-allocation v0.34):", helper_figures, helper_pods, flips,
               "health file, polled every 10 ms")
    else:
        print(f"(iv) the upstream-helper driver: skipped: {why_not}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--flips", type=int, default=200)
    parser.add_argument("--helper-pods", type=int, default=100,
                        help="pods (and raw claims) for the upstream-helper driver, at most 128; 0 skips it")
    parser.add_argument("--profile", type=Path, default=None,
                        help="run the daemon under cProfile (CPU time) and write its stats here (python -m pstats)")
    parser.add_argument("--profile-part", choices=("node", "raw"), default="",
                        help="with --profile: profile only the node path's timed parts (first binding to all Running) "
                             "or only the raw calls")
    args = parser.parse_args()
    if not 0 <= args.helper_pods <= 128:
        parser.error("--helper-pods must be 0..128 (the driver publishes one ResourceSlice)")
    base = Path(tempfile.mkdtemp(prefix="na-bench-dra-", dir="/tmp"))
    started = time.perf_counter()
    try:
        asyncio.run(run(base, args.pods, args.flips, args.helper_pods, args.profile, args.profile_part))
    finally:
        if os.environ.get("BENCH_KEEP"):
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(f"total {time.perf_counter() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
