"""ResourceQuota for devices: charges (firstAvailable charged for its subrequests) and enforcement
when the claim controller creates claims."""

from __future__ import annotations

from typing import Any

from nodeagent.controlplane import quota
from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    Cluster,
    claim_spec,
    device,
    device_class,
    exact,
    first_available,
    node,
    pod,
    resource_slice,
    template,
)

DEV = ".deviceclass.resource.k8s.io/devices"


def test_charge_exact_all_and_first_available() -> None:
    spec = claim_spec(
        exact("a", "gpu", count=2),
        {"name": "b", "exactly": {"deviceClassName": "nic", "allocationMode": "All"}},
        first_available("c", ("big", "big-gpu", 1), ("mid", "mid-gpu", 1), ("small", "small-gpu", 2),
                        ("small1", "small-gpu", 1)),
    )
    assert quota.claim_charge({"spec": spec}) == {
        "count/resourceclaims.resource.k8s.io": 1,
        "gpu" + DEV: 2, "nic" + DEV: 32, "big-gpu" + DEV: 1, "mid-gpu" + DEV: 1, "small-gpu" + DEV: 2,
    }


def test_check_message() -> None:
    q = {"metadata": {"name": "gpus"}, "spec": {"hard": {"gpu" + DEV: "3", "cpu": "2"}}}
    assert quota.check({"gpu" + DEV: 1}, {"gpu" + DEV: 2}, [q]) is None
    assert quota.check({"gpu" + DEV: 2}, {"gpu" + DEV: 2}, [q]) == (
        f"exceeded quota: gpus, requested: gpu{DEV}=2, used: gpu{DEV}=2, limited: gpu{DEV}=3")
    assert quota.status_used(q, {"gpu" + DEV: 2}) == {"hard": {"gpu" + DEV: "3"}, "used": {"gpu" + DEV: "2"}}


def resource_quota(hard: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "devices", "namespace": "default"},
            "spec": {"hard": hard}}


async def test_quota_enforced_at_claim_creation_and_alternatives_charged() -> None:
    c = Cluster()
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'), device_class("other", "false"),
          resource_slice("n1", GPU, [device(f"g{i}") for i in range(4)]),
          # charged 1 gpu + 1 other although only one device is ever allocated
          template("t", claim_spec(first_available("gpu", ("a", "other", 1), ("b", "gpu", 1)))),
          resource_quota({"gpu" + DEV: "2", "other" + DEV: "10"}))
    for i in range(3):
        c.add(pod(f"p{i}", templates={"gpu": "t"}))
    c.run()
    assert [bool(c.get("Pod", f"p{i}")["spec"].get("nodeName")) for i in range(3)] == [True, True, False]
    msg = c.get("Pod", "p2")["status"]["conditions"][0]["message"]
    assert msg == ("claim gpu: cannot be created: PodResourceClaim gpu: resourceclaims.resource.k8s.io is "
                   f"forbidden: exceeded quota: devices, requested: gpu{DEV}=1, used: gpu{DEV}=2, "
                   f"limited: gpu{DEV}=2")
    # status.hard and status.used follow every claim of the namespace
    assert c.get("ResourceQuota", "devices")["status"] == {
        "hard": {"gpu" + DEV: "2", "other" + DEV: "10"}, "used": {"gpu" + DEV: "2", "other" + DEV: "2"}}
    assert (c.registry.get_sample_value("resource_controller_create_failures_total") or 0) >= 1.0
    # the first pod goes away: its claim is deleted by GC and the quota frees up
    c.delete("Pod", "p0")
    c.run()
    assert c.get("Pod", "p2")["spec"]["nodeName"] == "n1"
    assert c.claims.quota_usage("default")["gpu" + DEV] == 2
    c.delete("Pod", "p1")
    c.delete("Pod", "p2")
    c.run()
    assert c.get("ResourceQuota", "devices")["status"]["used"] == {"gpu" + DEV: "0", "other" + DEV: "0"}
