"""DRAManager.prepare_now: a pod without claims is ready without a driver call; one with claims is not.

The pod manager uses it to make a claimless pod Running in its admission's one commit; a pod
with claims (even unallocated ones) goes through the worker's prepare as before.
"""

from __future__ import annotations

from nodeagent.objects.pod.model import PENDING, RUNNING
from nodeagent.pods.ports import START_READY
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock
from tests.unit.pods.fakes import make_pod

from .fakes import FakeClaims, FakeRegistry, build, claim_doc, claim_pod, settle

GPU = "gpu.example.com"


async def test_prepare_now(fake_clock: FakeClock) -> None:
    rig = build(fake_clock, StateDB.memory(), FakeRegistry(GPU), FakeClaims())
    try:
        plain = make_pod("plain", fake_clock)
        assert rig.dra.prepare_now(plain) == START_READY
        with_claim = claim_pod("p", fake_clock, {"a": "claim-a"})
        assert rig.dra.prepare_now(with_claim) is None
        from_template = claim_pod("t", fake_clock, {"a": ""})  # not generated yet
        assert rig.dra.prepare_now(from_template) is None
    finally:
        await rig.close()


async def test_claimless_pod_runs_at_once_claim_pod_after_prepare(fake_clock: FakeClock) -> None:
    rig = build(fake_clock, StateDB.memory(), FakeRegistry(GPU), FakeClaims())
    await rig.dra.start()
    try:
        plain = make_pod("plain", fake_clock)
        await rig.pods.apply(plain, wait=False)
        assert rig.pods.status(plain.uid).phase == RUNNING  # no worker pass needed
        pod = claim_pod("p", fake_clock, {"a": "claim-a"})
        rig.claims.put(claim_doc("claim-a", reserved=[pod]))
        await rig.pods.apply(pod, wait=False)
        assert rig.pods.status(pod.uid).phase == PENDING  # its prepare runs in its worker
        await settle()
        assert rig.pods.status(pod.uid).phase == RUNNING
        assert rig.drivers.prepared_names() == [(GPU, ["claim-a"])]
    finally:
        await rig.close()
