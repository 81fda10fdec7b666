"""Upstream's PostFilter: a claim allocated for a node where the pod cannot run, and reserved by no
pod, is deallocated so that the next attempt allocates it where the pod fits. Also: a CEL runtime
error stops the attempt with upstream's message; a pool spanning nodes is complete."""

from __future__ import annotations

from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    Cluster,
    claim,
    claim_spec,
    device,
    device_class,
    exact,
    node,
    pod,
    resource_slice,
)


def _allocated_for(c: Cluster, name: str, node_name: str, reserved: list[dict[str, str]] | None = None) -> None:
    cur = c.get("ResourceClaim", name)
    cur["status"] = {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": GPU, "pool": node_name, "device": "g0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}
    if reserved:
        cur["status"]["reservedFor"] = reserved
    c.store.update_status(cur)


def _cluster() -> Cluster:
    c = Cluster()
    c.add(node("small", cpu="1"), node("big", cpu="4"), device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("small", GPU, [device("g0")]), resource_slice("big", GPU, [device("g0")]),
          claim("shared", claim_spec(exact("gpu", "gpu"))))
    return c


async def test_an_unreserved_claim_allocated_elsewhere_is_deallocated_and_the_pod_scheduled() -> None:
    c = _cluster()
    _allocated_for(c, "shared", "small")
    c.add(pod("p", claims={"gpu": "shared"}, cpu="2"))
    c.run()
    p = c.get("Pod", "p")
    assert p["spec"]["nodeName"] == "big"
    alloc = c.get("ResourceClaim", "shared")["status"]["allocation"]
    assert alloc["devices"]["results"][0]["pool"] == "big"


async def test_a_claim_another_pod_reserved_stays() -> None:
    c = _cluster()
    c.add(pod("other", claims={"gpu": "shared"}, node_name="small"))
    c.run()
    assert c.get("ResourceClaim", "shared")["status"]["reservedFor"][0]["name"] == "other"
    c.add(pod("p", claims={"gpu": "shared"}, cpu="2"))
    c.run()
    assert not c.get("Pod", "p")["spec"].get("nodeName")
    assert c.get("ResourceClaim", "shared")["status"]["allocation"]["devices"]["results"][0]["pool"] == "small"


async def test_a_pool_spanning_two_nodes_is_complete_for_each() -> None:
    c = Cluster()
    spanning = [resource_slice(n, GPU, [device(f"{n}-g")], name=f"pool-{n}") for n in ("a", "b")]
    for s in spanning:
        s["spec"]["pool"] = {"name": "shared-pool", "generation": 1, "resourceSliceCount": 2}
    all_mode = {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}
    c.add(node("a"), device_class("gpu", f'device.driver == "{GPU}"'), *spanning,
          claim("all", claim_spec(all_mode)))
    c.add(pod("p", claims={"gpu": "all"}))
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "a"
    results = c.get("ResourceClaim", "all")["status"]["allocation"]["devices"]["results"]
    assert [r["device"] for r in results] == ["a-g"]


async def test_allocation_timestamp_only_with_the_binding_and_status_gates() -> None:
    from nodeagent.controlplane.scheduler import SchedulerOptions

    for stamp in (True, False):
        c = Cluster(options=SchedulerOptions(initial_backoff=0.0, max_backoff=0.0, allocation_timestamp=stamp))
        c.add(node("n"), device_class("gpu", f'device.driver == "{GPU}"'), resource_slice("n", GPU, [device("g0")]),
              claim("c", claim_spec(exact("gpu", "gpu"))), pod("p", claims={"gpu": "c"}))
        c.run()
        alloc = c.get("ResourceClaim", "c")["status"]["allocation"]
        assert ("allocationTimestamp" in alloc) is stamp
