"""FakeClock: a test can wait until the tasks it means to wake sleep, so `advance` never races them."""

from __future__ import annotations

import asyncio

import pytest

from nodeagent.util.clock import FakeClock


async def _ticker(clock: FakeClock, ticks: list[float], period: float) -> None:
    while True:
        await asyncio.sleep(0)  # some work before sleeping: the window a bare advance() races
        await clock.sleep(period)
        ticks.append(clock.monotonic())


async def test_wait_for_sleepers_then_advance_wakes_each_period() -> None:
    clock = FakeClock()
    ticks: list[float] = []
    task = asyncio.ensure_future(_ticker(clock, ticks, 5.0))
    try:
        for n in range(1, 4):
            await clock.wait_for_sleepers(1)
            assert clock.deadlines == [5.0 * n]
            clock.advance(5.0)
        await clock.wait_for_sleepers(1)
        assert ticks == [5.0, 10.0, 15.0]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_an_advance_before_the_task_sleeps_is_lost() -> None:
    """What wait_for_sleepers prevents: the task sleeps a whole period from the advanced time."""
    clock = FakeClock()
    ticks: list[float] = []
    task = asyncio.ensure_future(_ticker(clock, ticks, 5.0))
    try:
        clock.advance(5.0)  # the task has not started yet
        await clock.wait_for_sleepers(1)
        assert ticks == [] and clock.deadlines == [10.0]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_cancelled_sleep_stops_counting_at_once() -> None:
    clock = FakeClock()
    sleeps = [asyncio.ensure_future(clock.sleep(s)) for s in (1.0, 2.0)]
    await clock.wait_for_sleepers(2)
    assert clock.sleepers == 2
    sleeps[0].cancel()
    await asyncio.gather(sleeps[0], return_exceptions=True)
    assert clock.sleepers == 1 and clock.deadlines == [2.0]
    clock.advance(2.0)
    await sleeps[1]
    assert clock.sleepers == 0


async def test_waits_for_as_many_sleepers_as_asked() -> None:
    clock = FakeClock()
    first = asyncio.ensure_future(clock.sleep(1.0))
    waiting = asyncio.ensure_future(clock.wait_for_sleepers(2))
    await clock.wait_for_sleepers(1)
    assert not waiting.done()
    second = asyncio.ensure_future(clock.sleep(1.0))
    await waiting
    clock.advance(1.0)
    await asyncio.gather(first, second)


async def test_no_sleeper_fails_with_the_count_seen() -> None:
    clock = FakeClock()
    with pytest.raises(TimeoutError, match=r"^0 of 1 sleepers on the fake clock after 0.05 s$"):
        await clock.wait_for_sleepers(1, timeout=0.05)


async def test_zero_sleep_yields_without_sleeping() -> None:
    clock = FakeClock()
    await clock.sleep(0)
    assert clock.sleepers == 0 and clock.monotonic() == 0.0
