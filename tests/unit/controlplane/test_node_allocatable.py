"""DRANodeAllocatableResources (KEP-5517) in the embedded scheduler, as v1.37.2's DynamicResources
plugin does it: the claim's devices' nodeAllocatableResources are added to the pod's requests for
the fit check on each node, written to pod.status.nodeAllocatableResourceClaimStatuses with the
binding, and counted against the node for the pods after it; a claim with a mapped device serves
one pod only. With the gate off none of this happens (the slice field is dropped on write)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from nodeagent.controlplane.scheduler import SchedulerOptions, nodealloc
from tests.unit.controlplane.test_scheduler_support import (
    GATES,
    GPU,
    Cluster,
    claim,
    claim_spec,
    device,
    device_class,
    exact,
    make_store,
    node,
    pod,
    resource_slice,
    template,
)

ON = {**GATES, "DRANodeAllocatableResources": True}
OPTIONS = SchedulerOptions(initial_backoff=0.0, max_backoff=0.0, node_allocatable_resources=True)


def _mapped_gpu(name: str, **resources: Any) -> dict[str, Any]:
    d = device(name)
    d["nodeAllocatableResources"] = resources
    return d


def _cluster(*, on: bool = True, cpu: str = "4", devices: list[dict[str, Any]] | None = None) -> Cluster:
    gates = ON if on else GATES
    opts = OPTIONS if on else SchedulerOptions(initial_backoff=0.0, max_backoff=0.0)
    c = Cluster(options=opts, gates=gates, store=make_store(gates=gates))
    if devices is None:
        devices = [_mapped_gpu(f"g{i}", cpu={"overhead": {"perPod": "500m", "perContainer": "500m"}},
                               memory={"mapping": {"deviceMultiplier": "4Gi"}}) for i in range(4)]
    c.add(node("n1", cpu=cpu, memory="16Gi"), device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("n1", GPU, devices), template("t", claim_spec(exact("gpu", "gpu"))))
    c.run()
    return c


def _statuses(c: Cluster, name: str) -> Any:
    return c.get("Pod", name).get("status", {}).get("nodeAllocatableResourceClaimStatuses")


async def test_the_status_is_written_with_the_binding() -> None:
    c = _cluster()
    c.add(pod("p", templates={"gpu": "t"}, cpu="1"))
    c.run()
    p = c.get("Pod", "p")
    assert p["spec"]["nodeName"] == "n1"
    assert p["metadata"]["generation"] == 1  # a binding is no spec update of the pod strategy's
    claim_name = p["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert _statuses(c, "p") == [{
        "resourceClaimName": claim_name, "containers": ["c"],
        "mapping": [{"name": "memory", "quantity": "4Gi"}],
        "overhead": [{"name": "cpu", "perPod": "500m", "perContainer": "500m"}],
    }]


async def test_the_footprint_fills_the_node() -> None:
    """Each pod takes 1 cpu of requests + 1 cpu of overhead: two fit on 4 cpus, not a third
    (upstream's DRA Filter: Insufficient cpu), although NodeResourcesFit alone would allow four."""
    c = _cluster()
    for i in range(3):
        c.add(pod(f"p{i}", templates={"gpu": "t"}, cpu="1"))
        c.run()
    assert [c.get("Pod", f"p{i}")["spec"].get("nodeName") for i in range(3)] == ["n1", "n1", None]
    cond = next(x for x in c.get("Pod", "p2")["status"]["conditions"] if x["type"] == "PodScheduled")
    assert cond["reason"] == "Unschedulable"
    assert "Insufficient cpu" in cond["message"]
    assert c.scheduler.cache.nodes["n1"].requested["cpu"] == 4000


async def test_a_pod_that_goes_makes_room() -> None:
    """Its footprint (requests and claim entries) leaves the node with it: the waiting pod is bound."""
    c = _cluster()
    for i in range(3):
        c.add(pod(f"p{i}", templates={"gpu": "t"}, cpu="1"))
        c.run()
    assert not c.get("Pod", "p2")["spec"].get("nodeName")
    c.delete("Pod", "p0")
    c.run()
    assert c.get("Pod", "p2")["spec"]["nodeName"] == "n1"
    assert c.scheduler.cache.nodes["n1"].requested["cpu"] == 4000


async def test_gate_off_drops_the_field_and_counts_nothing() -> None:
    c = _cluster(on=False)
    stored = c.get("ResourceSlice", f"n1-{GPU}")
    assert all("nodeAllocatableResources" not in d for d in stored["spec"]["devices"])
    for i in range(3):
        c.add(pod(f"p{i}", templates={"gpu": "t"}, cpu="1"))
        c.run()
    assert [c.get("Pod", f"p{i}")["spec"].get("nodeName") for i in range(3)] == ["n1"] * 3
    assert _statuses(c, "p0") is None


async def test_memory_beyond_the_node_is_unschedulable() -> None:
    c = _cluster(devices=[_mapped_gpu("g0", memory={"mapping": {"deviceMultiplier": "32Gi"}})])
    c.add(pod("p", templates={"gpu": "t"}))
    c.run()
    assert not c.get("Pod", "p")["spec"].get("nodeName")
    cond = next(x for x in c.get("Pod", "p")["status"]["conditions"] if x["type"] == "PodScheduled")
    assert "Insufficient memory" in cond["message"]


async def test_a_mapped_claim_is_not_shared() -> None:
    c = _cluster()
    c.add(claim("shared", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("a", claims={"gpu": "shared"}))
    c.run()
    assert c.get("Pod", "a")["spec"]["nodeName"] == "n1"
    c.add(pod("b", claims={"gpu": "shared"}))
    c.run()
    assert not c.get("Pod", "b")["spec"].get("nodeName")
    cond = next(x for x in c.get("Pod", "b")["status"]["conditions"] if x["type"] == "PodScheduled")
    assert "node allocatable resource claim shared has a mapped device and cannot be shared across pods" in \
        cond["message"]


async def test_an_overhead_only_claim_is_shared() -> None:
    c = _cluster(devices=[_mapped_gpu("g0", cpu={"overhead": {"perPod": "100m"}})])
    c.add(claim("shared", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("a", claims={"gpu": "shared"}), pod("b", claims={"gpu": "shared"}))
    c.run()
    assert c.get("Pod", "b")["spec"]["nodeName"] == "n1"
    assert _statuses(c, "b")[0]["overhead"] == [{"name": "cpu", "perPod": "100m"}]
    assert c.scheduler.cache.nodes["n1"].requested["cpu"] == 200


async def test_capacity_key_without_consumed_capacity_is_an_error() -> None:
    """addDeviceMapping: a capacityKey mapping on a device that is not shared has no consumedCapacity."""
    d = device("g0", capacity={"cores": "8"})
    d["nodeAllocatableResources"] = {"cpu": {"mapping": {"capacityKey": "cores", "capacityMultiplier": "1"}}}
    c = _cluster(devices=[d])
    c.add(pod("p", templates={"gpu": "t"}))
    c.run()
    assert not c.get("Pod", "p")["spec"].get("nodeName")
    cond = next(x for x in c.get("Pod", "p")["status"]["conditions"] if x["type"] == "PodScheduled")
    assert "ConsumedCapacity is nil, but Capacity key 'cores' is set in NodeAllocatableResources for resource cpu" \
        in cond["message"]


@pytest.mark.parametrize(("resources", "message"), [
    ({"requests": {"cpu": "1"}},
     "pod level request for cpu is insufficient to cover the aggregated container and node-allocatable DRA "
     "requests"),
    ({"requests": {"cpu": "2", "memory": "5Gi"}, "limits": {"memory": "6Gi"}},
     "pod level limit for memory is insufficient to cover the limit and DRA overhead for container c"),
    ({"requests": {"cpu": "2"}}, ""),
])
async def test_pod_level_resources_must_cover_the_claims(resources: dict[str, Any], message: str) -> None:
    """validatePodLevelResourcesCoverDRA: 500m cpu of container requests plus 1 cpu of the claim's
    overheads against the pod-level request; a 3Gi container memory limit plus the claim's 4Gi
    against the pod-level limit (UnschedulableAndUnresolvable upstream)."""
    c = _cluster()
    p = pod("p", templates={"gpu": "t"}, cpu="500m")
    p["spec"]["resources"] = resources
    if "limits" in resources:
        p["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1Gi"
        p["spec"]["containers"][0]["resources"]["limits"] = {"memory": "3Gi"}
    c.add(p)
    c.run()
    got = c.get("Pod", "p")
    if not message:
        assert got["spec"]["nodeName"] == "n1"
        return
    assert not got["spec"].get("nodeName")
    cond = next(x for x in got["status"]["conditions"] if x["type"] == "PodScheduled")
    assert message in cond["message"]


# --- the pure arithmetic ------------------------------------------------------------------------


def _lookup(devices: dict[str, Any]) -> nodealloc.DeviceLookup:
    return lambda driver, pool, name: devices.get(name, nodealloc.MISSING)


def test_capacity_mapping_with_a_multiplier() -> None:
    devices = {"cpu0": {"cpu": {"mapping": {"capacityKey": "dra.example.com/cores", "capacityMultiplier": "2"}},
                        "memory": {"overhead": {"perContainer": "64Mi"}}}}
    results = [{"driver": "d", "pool": "p", "device": "cpu0", "consumedCapacity": {"dra.example.com/cores": "3"}},
               {"driver": "d", "pool": "p", "device": "cpu0", "consumedCapacity": {"dra.example.com/cores": "1"}}]
    entry = nodealloc.claim_status("ns", "c", results, _lookup(devices))
    assert entry == {"resourceClaimName": "c", "mapping": [{"name": "cpu", "quantity": "8"}],
                     "overhead": [{"name": "memory", "perContainer": "128Mi"}]}
    status = nodealloc.with_containers(entry, ["a", "b"])
    assert nodealloc.demand({"cpu": 500}, [status], frozenset()) == {"cpu": 8500, "memory": 256 * 2**20}
    assert nodealloc.demand({"cpu": 500}, [status], frozenset({"cpu"})) == {"cpu": 500, "memory": 256 * 2**20}


def test_devices_without_the_field_give_no_entry() -> None:
    results = [{"driver": "d", "pool": "p", "device": "g0"}]
    assert nodealloc.claim_status("ns", "c", results, _lookup({"g0": None})) is None


@pytest.mark.parametrize(("value", "fmt", "text"), [
    (Fraction(3, 2), "DecimalSI", "1500m"), (Fraction(4 * 2**30), "BinarySI", "4Gi"), (Fraction(2), "DecimalSI", "2"),
    (Fraction(1, 1000), "BinarySI", "1m"), (Fraction(16000), "DecimalSI", "16k"),
])
def test_quantity_text(value: Fraction, fmt: str, text: str) -> None:
    assert nodealloc.quantity_text(value, fmt) == text


def test_misfit_names_each_short_resource() -> None:
    assert nodealloc.misfit({"cpu": 3000, "memory": 1, "hugepages-2Mi": 4}, {"cpu": 4000, "memory": 8},
                            {"cpu": 2000, "memory": 8}) == "Insufficient cpu, Insufficient memory, " \
                                                          "Insufficient hugepages-2Mi"
    assert nodealloc.misfit({"cpu": 2000}, {"cpu": 4000}, {"cpu": 2000}) is None
