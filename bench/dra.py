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

(i) Pods: 200 ResourceClaims (one request, deviceClassName = driver i % 2, not allocated), created
first and untimed (as the raw side's claims), then 200 pods each using one of them by
resourceClaimName, created one after the other: the scheduler allocates, reserves and binds, then
the node's DRA manager calls NodePrepareResources (one call per pod) and the pod goes Running.
Timed from the first pod create to the moment every pod is Running, followed through a watch
of the pods (polling lists back to back loaded the daemon it measures). Pods prepare concurrently
(a worker per pod, as the kubelet's), so per-pod time over the raw call says what the node adds
around each call (scheduling, admission, durable writes, status). The daemon's own
dra_operations_duration_seconds (PrepareResources) and dra_grpc_operations_duration_seconds
(NodePrepareResources) means, and how many prepares answered "not ready" (is_error="true": the
pod waited and retried), are printed too, scraped from its /metrics.

(iii) Health: 200 flips (Unhealthy, Healthy, ...) of the device of one Running pod, sent at
random moments to the driver's control socket (`<dra.sock>.ctl`, {"set_health": ...}); the
latency is from sending the flip to the first GET of the pod (Kubernetes API) whose
containerStatuses[].allocatedResourcesStatus shows the new health (polled back to back, so it
includes up to one GET round trip; the node writes pod status to the store in 50 ms passes).
p50, p99, max.

(iv) The same three with a driver on the upstream Go helper (k8s.io/dynamic-resource-allocation/
kubeletplugin): tests/fixtures/kubeletplugin-driver, built through the Go module proxy and started
beside the daemon as the README says (NODE_NAME, KUBELET_REGISTRAR_DIRECTORY_PATH,
KUBELET_PLUGINS_DIRECTORY_PATH, CDI_ROOT, --kubeconfig), in the same daemon run after (i)-(iii):
raw NodePrepareResources to its dra.sock against pods through prepare (goal: per-pod time at most
1.5x the raw call), and health flips written into the file it polls (every 10 ms here) until the
pod status shows them (goal: p99 under 100 ms). Its client runs at 1000 QPS (client-go's default
5 QPS, burst 10, would measure the driver's rate limiter on both sides). Without `go` or the
proxy this part is skipped with the reason printed.

Everything started is stopped (daemon and, through it, the drivers; the Go driver) and the temp
dir deleted.
Run: python bench/dra.py [--pods 200] [--flips 200] [--helper-pods 100] [--profile FILE]
(BENCH_KEEP=1 keeps the temp dir; --profile runs the daemon under cProfile and writes its stats to FILE,
for `python -m pstats FILE`: where the node's time per pod goes)
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
    kubelet = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "maxPods": 1000}
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


async def raw_prepares(api: KubeAPI, base: Path, group: Group, count: int) -> tuple[float, list[float]]:
    """(prepares per second, per-call seconds): sequential NodePrepareResources, one fresh claim each,
    alternating between the group's drivers. Afterwards the claims are unprepared and deleted, so
    their devices are free again for the pods."""
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
        started = time.perf_counter()
        for i, ref in enumerate(refs):
            t0 = time.perf_counter()
            answer = await stubs[group.driver_of(i)].NodePrepareResources(
                api_pb2.NodePrepareResourcesRequest(claims=[ref]), timeout=45)
            times.append(time.perf_counter() - t0)
            result = answer.claims[ref.uid]
            if result.error or len(result.devices) != 1 or not result.devices[0].cdi_device_ids:
                raise SystemExit(f"raw prepare of {ref.name} failed: {result}")
        elapsed = time.perf_counter() - started
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
    return count / elapsed, times


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
    prefix = f"{group.prefix}bench-"
    _, version = await api.list_version("Pod")
    running: set[str] = set()

    async def follow() -> None:
        async for event in api.watch("Pod", version):
            pod = event.get("object") or {}
            name = str((pod.get("metadata") or {}).get("name", ""))
            if event.get("type") not in ("ADDED", "MODIFIED") or not name.startswith(prefix):
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                raise SystemExit(f"pod {name} failed: {(pod.get('status') or {}).get('message')}")
            if phase == "Running":
                running.add(name)
                if len(running) == count:
                    return
        raise SystemExit(f"the pods' watch ended with {len(running)} of {count} pods Running")

    started = time.perf_counter()
    watcher = asyncio.ensure_future(follow())
    try:
        await api.create_docs(pod_docs)
        created = time.perf_counter() - started
        await asyncio.wait_for(watcher, timeout=120)
    except TimeoutError:
        raise SystemExit(f"timed out after 120s waiting for {count} pods Running ({len(running)} are)") from None
    finally:
        watcher.cancel()
    elapsed = time.perf_counter() - started
    return count / elapsed, elapsed, created, claim_secs


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


async def measure(api: KubeAPI, base: Path, port: int, group: Group, count: int, flip: Flip,
                  flips: int) -> Figures:
    """Raw prepares, then pods through prepare, then health flips, for one group of drivers."""
    raw_rate, raw_times = await raw_prepares(api, base, group, count)
    before = scrape(port)
    pod_rate, pod_secs, create_secs, claim_secs = await pods_through_prepare(api, group, count)
    after = scrape(port)
    daemon = {k: v - before.get(k, 0.0) for k, v in after.items()}
    latencies = await health_latency(api, group, flip, flips)
    return Figures(raw_rate, raw_times, pod_rate, pod_secs, create_secs, claim_secs, daemon, latencies)


def report(title: str, f: Figures, count: int, flips: int, flipped: str) -> None:
    ms = 1000.0
    print(title)
    print(f"(ii) raw NodePrepareResources, {count} claims, sequential, one claim per call:")
    print(f"     {f.raw_rate:8.1f} prepares/s   mean {statistics.mean(f.raw_times) * ms:.2f} ms  "
          f"p50 {pct(f.raw_times, 0.5) * ms:.2f} ms  p99 {pct(f.raw_times, 0.99) * ms:.2f} ms")
    print(f"(i)  pods through prepare, {count} pods x 1 claim, via the scheduler (claims created "
          f"unallocated beforehand), first pod create -> all Running:")
    print(f"     {f.pod_rate:8.1f} pods/s       ({f.pod_secs:.2f} s; the {count} sequential pod creates answered "
          f"after {f.create_secs:.2f} s; a claim create alone, daemon idle: {f.claim_secs / count * ms:.1f} ms)")
    if f.daemon.get("op_count"):
        print(f"     daemon: PrepareResources mean {f.daemon['op_sum'] / f.daemon['op_count'] * ms:.2f} ms "
              f"over {f.daemon['op_count']:.0f} ops (successful), NodePrepareResources call mean "
              f"{f.daemon.get('grpc_sum', 0) / max(f.daemon.get('grpc_count', 1), 1) * ms:.2f} ms "
              f"over {f.daemon.get('grpc_count', 0):.0f} calls; {f.daemon.get('op_not_ready', 0):.0f} prepares "
              f"answered not ready")
    print(f"     ratio pods/s : raw prepares/s = {f.pod_rate / f.raw_rate:.2f}; per-pod time {ms / f.pod_rate:.1f} ms "
          f"/ raw call {ms / f.raw_rate:.1f} ms = {f.raw_rate / f.pod_rate:.2f} (goal <= 1.5)")
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


async def run(base: Path, pods: int, flips: int, helper_pods: int, profile: Path | None = None) -> None:
    helper_bin, why_not = build_helper(base) if helper_pods > 0 else (None, "--helper-pods 0")
    config, port = write_files(base, devices=-(-pods // len(DRIVERS)))
    log = open(base / "daemon.log", "wb")  # noqa: SIM115 - closed below
    env = {k: v for k, v in os.environ.items() if not k.startswith("NODEAGENT_")}
    env["PYTHONPATH"] = str(ROOT)
    profiler = [] if profile is None else ["-m", "cProfile", "-o", str(profile.resolve())]
    proc = subprocess.Popen([sys.executable, *profiler, "-m", "nodeagent.cli", "run", "--config", str(config),
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

        fake = await measure(api, base, port, FAKE, pods, control_flip(Path(f"{dra_sock(base, DRIVERS[0])}.ctl")),
                             flips)
        if helper is not None:
            await api.create(device_classes(HELPER))
            helper_figures = await measure(api, base, port, HELPER, helper_pods,
                                           file_flip(base / "helper-health"), flips)
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
                        help="run the daemon under cProfile and write its stats here (python -m pstats)")
    args = parser.parse_args()
    if not 0 <= args.helper_pods <= 128:
        parser.error("--helper-pods must be 0..128 (the driver publishes one ResourceSlice)")
    base = Path(tempfile.mkdtemp(prefix="na-bench-dra-", dir="/tmp"))
    started = time.perf_counter()
    try:
        asyncio.run(run(base, args.pods, args.flips, args.helper_pods, args.profile))
    finally:
        if os.environ.get("BENCH_KEEP"):
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(f"total {time.perf_counter() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
