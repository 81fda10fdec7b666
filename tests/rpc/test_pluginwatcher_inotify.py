"""plugins_registry watched with inotify: a DRA driver's registration socket is seen at once,
in a subdirectory created after the start too, and its removal as well; the clock (the
resync period) never moves here, so only the directory watch can have done it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.dra.registry import DRARegistry
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.watcher import RESCAN_EVERY, RESYNC_PERIOD, PluginWatcher
from nodeagent.util.clock import FakeClock
from nodeagent.util.fswatch import FakeWatch, InotifyWatch
from tests.rpc.dra_fake import FakeDRADriver
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

DRIVER = "gpu.example.com"
BOUND = 15.0  # only a bound on waiting: the fake clock never moves, so no resync can be what saw it (5 s
# was missed once in a fresh-clone CI run at -n auto on 2 cores); bench/bench_dir_watch.py measures the latency


@pytest.mark.parametrize("sub", ["", "later/deeper"])
async def test_registration_socket_seen_without_a_resync(
    short_dir: Path, fake_clock: FakeClock, registry: CollectorRegistry, sub: str
) -> None:
    reg_dir = short_dir / "plugins_registry"
    dra = DRARegistry(fake_clock, Instruments(registry))
    watcher = PluginWatcher(reg_dir, {"DRAPlugin": dra}, fake_clock, registry=registry,
                            watch=InotifyWatch(reg_dir, recursive=True), period=RESYNC_PERIOD)
    await watcher.start()
    d = FakeDRADriver(DRIVER, reg_dir / sub / "drv-reg.sock", short_dir / "dra.sock")
    try:
        await asyncio.sleep(0.05)  # the watch is set up by the loop's first wait
        if sub:
            (reg_dir / sub).mkdir(parents=True)
            await asyncio.sleep(0.05)
        await d.start()
        await eventually(lambda: dra.is_registered(DRIVER), timeout=BOUND, what="registered")
        await d.stop_registration()
        await eventually(lambda: not dra.is_registered(DRIVER), timeout=BOUND, what="deregistered")
    finally:
        await watcher.stop()
        await dra.close()
        await d.stop()


async def test_with_a_watch_that_missed_the_event_the_full_rescan_finds_the_socket(
    short_dir: Path, fake_clock: FakeClock, registry: CollectorRegistry
) -> None:
    """The passes between changes only plan; every RESCAN_EVERY-th pass scans the directory, so a
    socket whose event was lost (an inotify queue overflow) is found within that many periods."""
    reg_dir = short_dir / "plugins_registry"
    dra = DRARegistry(fake_clock, Instruments(registry))
    silent = FakeWatch()  # reports the start only, never the socket
    watcher = PluginWatcher(reg_dir, {"DRAPlugin": dra}, fake_clock, registry=registry, watch=silent,
                            period=RESYNC_PERIOD)
    await watcher.start()
    d = FakeDRADriver(DRIVER, reg_dir / "drv-reg.sock", short_dir / "dra.sock")
    try:
        await d.start()
        for _ in range(RESCAN_EVERY - 1):
            await fake_clock.wait_for_sleepers()
            fake_clock.advance(RESYNC_PERIOD)
            for _ in range(20):
                await asyncio.sleep(0)
        await asyncio.sleep(0.1)
        assert not dra.is_registered(DRIVER)  # planned from the scan of the start: no socket
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(RESYNC_PERIOD)
        await eventually(lambda: dra.is_registered(DRIVER), timeout=BOUND, what="registered by the rescan")
    finally:
        await watcher.stop()
        await dra.close()
        await d.stop()
