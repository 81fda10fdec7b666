"""PodWorkers (the kubelet's pod workers): coalesced syncs, ordered terminations, cancellation, close."""

from __future__ import annotations

import asyncio

from nodeagent.pods.workers import PodWorkers


class Script:
    """A sync that records each pass and waits for a gate per pass."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def sync(self, uid: str) -> None:
        self.log.append(f"sync-start {uid}")
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.log.append(f"sync-cancelled {uid}")
            raise
        self.log.append(f"sync-end {uid}")

    def terminate(self, uid: str, tag: str = "") -> object:
        async def work() -> None:
            self.log.append(f"terminate {uid}{tag}")
        return work


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def test_updates_during_a_pass_coalesce_into_one_more() -> None:
    script = Script()
    workers = PodWorkers(script.sync)
    script.gate.clear()
    first = workers.sync("a")
    await settle()
    later = [workers.sync("a") for _ in range(3)]
    await settle()
    assert script.log == ["sync-start a"] and not first.done()
    script.gate.set()
    await asyncio.gather(first, *later)
    assert script.log == ["sync-start a", "sync-end a", "sync-start a", "sync-end a"]
    assert not workers.busy("a")  # no task is left once the pod has no work


async def test_pods_sync_concurrently() -> None:
    gate = asyncio.Event()
    done: list[str] = []

    async def sync(uid: str) -> None:
        if uid == "slow":
            await gate.wait()  # a hanging prepare
        done.append(uid)

    workers = PodWorkers(sync)
    hanging = workers.sync("slow")
    await settle()
    await asyncio.wait_for(workers.sync("b"), 1)
    assert done == ["b"] and not hanging.done() and workers.busy("slow")
    gate.set()
    await hanging
    assert done == ["b", "slow"]


async def test_termination_cancels_the_sync_in_flight_and_runs_after_it() -> None:
    script = Script()
    workers = PodWorkers(script.sync)
    script.gate.clear()
    syncing = workers.sync("a")
    await settle()
    gone = workers.terminate("a", script.terminate("a"))  # type: ignore[arg-type]
    await asyncio.wait_for(gone, 1)
    assert script.log == ["sync-start a", "sync-cancelled a", "terminate a"]
    assert syncing.done() and not syncing.cancelled()  # answered: the pod is terminated
    assert not workers.busy("a")


async def test_terminations_run_in_order_and_syncs_stop() -> None:
    script = Script()
    workers = PodWorkers(script.sync)

    gate = asyncio.Event()

    async def evict() -> None:
        script.log.append("evict a")
        await gate.wait()

    first = workers.terminate("a", evict)
    await settle()
    second = workers.terminate("a", script.terminate("a", " (delete)"))  # type: ignore[arg-type]
    late_sync = workers.sync("a")
    await settle()
    assert script.log == ["evict a"]
    gate.set()
    await asyncio.gather(first, second, late_sync)
    assert script.log == ["evict a", "terminate a (delete)"]  # no sync after a termination was asked


async def test_a_failing_pass_is_logged_and_the_worker_goes_on() -> None:
    calls: list[int] = []

    async def sync(uid: str) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")

    workers = PodWorkers(sync)
    await workers.sync("a")
    await workers.sync("a")
    assert len(calls) == 2


async def test_close_cancels_workers_and_their_waiters() -> None:
    script = Script()
    workers = PodWorkers(script.sync)
    script.gate.clear()
    pending = workers.sync("a")
    await settle()
    await workers.close()
    assert "sync-cancelled a" in script.log and pending.cancelled()
    assert not workers.busy("a")
