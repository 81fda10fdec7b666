"""The registered-devices checkpoint under a flapping plugin (devices/registered.py), on a FakeClock:
a change of the resources is durable before `changed` returns, changes of healthy ids are written
at most once per interval (the latest state), and `close` writes what is still pending."""

from __future__ import annotations

import asyncio

from nodeagent.devices.checkpoint import Checkpoint
from nodeagent.devices.model import Device, PluginOptions
from nodeagent.devices.registered import RegisteredWriter
from nodeagent.devices.state import DeviceState
from nodeagent.state.db import StateDB
from nodeagent.util.clock import FakeClock

GPU = "example.com/gpu"
NIC = "example.com/nic"


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def _devices(n: int, unhealthy: int = -1) -> list[Device]:
    return [Device(f"gpu-{i}", "Unhealthy" if i == unhealthy else "Healthy", (0,)) for i in range(n)]


async def test_flapping_health_is_written_once_per_interval_with_the_latest_state() -> None:
    clock, state = FakeClock(), DeviceState()
    ckpt = Checkpoint(StateDB.memory())
    writer = RegisteredWriter(ckpt, state, clock, interval=1.0)
    state.register(GPU, "/p.sock", PluginOptions())
    state.update_devices(GPU, _devices(4))
    await writer.changed()
    assert writer.writes == 1  # a new resource: written at once
    assert ckpt.load().registered == {GPU: ("gpu-0", "gpu-1", "gpu-2", "gpu-3")}
    for flip in range(1000):
        state.update_devices(GPU, _devices(4, unhealthy=0 if flip % 2 == 0 else 1))
        await writer.changed()
    await _settle()
    assert writer.writes == 1  # none of the 1,000 flips within the interval written yet
    await clock.wait_for_sleepers()
    clock.advance(1.0)
    await _settle()
    assert writer.writes == 2  # one write for all of them, with the last snapshot (gpu-1 unhealthy)
    assert ckpt.load().registered == {GPU: ("gpu-0", "gpu-2", "gpu-3")}
    clock.advance(5.0)
    await _settle()
    assert writer.writes == 2  # nothing pending, nothing written
    await writer.changed(devices=False)  # an identical snapshot: the same resources, nothing to write
    await _settle()
    clock.advance(5.0)
    await _settle()
    assert writer.writes == 2


async def test_a_new_resource_is_durable_before_changed_returns_even_within_the_interval() -> None:
    clock, state = FakeClock(), DeviceState()
    ckpt = Checkpoint(StateDB.memory())
    writer = RegisteredWriter(ckpt, state, clock, interval=1.0)
    state.register(GPU, "/p.sock", PluginOptions())
    await writer.changed()
    state.update_devices(GPU, _devices(2))
    await writer.changed()  # ids only: waits for the interval
    state.register(NIC, "/n.sock", PluginOptions())
    await writer.changed()
    assert set(ckpt.load().registered) == {GPU, NIC}
    assert ckpt.load().registered[GPU] == ("gpu-0", "gpu-1")  # the write took the latest ids too


async def test_close_writes_what_is_pending_and_large_documents_are_written_off_the_loop() -> None:
    clock, state = FakeClock(), DeviceState()
    ckpt = Checkpoint(StateDB.memory())
    writer = RegisteredWriter(ckpt, state, clock, interval=1.0, offload_min=10)
    state.register(GPU, "/p.sock", PluginOptions())
    state.update_devices(GPU, _devices(50))
    await writer.changed()
    state.update_devices(GPU, _devices(50, unhealthy=7))
    await writer.changed()
    assert len(ckpt.load().registered[GPU]) == 50
    await writer.close()
    assert len(ckpt.load().registered[GPU]) == 49
    assert "gpu-7" not in ckpt.load().registered[GPU]
