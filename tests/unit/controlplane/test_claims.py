"""The claim controller: claims generated from templates, owned and recorded; released, deallocated
and deleted when their pod ends or goes away."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.controllers.claims import generate_name
from nodeagent.errors import ValidationError
from nodeagent.objects.resource import validation as resource
from nodeagent.store import ObjectStore, builtin_kinds
from nodeagent.util.clock import FakeClock
from tests.unit.controlplane.test_scheduler_support import (
    GATES,
    GPU,
    Cluster,
    claim,
    claim_spec,
    device,
    device_class,
    exact,
    gpu_cluster,
    node,
    pod,
    resource_slice,
    template,
)


async def test_template_claim_is_generated_owned_and_recorded() -> None:
    c = gpu_cluster()
    c.add(pod("p", templates={"gpu": "t"}))
    c.run()
    p = c.get("Pod", "p")
    [status] = p["status"]["resourceClaimStatuses"]
    assert status["name"] == "gpu" and status["resourceClaimName"].startswith("p-gpu-")
    cl = c.get("ResourceClaim", status["resourceClaimName"])
    assert cl["metadata"]["annotations"] == {"resource.kubernetes.io/pod-claim-name": "gpu"}
    [owner] = cl["metadata"]["ownerReferences"]
    # handleClaim's reference: controller, no blockOwnerDeletion
    assert owner == {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": p["metadata"]["uid"], "controller": True}
    # allocated by the scheduler, which adds the delete protection (in a normal update before the status)
    assert cl["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert cl["spec"] == c.get("ResourceClaimTemplate", "t")["spec"]["spec"]
    assert c.registry.get_sample_value("resource_controller_create_total") == 1.0
    assert c.registry.get_sample_value("resource_controller_create_failures_total") == 0.0


def test_generate_name_is_cut_like_upstream() -> None:
    assert generate_name("p", "gpu") == "p-gpu-"
    assert generate_name("x" * 60, "gpu") == "x" * 57 + "-"


async def test_finished_pod_releases_and_generated_claim_is_deleted() -> None:
    c = gpu_cluster(devices=1)
    c.add(pod("p", templates={"gpu": "t"}), pod("q", templates={"gpu": "t"}))
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "n1"
    assert "nodeName" not in c.get("Pod", "q")["spec"]  # the only device is taken
    name = c.pod_claim("p")["metadata"]["name"]
    p = c.get("Pod", "p")
    p["status"]["phase"] = "Succeeded"
    c.store.update_status(p)
    c.run()
    assert c.store.try_get("ResourceClaim", "default", name) is None
    assert c.get("Pod", "q")["spec"]["nodeName"] == "n1"  # retried when the device was freed


async def test_deleted_pod_releases_shared_claim_and_deallocates_it() -> None:
    c = gpu_cluster()
    c.add(claim("shared", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p", claims={"gpu": "shared"}), pod("q", claims={"gpu": "shared"}))
    c.run()
    assert [r["name"] for r in c.get("ResourceClaim", "shared")["status"]["reservedFor"]] == ["p", "q"]
    c.delete("Pod", "p")
    c.run()
    assert [r["name"] for r in c.get("ResourceClaim", "shared")["status"]["reservedFor"]] == ["q"]
    assert c.get("ResourceClaim", "shared")["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    c.delete("Pod", "q")
    c.run()
    shared = c.get("ResourceClaim", "shared")
    assert shared.get("status", {}) == {}  # deallocated, not deleted (not generated)
    assert "finalizers" not in shared["metadata"]  # and unprotected


async def test_a_claim_deleted_in_use_waits_for_its_last_consumer() -> None:
    """The delete protection: deleting a claim a pod uses marks it deleted; it goes when the pod is
    gone (deallocated and unprotected by the claim controller)."""
    c = gpu_cluster()
    c.add(claim("held", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p", claims={"gpu": "held"}))
    c.run()
    c.delete("ResourceClaim", "held")
    c.run()
    held = c.get("ResourceClaim", "held")
    assert held["metadata"].get("deletionTimestamp") and held["status"]["reservedFor"]
    c.delete("Pod", "p")
    c.run()
    assert c.store.try_get("ResourceClaim", "default", "held") is None


async def test_standalone_claim_with_device_status_is_deallocated() -> None:
    """The driver wrote status.devices; the controller's write clearing the allocation drops them
    with it (the status strategy's dropDeallocatedStatusDevices) instead of being refused."""
    c = gpu_cluster()
    c.add(claim("shared", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p", claims={"gpu": "shared"}))
    c.run()
    cl = c.get("ResourceClaim", "shared")
    [result] = cl["status"]["allocation"]["devices"]["results"]
    cl["status"]["devices"] = [{"driver": result["driver"], "pool": result["pool"], "device": result["device"],
                                "conditions": [{"type": "Ready", "status": "True", "reason": "Prepared",
                                                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]
    c.store.update_status(cl)  # as a driver on the kubeletplugin helper does
    c.delete("Pod", "p")
    c.run()
    assert c.get("ResourceClaim", "shared").get("status", {}) == {}


async def test_a_failed_claim_sync_is_retried_after_a_backoff() -> None:
    """A refused write is not dropped: the claim is synced again after the workqueue's first
    backoff step (5ms), as upstream's controller returns the error to its rate-limited queue."""
    hooks = resource.hooks(GATES)
    admit_status = hooks["ResourceClaim"]["default_status"]
    refusals = [ValidationError("status", "Invalid value: refused once")]

    def refuse_once(new: dict[str, Any], old: dict[str, Any]) -> Any:
        if refusals and not (new.get("status") or {}).get("reservedFor"):
            raise refusals.pop()
        return admit_status(new, old)

    hooks["ResourceClaim"]["default_status"] = refuse_once
    c = Cluster(store=ObjectStore(":memory:", builtin_kinds().with_hooks(hooks), FakeClock()))
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("n1", GPU, [device("g0")]), claim("shared", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p", claims={"gpu": "shared"}))
    c.run()
    assert c.get("ResourceClaim", "shared")["status"]["reservedFor"]
    c.delete("Pod", "p")
    c.run()
    assert c.get("ResourceClaim", "shared")["status"]["allocation"] and not refusals  # refused once
    due = c.claims.next_retry()
    assert due is not None and due - c.clock.monotonic() == pytest.approx(0.005)
    c.clock.advance(0.005)
    c.run()
    assert c.get("ResourceClaim", "shared").get("status", {}) == {} and c.claims.next_retry() is None


async def test_deleted_pod_takes_generated_claims_with_it_and_leaves_events_to_the_ttl() -> None:
    c = gpu_cluster(devices=0)
    c.add(pod("p", templates={"gpu": "t"}))
    c.run()
    assert c.store.list("Event") and c.store.list("ResourceClaim")
    c.delete("Pod", "p")
    c.run()
    # upstream's events carry no ownerReferences: they outlive the pod until the event TTL
    assert c.store.list("ResourceClaim") == [] and c.store.list("Event")
    c.clock.advance(c.store.ttl("Event"))
    c.store.expire()
    assert c.store.list("Event") == []


async def test_missing_template_is_reported() -> None:
    c = gpu_cluster()
    c.add(pod("p", templates={"gpu": "nope"}))
    c.run()
    p = c.get("Pod", "p")
    msg = p["status"]["conditions"][0]["message"]
    assert msg == 'claim gpu: cannot be created: PodResourceClaim gpu: resourceclaimtemplate "nope" not found'
    [event] = [e for e in c.store.list("Event") if e["reason"] == "FailedResourceClaimCreation"]
    assert event["involvedObject"]["name"] == "p"
    # the template appears: a pod update brings the pod back to the controller and the scheduler
    c.add(template("nope", claim_spec(exact("gpu", "gpu"))))
    p = c.get("Pod", "p")
    p["metadata"]["labels"] = {"retry": "1"}
    c.store.update(p)
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "n1"


async def test_pods_synced_together_fail_alone() -> None:
    """Pods queued together share one commit; a pod whose status write is refused is rolled back
    alone (its generated claim too, and the controller forgets it), the others get their claims."""

    def refuse_bad(new: dict[str, Any], old: dict[str, Any]) -> None:
        if new["metadata"]["name"] == "bad" and (new.get("status") or {}).get("resourceClaimStatuses"):
            raise ValidationError("status.resourceClaimStatuses", "Forbidden: refused by the test's admission")

    kinds = builtin_kinds().with_hooks({**resource.hooks(GATES), "Pod": {"validate_update": refuse_bad}})
    c = Cluster(store=ObjectStore(":memory:", kinds, FakeClock()))
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("n1", GPU, [device(f"g{i}") for i in range(4)]),
          template("t", claim_spec(exact("gpu", "gpu"))))
    c.add(pod("p1", templates={"gpu": "t"}), pod("bad", templates={"gpu": "t"}), pod("p2", templates={"gpu": "t"}))
    c._feed()
    c.claims.sync_pending()
    claims = sorted(cl["metadata"]["name"] for cl in c.store.list("ResourceClaim"))
    assert [n.split("-gpu-")[0] for n in claims] == ["p1", "p2"]
    assert sorted(k[1] for k in c.claims.claims) == claims  # the rolled-back claim is not remembered
    assert "resourceClaimStatuses" not in (c.get("Pod", "bad").get("status") or {})
    c.run()
    assert c.get("Pod", "p1")["spec"]["nodeName"] == "n1" and c.get("Pod", "p2")["spec"]["nodeName"] == "n1"
