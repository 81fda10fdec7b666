"""plugins_registry watched with inotify and woken by a shared ticker (the full virtual nodes):
a registration socket is seen at once without any tick, and the periodic passes come from the
ticker, one per period (every n-th tick), not from a timer of the watcher's own."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from nodeagent.dra.registry import DRARegistry
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.watcher import RESYNC_PERIOD, PluginWatcher
from nodeagent.util.clock import FakeClock
from nodeagent.util.fswatch import InotifyWatch
from nodeagent.util.ticker import Ticker
from tests.rpc.dra_fake import FakeDRADriver
from tests.waiting import eventually

pytestmark = pytest.mark.rpc

DRIVER = "gpu.example.com"


class CountingWatcher(PluginWatcher):
    passes = 0

    async def sync(self, *, rescan: bool = True) -> None:
        self.passes += 1
        await super().sync(rescan=rescan)


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_ticker_wakes_the_passes_and_inotify_the_registration(
    short_dir: Path, fake_clock: FakeClock, registry: CollectorRegistry
) -> None:
    reg_dir = short_dir / "plugins_registry"
    dra = DRARegistry(fake_clock, Instruments(registry))
    ticker = Ticker(fake_clock, RESYNC_PERIOD / 2)
    watcher = CountingWatcher(reg_dir, {"DRAPlugin": dra}, fake_clock, registry=registry, ticker=ticker,
                              watch=InotifyWatch(reg_dir, recursive=True), period=RESYNC_PERIOD)
    await watcher.start()
    d = FakeDRADriver(DRIVER, reg_dir / "drv-reg.sock", short_dir / "dra.sock")
    try:
        await asyncio.sleep(0.05)  # the watch is set up by the loop's first wait
        assert len(ticker) == 1
        await d.start()
        await eventually(lambda: dra.is_registered(DRIVER), timeout=5.0, what="registered")
        assert ticker.ticks == 0  # inotify alone
        await asyncio.sleep(0.05)
        before = watcher.passes
        for _ in range(4):  # two periods
            ticker.tick()
            await _settle()
        assert watcher.passes - before == 2
    finally:
        await watcher.stop()
        await dra.close()
        await d.stop()
    assert len(ticker) == 0
