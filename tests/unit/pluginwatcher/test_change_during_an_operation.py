"""A socket removed while its registration runs: the pass that saw the removal could not act (the
operation was in flight and the socket not yet in the actual world), so the end of the operation plans
again. Before, only the next periodic pass unregistered it: with a watch and no clock tick, never (a
fresh-clone CI run waited 15 s for it in tests/rpc/test_pluginwatcher_inotify.py)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from nodeagent.pluginwatcher.model import PluginInfo, RegisteredPlugin, SocketFile
from nodeagent.pluginwatcher.watcher import PluginWatcher
from nodeagent.util.clock import FakeClock
from tests.waiting import eventually


class SlowExecutor:
    """Registration waits for `release`; every call is recorded."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls: list[tuple[str, str]] = []

    async def register(self, sock: SocketFile) -> RegisteredPlugin:
        self.calls.append(("register", sock.path))
        await self.release.wait()
        return RegisteredPlugin(sock, PluginInfo("DRAPlugin", "drv", sock.path, ("v1",), sock.path))

    async def unregister(self, plugin: RegisteredPlugin) -> None:
        self.calls.append(("unregister", plugin.path))


async def test_a_socket_removed_while_it_registers_is_unregistered_when_the_registration_ends(
    short_dir: Path, fake_clock: FakeClock
) -> None:
    reg = short_dir / "reg"
    executor = SlowExecutor()
    watcher = PluginWatcher(reg, {}, fake_clock, executor=executor)  # type: ignore[arg-type]
    await watcher.start()
    try:
        path = reg / "drv.sock"
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(path))
            await watcher.sync()
            await eventually(lambda: executor.calls == [("register", str(path))], what="registration started")
        path.unlink()
        await watcher.sync()  # sees the socket gone while its registration still runs: nothing to do yet
        assert executor.calls == [("register", str(path))]
        executor.release.set()
        await eventually(lambda: ("unregister", str(path)) in executor.calls, timeout=5, what="unregistered")
        await watcher.wait_idle()
        assert watcher.registered() == {}
    finally:
        await watcher.stop()
