"""DRAManager as the pod manager's starter: prepare, waiting reasons, retries, sharing, unprepare."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

from nodeagent.dra.state import CLAIMS_BUCKET, PODS_BUCKET
from nodeagent.objects.pod.model import FAILED, PENDING, RUNNING
from nodeagent.state.db import StateDB, Txn
from nodeagent.util.clock import FakeClock

from .fakes import FakeClaims, FakeRegistry, Rig, build, claim_doc, claim_pod, settle

GPU = "gpu.example.com"
NET = "net.example.com"


@pytest.fixture
async def rig(fake_clock: FakeClock) -> AsyncIterator[Rig]:
    r = build(fake_clock, StateDB.memory(), FakeRegistry(GPU, NET), FakeClaims())
    await r.dra.start()
    yield r
    await r.close()


def phase(rig: Rig, name: str) -> str:
    return rig.pods.get("default", name).status.phase


def message(rig: Rig, name: str) -> str:
    return rig.pods.get("default", name).status.message


async def test_two_claims_of_one_driver_in_one_call(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"a": "claim-a", "b": "claim-b"})
    rig.claims.put(claim_doc("claim-a", reserved=[pod]))
    rig.claims.put(claim_doc("claim-b", reserved=[pod]))
    await rig.pods.apply(pod)
    assert phase(rig, "p") == RUNNING
    assert rig.drivers.prepared_names() == [(GPU, ["claim-a", "claim-b"])]
    ref = rig.drivers.prepare_calls[0][1][0]
    assert (ref.namespace, ref.uid, ref.name) == ("default", "uid-claim-a", "claim-a")
    # Written before Running: the cache holds both claims with the pod and their devices.
    stored = dict(rig.db.items(CLAIMS_BUCKET))
    assert set(stored) == {"uid-claim-a", "uid-claim-b"}
    assert stored["uid-claim-a"]["pods"] == [pod.uid]
    assert stored["uid-claim-a"]["prepared"][GPU][0]["cdi"] == [f"{GPU}/gpu=claim-a"]
    assert (rig.db.get(PODS_BUCKET, pod.uid) or {})["prepared"] is True


async def test_claims_of_two_drivers_in_two_calls(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"a": "claim-a", "n": "claim-n", "b": "claim-b"})
    rig.claims.put(claim_doc("claim-a", reserved=[pod]))
    rig.claims.put(claim_doc("claim-b", reserved=[pod]))
    rig.claims.put(claim_doc("claim-n", reserved=[pod], results=[("nic", NET, "host", "eth1")]))
    await rig.pods.apply(pod)
    assert phase(rig, "p") == RUNNING
    assert rig.drivers.prepared_names() == [(GPU, ["claim-a", "claim-b"]), (NET, ["claim-n"])]
    sample = rig.metrics.get_sample_value
    assert sample("dra_resource_claims_in_use", {"driver_name": GPU}) == 2.0
    assert sample("dra_resource_claims_in_use", {"driver_name": NET}) == 1.0
    assert sample("dra_resource_claims_in_use", {"driver_name": "<any>"}) == 3.0
    labels = {"operation_name": "PrepareResources", "is_error": "false"}
    assert sample("dra_operations_duration_seconds_count", labels) == 1.0
    assert sample("dra_operations_duration_seconds_sum", labels) == 0.0  # the fake clock did not move


async def test_pod_without_claims_runs_at_once(rig: Rig) -> None:
    pod = claim_pod("plain", rig.clock, {}, containers={"c0": []})
    await rig.pods.apply(pod)
    assert phase(rig, "plain") == RUNNING
    assert rig.drivers.prepare_calls == []
    assert rig.metrics.get_sample_value("dra_operations_duration_seconds_count",
                                        {"operation_name": "PrepareResources", "is_error": "false"}) is None


@pytest.mark.parametrize("problem", ["missing", "unallocated", "unreserved"])
async def test_pod_waits_for_claim_then_runs_when_poked(rig: Rig, problem: str) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim"})
    if problem == "unallocated":
        rig.claims.put(claim_doc("gpu-claim", allocated=False))
    elif problem == "unreserved":
        rig.claims.put(claim_doc("gpu-claim"))
    await rig.pods.apply(pod)
    view = rig.pods.get("default", "p")
    assert view.status.phase == PENDING
    # the kubelet's texts (PrepareResources: the GET, IsReservedForPod before the allocation check)
    unreserved = f"pod p ({pod.uid}) is not allowed to use ResourceClaim gpu-claim (uid-gpu-claim)"
    expected = {"missing": 'fetch ResourceClaim gpu-claim: resourceclaims.resource.k8s.io "gpu-claim" not found',
                "unallocated": unreserved, "unreserved": unreserved}
    assert view.status.message == expected[problem]
    assert [cs.reason for cs in view.status.container_statuses] == ["ContainerCreating"]
    assert rig.drivers.prepare_calls == []
    assert [(e.reason, e.message) for e in rig.recorder.for_pod(pod) if e.type == "Warning"] == [
        ("FailedPrepareDynamicResources",
         f"Failed to prepare dynamic resources: prepare dynamic resources: {expected[problem]}")]
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod]))
    await rig.pods.retry_pending()
    assert phase(rig, "p") == RUNNING
    assert message(rig, "p") == ""
    assert rig.pods.pending_uids() == ()


async def test_driver_not_registered_waits_then_runs(rig: Rig) -> None:
    rig.drivers.registered.discard(GPU)
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim"})
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod]))
    await rig.pods.apply(pod)
    assert phase(rig, "p") == PENDING
    assert message(rig, "p") == f"DRA driver {GPU} is not registered"
    await rig.drivers.set_registered(GPU, True)
    await rig.pods.retry_pending()
    assert phase(rig, "p") == RUNNING
    assert rig.drivers.prepared_names() == [(GPU, ["gpu-claim"])]


async def test_per_claim_error_retried_with_backoff(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"a": "claim-a", "b": "claim-b"})
    rig.claims.put(claim_doc("claim-a", reserved=[pod]))
    rig.claims.put(claim_doc("claim-b", reserved=[pod]))
    rig.drivers.claim_errors["claim-b"] = "device busy"
    await rig.pods.apply(pod)
    assert phase(rig, "p") == PENDING
    assert message(rig, "p") == "NodePrepareResources failed for ResourceClaim claim-b: device busy"
    # Backoff: 1 s, then 2 s; the claim that succeeded is not sent again.
    await settle()
    await rig.clock.wait_for_sleepers(2)  # the health loop (every 1 s) and the retry backoff
    rig.clock.advance(1.0)
    await settle()
    assert rig.drivers.prepared_names() == [(GPU, ["claim-a", "claim-b"]), (GPU, ["claim-b"])]
    rig.claims.put(claim_doc("claim-b", reserved=[pod]))
    del rig.drivers.claim_errors["claim-b"]
    await rig.clock.wait_for_sleepers(2)
    rig.clock.advance(1.0)
    await settle()
    assert phase(rig, "p") == PENDING  # the next retry is 2 s after the last
    await rig.clock.wait_for_sleepers(2)
    rig.clock.advance(1.0)
    await settle()
    assert phase(rig, "p") == RUNNING
    assert rig.drivers.prepared_names()[-1] == (GPU, ["claim-b"])
    assert rig.metrics.get_sample_value("dra_operations_duration_seconds_count",
                                        {"operation_name": "PrepareResources", "is_error": "true"}) == 2.0
    assert rig.metrics.get_sample_value("dra_operations_duration_seconds_count",
                                        {"operation_name": "PrepareResources", "is_error": "false"}) == 1.0


async def test_whole_call_error_shows_on_pod(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim"})
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod]))
    rig.drivers.call_error = "deadline exceeded"
    await rig.pods.apply(pod)
    assert message(rig, "p") == f"NodePrepareResources: {GPU}: deadline exceeded"
    rig.drivers.call_error = ""
    await rig.pods.retry_pending()
    assert phase(rig, "p") == RUNNING


async def test_shared_claim_prepared_once_unprepared_after_last_pod(rig: Rig) -> None:
    p1 = claim_pod("p1", rig.clock, {"gpu": "shared"})
    p2 = claim_pod("p2", rig.clock, {"gpu": "shared"})
    rig.claims.put(claim_doc("shared", reserved=[p1, p2]))
    await rig.pods.apply(p1)
    await rig.pods.apply(p2)
    assert phase(rig, "p1") == phase(rig, "p2") == RUNNING
    assert rig.drivers.prepared_names() == [(GPU, ["shared"])]
    assert rig.metrics.get_sample_value("dra_resource_claims_in_use", {"driver_name": GPU}) == 1.0
    await rig.pods.delete("default", "p1")
    assert rig.drivers.unprepare_calls == []
    assert (rig.db.get(CLAIMS_BUCKET, "uid-shared") or {})["pods"] == [p2.uid]
    await rig.pods.delete("default", "p2")
    assert rig.drivers.unprepared_names() == [(GPU, ["shared"])]
    assert rig.db.items(CLAIMS_BUCKET) == []
    assert rig.db.items(PODS_BUCKET) == []
    assert rig.metrics.get_sample_value("dra_resource_claims_in_use", {"driver_name": "<any>"}) == 0.0
    assert rig.metrics.get_sample_value("dra_operations_duration_seconds_count",
                                        {"operation_name": "UnprepareResources", "is_error": "false"}) == 2.0


async def test_finished_and_evicted_pods_unprepare(rig: Rig) -> None:
    p1 = claim_pod("p1", rig.clock, {"gpu": "c1"}, annotations={"nodeagent.dev/finish-after-seconds": "5",
                                                                "nodeagent.dev/exit-code": "1"})
    p2 = claim_pod("p2", rig.clock, {"gpu": "c2"})
    rig.claims.put(claim_doc("c1", reserved=[p1]))
    rig.claims.put(claim_doc("c2", reserved=[p2]))
    await rig.pods.apply(p1)
    await rig.pods.apply(p2)
    await settle()
    await rig.clock.wait_for_sleepers(2)  # the health loop and the claim's timeout
    rig.clock.advance(5.0)
    await settle()
    assert phase(rig, "p1") == FAILED
    assert rig.drivers.unprepared_names() == [(GPU, ["c1"])]
    await rig.pods.evict(p2, "Evicted", "node is low on memory")
    assert rig.drivers.unprepared_names()[-1] == (GPU, ["c2"])
    # Still known: the records stay (for health) but no devices are served to pod-resources.
    assert rig.dra.pod_record(p1.uid) is not None
    assert rig.dra.container_dynamic_resources(p1, "c0") == []


async def test_unprepare_error_retried_by_loop(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim"})
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod]))
    await rig.pods.apply(pod)
    rig.drivers.unprepare_errors["gpu-claim"] = "still in use"
    await rig.pods.delete("default", "p")
    assert rig.dra.claim("uid-gpu-claim") is not None
    assert rig.metrics.get_sample_value("dra_operations_duration_seconds_count",
                                        {"operation_name": "UnprepareResources", "is_error": "true"}) == 1.0
    del rig.drivers.unprepare_errors["gpu-claim"]
    for _ in range(60):
        await rig.clock.wait_for_sleepers()
        rig.clock.advance(1.0)
        await settle(5)
    assert rig.dra.claim("uid-gpu-claim") is None
    assert len(rig.drivers.unprepare_calls) == 2


async def test_unprepare_waits_for_driver_to_come_back(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim"})
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod]))
    await rig.pods.apply(pod)
    await rig.drivers.set_registered(GPU, False)
    await rig.pods.delete("default", "p")
    assert rig.drivers.unprepare_calls == []
    await rig.drivers.set_registered(GPU, True)  # registration triggers the retry
    assert rig.drivers.unprepared_names() == [(GPU, ["gpu-claim"])]
    assert rig.dra.claims() == {}


async def test_provider_output(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": "gpu-claim", "nic": "nic-claim"},
                    containers={"main": [("gpu", "big")], "side": [("nic", "")]})
    rig.claims.put(claim_doc("gpu-claim", reserved=[pod],
                             results=[("big/large", GPU, "pool-a", "gpu-claim-dev"),
                                      ("small", GPU, "pool-a", "other")]))
    rig.claims.put(claim_doc("nic-claim", reserved=[pod], results=[("nic", NET, "host", "eth1")]))
    await rig.pods.apply(pod)
    main = rig.dra.container_dynamic_resources(pod, "main")
    assert [(i.claim_name, i.claim_namespace) for i in main] == [("gpu-claim", "default")]
    dev = main[0].devices[0]
    assert (dev.driver_name, dev.pool_name, dev.device_name, dev.cdi_devices) == (
        GPU, "pool-a", "gpu-claim-dev", (f"{GPU}/gpu=gpu-claim",))
    side = rig.dra.container_dynamic_resources(pod, "side")
    assert [i.claim_name for i in side] == ["nic-claim"]
    assert side[0].devices[0].driver_name == NET
    assert rig.dra.container_dynamic_resources(pod, "other") == []
    lines = rig.dra.describe_lines(pod)
    assert lines[0] == "gpu: ResourceClaim default/gpu-claim (prepared)"
    assert f"cdi={GPU}/gpu=gpu-claim" in lines[1]


async def test_template_claim_not_generated_yet(rig: Rig) -> None:
    pod = claim_pod("p", rig.clock, {"gpu": ""}, uid="uid-t")
    await rig.pods.apply(pod)
    assert message(rig, "p") == 'pod "default/p": ResourceClaim not created yet'
    rig.claims.generated[("uid-t", "gpu")] = "p-gpu-x7k2"
    # a claim from the template must be the pod's (resourceclaim.IsForPod), as on the kubelet
    rig.claims.put(claim_doc("p-gpu-x7k2", reserved=[pod]))
    await rig.pods.retry_pending()
    assert message(rig, "p") == "ResourceClaim default/p-gpu-x7k2 was not created for Pod default/p (Pod is not owner)"
    rig.claims.put(claim_doc("p-gpu-x7k2", reserved=[pod], owner=pod))
    await rig.pods.retry_pending()
    assert phase(rig, "p") == RUNNING


class CountingDB(StateDB):
    """The state database, counting its commits (how many durable writes a prepare costs)."""

    commits = 0

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Txn]:
        with super().transaction() as txn:
            yield txn
        self.commits += 1


async def test_one_driver_prepare_costs_two_commits(fake_clock: FakeClock) -> None:
    """issue 10: the pod joins its claims durably before the driver call; the driver's answer and
    the pod's record then commit together (they were two commits), before the pod is ready."""
    db = CountingDB(":memory:")
    rig = build(fake_clock, db, FakeRegistry(GPU, NET), FakeClaims())
    try:
        pod = claim_pod("p", rig.clock, {"a": "claim-a"})
        rig.claims.put(claim_doc("claim-a", reserved=[pod]))
        before = db.commits
        result = await rig.dra.prepare(pod)
        assert result.ready
        assert db.commits - before == 2
        assert (db.get(PODS_BUCKET, pod.uid) or {})["prepared"] is True
        assert dict(db.items(CLAIMS_BUCKET))["uid-claim-a"]["prepared"][GPU][0]["cdi"] == [f"{GPU}/gpu=claim-a"]
        before = db.commits
        assert (await rig.dra.prepare(pod)).ready  # prepared already: no driver call, one commit at most
        assert db.commits - before <= 1
        assert rig.drivers.prepared_names() == [(GPU, ["claim-a"])]
    finally:
        await rig.close()
