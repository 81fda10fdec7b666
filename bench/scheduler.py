"""Benchmark: the control plane end to end in one process (store on a temp file, claim controller,
scheduler with the structured allocator, virtual nodes), shaped like upstream scheduler_perf's
SchedulingWithResourceClaimTemplate.

Workload: N virtual nodes (4 cpu, 32Gi, 110 pods, 10 devices each in one node-local
ResourceSlice, DeviceClass `gpu` with a CEL selector on driver and memory capacity), one
ResourceClaimTemplate asking for one device; create a batch of pods (init), then a second batch
(measured), each counted from the first create until every pod of the batch is bound. Variant
`prio`: the template uses firstAvailable whose first alternative names a class with no devices.

Two more workloads after upstream scheduler_perf's dra/partitionabledevices and
dra/consumablecapacity (same node and pod counts as the plain one):
- `partitionable`: per node a pool of two slices, one with five counter sets (counter1..4 of 1
  each, upstream's resourceslice-partitionable-countersets) and one with upstream's six devices
  per set (two consume two counters, four consume one); the template asks for one device. The
  allocator must skip devices whose counters earlier claims took.
- `consumable`: per node three devices with allowMultipleAllocations and 80Gi memory (requestPolicy
  default 1Gi, validRange min 1Gi), upstream's resourceslice-consumablecapacity; the template has
  two requests of 10Gi each (resourceclaimtemplate-consumablecapacity).
Scaling: time per pod at several node counts, for the plain and the partitionable workload. As
upstream's scheduler_perf workloads (initPods, then measurePods) each count runs an init batch
and then the measured one: the init ("cold") figure includes the first look at every node (its
device inventory, CEL matches and counter table, once per node), the measured one is the
steady state.

The upstream Go scheduler must reach 120 pods/s on SchedulingWithResourceClaimTemplate (5000 pods,
500 nodes); the goal here is >= 1000 pods/s (plain) and >= 500 (partitionable) on 2 cores.
Run: python bench/scheduler.py [--nodes 500] [--pods 2500] [--scale 100,500,2000] [--scale-pods 1000]
     [--workloads plain,prio,partitionable,consumable] [--profile FILE]
`--peer` instead runs the plain workload through the REST API against the embedded control plane and
against the real components (bench/scheduler_peer.py): python bench/scheduler.py --peer --nodes 100 --pods 500
`--fidelity` runs issue 23's REST-vs-in-process comparison in one run, alternating for `--rounds`: the plain
workload in process with bare pods (store.create: the issue's figure), in process through the API server's
Registry (a REST create's defaults, admission, validation and managedFields, and the components' managedFields,
without HTTP), and through the REST API (--peer's embedded side); then the three ratios of CPU per pod:
python bench/scheduler.py --fidelity --nodes 100 --pods 500 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry

from nodeagent.config import parse_documents
from nodeagent.controlplane.loop import ControlPlane
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util import gcsettings
from nodeagent.util.clock import RealClock

D = "gpu.example.com"


def config(nodes: int, devices: bool = True) -> Any:
    return parse_documents([
        {"kind": "KubeletConfiguration"},
        {
            "kind": "NodeAgentConfiguration",
            "nodeName": "local",
            "virtualNodes": [{
                "name": "node-{index}",
                "count": nodes,
                "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                "devices": [{"driver": D, "count": 10, "name": "gpu-{index}",
                             "attributes": {"model": "a100"}, "capacity": {"memory": "40Gi"}}] if devices else [],
            }],
        },
    ])


def objects(workload: str) -> list[dict[str, Any]]:
    if workload in SHARING:
        return sharing_objects(workload)
    prio = workload == "prio"
    gpu_sel = [f'device.driver == "{D}"', f'device.capacity["{D}"].memory.compareTo(quantity("40Gi")) >= 0']
    classes = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": e}} for e in gpu_sel]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "none"},
         "spec": {"selectors": [{"cel": {"expression": 'device.driver == "nothing.example.com"'}}]}},
    ]
    if prio:
        request: dict[str, Any] = {"name": "gpu", "firstAvailable": [
            {"name": "none", "deviceClassName": "none"}, {"name": "gpu", "deviceClassName": "gpu"}]}
    else:
        request = {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}
    tmpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [request]}}}}
    return [*classes, tmpl]


P = "test-driver.cdi.k8s.io"
SHARING = ("partitionable", "consumable")
COUNTER_SETS = 5  # the first-fit order takes the two-counter devices first: two claims per set at least


def _slice(name: str, node: str, count: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": P, "nodeName": node, "pool": {"name": f"{node}-pool", "generation": 1,
                                                            "resourceSliceCount": count}, **spec}}


def node_slices(workload: str, node: str) -> list[dict[str, Any]]:
    """The slices one node publishes in the partitionable or consumable workload."""
    if workload == "partitionable":
        one = {f"counter{i}": {"value": "1"} for i in range(1, 5)}
        sets = [{"name": f"set{g}", "counters": one} for g in range(COUNTER_SETS)]
        devices: list[dict[str, Any]] = []
        for g in range(COUNTER_SETS):
            for name, counters in (("2c-1", (1, 2)), ("2c-2", (3, 4)), ("1c-1", (1,)), ("1c-2", (2,)),
                                   ("1c-3", (3,)), ("1c-4", (4,))):
                devices.append({"name": f"g{g}-{name}", "attributes": {"preallocate": {"bool": False}},
                                "capacity": {"counters": {"value": str(len(counters))}},
                                "consumesCounters": [{"counterSet": f"set{g}", "counters": {
                                    f"counter{c}": {"value": "1"} for c in counters}}]})
        return [_slice(f"{node}-counters", node, 2, sharedCounters=sets),
                _slice(f"{node}-devices", node, 2, devices=devices)]
    policy = {"default": "1Gi", "validRange": {"min": "1Gi"}}
    devices = [{"name": f"shared-{i}", "allowMultipleAllocations": True,
                "attributes": {"preallocate": {"bool": False}},
                "capacity": {"memory": {"value": "80Gi", "requestPolicy": policy}}} for i in range(3)]
    return [_slice(f"{node}-devices", node, 1, devices=devices)]


def sharing_objects(workload: str) -> list[dict[str, Any]]:
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
           "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{P}"'}}]}}
    if workload == "partitionable":
        requests: list[dict[str, Any]] = [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]
    else:
        requests = [{"name": f"req-{i}", "exactly": {"deviceClassName": "gpu",
                                                      "capacity": {"requests": {"memory": "10Gi"}}}}
                    for i in range(2)]
    tmpl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": requests}}}}
    return [cls, tmpl]


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}}


async def batch(store: ObjectStore, create: Callable[[dict[str, Any]], object], prefix: str,
                count: int) -> tuple[float, float]:
    """Create `count` pods with `create` (yielding to the control plane as a client's QPS would) and
    wait until all are bound; (pods/s over the whole span, CPU ms of this process per pod). Bindings
    are counted from a watch (no polling). The CPU figure is what the machine's load does not change:
    on a shared machine the wall-clock rate is this process's share of a core times 1/CPU."""
    bound: set[str] = set()
    async with store.watch({"Pod"}) as watch:
        start = time.perf_counter()
        cpu = time.process_time()
        for i in range(count):
            create(pod(f"{prefix}-{i}"))
            if i % 20 == 19:
                await asyncio.sleep(0)
        async for ev in watch:
            name = ev.name
            if name.startswith(prefix + "-") and ev.object.get("spec", {}).get("nodeName"):
                bound.add(name)
                if len(bound) == count:
                    break
        return count / (time.perf_counter() - start), 1000.0 * (time.process_time() - cpu) / count


def registry_creator(store: ObjectStore, clock: RealClock) -> Callable[[dict[str, Any]], object]:
    """The pod create a REST request makes, in process (`--fidelity`'s `registry` mode): the API server's
    Registry over the store (decoding's defaults, strategy, ServiceAccount/Priority/DefaultTolerationSeconds
    admission, validation, managedFields), as the daemon wires it, with its store hooks (the embedded
    components' managedFields, stored as Go writes them) and what `APIServer.start` would put in place for a
    pod: the namespaces, the system PriorityClasses and `default`'s ServiceAccount. No HTTP, no TLS, no
    answer's encoding: what differs from the REST side is the REST edge's own cost."""
    from nodeagent.apiserver.namespace_companions import NamespaceCompanions
    from nodeagent.apiserver.options import write_options
    from nodeagent.apiserver.server import APIServer, APIServerOptions

    server = APIServer(store, clock, APIServerOptions())
    server.ensure_namespaces()
    server.ensure_priority_classes()
    NamespaceCompanions(store, "", service_accounts=True, root_ca=False).sync_all()
    res = server.catalog.find("", "v1", "pods")
    assert res is not None
    opts = write_options({}, "Python/3 aiohttp/3")  # the REST side's client: its user agent names the manager
    create = server.registry.create
    return lambda body: create(res, "default", body, opts)


async def run(nodes: int, batches: list[int], workload: str, profile: str = "",
              via_registry: bool = False) -> list[tuple[float, float]]:
    with tempfile.TemporaryDirectory(prefix="na-bench-") as tmp:
        clock = RealClock()
        kinds = builtin_kinds().with_hooks(resource.hooks())
        store = ObjectStore(os.environ.get("B_DB") or Path(tmp) / "objects.db", kinds, clock)
        create: Callable[[dict[str, Any]], object] = registry_creator(store, clock) if via_registry else \
            store.create
        for obj in objects(workload):
            store.create(obj)
        if workload in SHARING:
            for i in range(nodes):
                for obj in node_slices(workload, f"node-{i}"):
                    store.create(obj)
        cp = ControlPlane(config(nodes, devices=workload not in SHARING), store, clock, CollectorRegistry())
        await cp.start()
        try:
            rates = []
            for b, count in enumerate(batches):
                prof = cProfile.Profile(time.process_time) if profile and b == len(batches) - 1 else None
                if prof is not None:
                    prof.enable()
                rates.append(await batch(store, create, f"b{b}", count))
                if prof is not None:
                    prof.disable()
                    prof.dump_stats(profile)
            await cp.wait_idle(timeout=60)
            allocated = sum(1 for c in store.scan("ResourceClaim") if c.get("status", {}).get("allocation"))
            assert allocated == sum(batches), allocated
            return rates
        finally:
            await cp.stop()
            store.close()


BARE, REGISTRY, REST = "bare", "registry", "rest"
MODES = (BARE, REGISTRY, REST)


def fidelity(nodes: int, pods: int, rounds: int, modes: tuple[str, ...]) -> None:
    """Issue 23's REST-vs-in-process figure split in two. `bare` is the issue's in-process figure (pods
    created with store.create: bare manifests, no managedFields anywhere); `registry` creates them through
    the Registry as a REST create does (defaults, admission, validation, managedFields, the components'
    managedFields too); `rest` is --peer's embedded side (the daemon's CPU; the client's is not counted,
    as the in-process modes count their own create loop). Ratios of CPU per pod, higher is better:
    bare/rest is the issue's (the goal >= 0.8), registry/rest the REST edge's own cost, bare/registry the
    cost of kube-apiserver's semantics (fidelity). The modes alternate in each round."""
    unknown = set(modes) - set(MODES)
    if unknown:
        raise SystemExit(f"--modes: unknown {sorted(unknown)}; known: {', '.join(MODES)}")
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(rounds):
        for mode in (m for m in MODES if m in modes):
            if mode == REST:
                from bench.scheduler_peer import EMBEDDED, run_side

                side = asyncio.run(run_side(EMBEDDED, nodes, pods, None))
                rate, ms = side.pods_per_s, 1000 * side.cpu_s / pods
                extra = (f", {100 * side.sys_s / max(side.cpu_s, 1e-9):.0f}% system, "
                         f"peak RSS {side.peak_rss / 2**20:.0f} MiB")
            else:
                gcsettings.apply()  # as `nodeagent run` does
                rates = asyncio.run(run(nodes, [pods, pods], "plain", via_registry=mode == REGISTRY))
                (rate, ms), extra = rates[1], ""
            cpu[mode].append(ms)
            print(f"round {r + 1} {mode:8s} nodes={nodes} pods={pods}+{pods}: measured {rate:7.1f} pods/s, "
                  f"{ms:5.2f} CPU-ms/pod{extra} (load {os.getloadavg()[0]:.1f})", flush=True)
    mean = {m: sum(v) / len(v) for m, v in cpu.items() if v}
    print("means: " + ", ".join(f"{m} {mean[m]:.2f} CPU-ms/pod" for m in MODES if m in mean))
    for a, b, what in ((BARE, REST, "the issue's ratio (in process bare / REST; goal >= 0.8)"),
                       (REGISTRY, REST, "the REST edge (registry / REST)"),
                       (BARE, REGISTRY, "fidelity (bare / registry)")):
        if a in mean and b in mean:
            print(f"{what}: {mean[a] / mean[b]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2500)
    parser.add_argument("--scale", default="100,500,2000")
    parser.add_argument("--scale-pods", type=int, default=1000)
    parser.add_argument("--workloads", default="plain,prio,partitionable,consumable")
    parser.add_argument("--scale-workloads", default="plain,partitionable")
    parser.add_argument("--profile", default="", help="write a cProfile of the measured batch to this file "
                        "(a workload's file is overwritten by the next one: name one workload)")
    parser.add_argument("--peer", action="store_true", help="the workload through the REST API against the embedded "
                        "control plane and against the real one (kube-apiserver fixture binary), in one run")
    parser.add_argument("--sides", default="embedded,kube-scheduler+embedded-api,real",
                        help="--peer: which sides run (--profile then profiles the daemon in the measured batch)")
    parser.add_argument("--held", action="store_true",
                        help="--peer: kube-scheduler stopped while the measured pods and their claims are created; "
                             "the batch counts from its restart (its pace from a full queue)")
    parser.add_argument("--scheduler-qps", type=int, default=0,
                        help="--peer: the real kube-scheduler's (and the real side's controller-manager's) client QPS, "
                        "burst twice that; 0: their defaults (50/100, 20/30), which cap the pods/s of both real-"
                        "scheduler sides")
    parser.add_argument("--fidelity", action="store_true", help="the plain workload at --nodes/--pods three ways, "
                        "alternating for --rounds: in process with bare pods (store.create), in process through the "
                        "API server's Registry (a REST create's path without HTTP), and through the REST API "
                        "(--peer's embedded side); then the CPU-per-pod ratios")
    parser.add_argument("--rounds", type=int, default=1, help="--fidelity: rounds of the three")
    parser.add_argument("--modes", default=",".join(MODES), help="--fidelity: which of the three run")
    args = parser.parse_args()
    if args.fidelity:
        fidelity(args.nodes, args.pods, args.rounds, tuple(m for m in args.modes.split(",") if m))
        return
    if args.peer:
        from bench.scheduler_peer import peer

        peer(args.nodes, args.pods, tuple(s for s in args.sides.split(",") if s), args.profile, args.scheduler_qps,
             args.held)
        return
    gcsettings.apply()  # as `nodeagent run` does
    labels = {"plain": "exactly gpu", "prio": "firstAvailable(none, gpu)",
              "partitionable": "partitionable (counters)", "consumable": "consumable capacity"}
    for workload in (w for w in args.workloads.split(",") if w):
        t0 = time.perf_counter()
        rates = asyncio.run(run(args.nodes, [args.pods, args.pods], workload, args.profile))
        print(f"{labels[workload]:28s} nodes={args.nodes} init {args.pods} pods: {rates[0][0]:7.1f} pods/s, "
              f"measured {args.pods} pods: {rates[1][0]:7.1f} pods/s, {rates[1][1]:5.2f} ms CPU/pod  "
              f"({time.perf_counter() - t0:.1f}s total, load {os.getloadavg()[0]:.1f})", flush=True)
    for workload in (w for w in args.scale_workloads.split(",") if w):
        for n in (int(x) for x in args.scale.split(",") if x):
            count = min(args.scale_pods, n * 5)
            t0 = time.perf_counter()
            (_, cold), (rate, cpu) = asyncio.run(run(n, [count, count], workload))
            print(f"scale {workload:13s} nodes={n:5d} pods={count:5d}+{count:5d}: {1000.0 / rate:6.2f} ms/pod "
                  f"({rate:7.1f} pods/s, {cpu:5.2f} ms CPU/pod; init batch {cold:5.2f} ms CPU/pod; "
                  f"{time.perf_counter() - t0:.1f}s total, load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
