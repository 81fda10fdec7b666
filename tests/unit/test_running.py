"""Running: a stop that runs out of time says where it hung and leaves no plugin process behind."""

from __future__ import annotations

import asyncio
import contextlib

from nodeagent.config import PluginSpec
from nodeagent.supervisor import PluginSupervisor
from nodeagent.util.clock import RealClock
from nodeagent.wiring.running import Running


class Hangs:
    """A closer that never ends (a peer that does not answer)."""

    async def close(self) -> None:
        await asyncio.Event().wait()


async def test_a_stop_that_times_out_names_the_closer_and_the_tasks_left() -> None:
    running = Running()
    running.closers.append(Hangs().close)
    running.spawn(asyncio.sleep(0), "done-already")
    await asyncio.sleep(0)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(running.stop(), 0.05)
    assert running.waiting_for() == "running the closer Hangs.close; tasks still running: none"


async def test_waiting_for_lists_the_tasks_that_outlive_their_cancel() -> None:
    running = Running()
    release = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await release.wait()  # a task that finishes its work before it ends
            raise

    running.spawn(stubborn(), "pod-worker-1")
    await asyncio.sleep(0)
    stop = asyncio.ensure_future(running.stop())
    await asyncio.sleep(0.01)
    assert running.waiting_for() == "cancelling background tasks; tasks still running: pod-worker-1"
    release.set()
    await stop
    assert running.waiting_for() == "not stopping; tasks still running: none"


async def test_abort_kills_the_plugins_a_timed_out_stop_left() -> None:
    supervisor = PluginSupervisor((PluginSpec("sleeper", ("sleep", "60"), restart=False),), env={}, clock=RealClock())
    supervisor.start()
    for _ in range(200):
        if supervisor.pids():
            break
        await asyncio.sleep(0.01)
    assert list(supervisor.pids()) == ["sleeper"]
    running = Running()
    running.aborters.append(supervisor.kill)
    running.aborters.append(lambda: (_ for _ in ()).throw(RuntimeError("an aborter failing is logged")))
    running.abort()
    for _ in range(500):  # the child is reaped by asyncio's child watcher
        if not supervisor.pids():
            break
        await asyncio.sleep(0.01)
    assert supervisor.pids() == {}
    await asyncio.wait_for(supervisor.stop(grace=30), 5)  # nothing left to wait for
