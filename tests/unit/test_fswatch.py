"""The DirWatch port: inotify changes wake the owner at once, the clock gives the resync."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from pathlib import Path

from nodeagent.util.clock import FakeClock
from nodeagent.util.fswatch import DirWatch, FakeWatch, InotifyHub, InotifyWatch, wait_change

BOUND = 5.0  # generous on a loaded machine; inotify answers in milliseconds, the resync here never comes


async def _changed(watch: InotifyWatch) -> None:
    await asyncio.wait_for(watch.changed(), BOUND)


async def test_create_write_and_delete_wake_the_watch(tmp_path: Path) -> None:
    watch = InotifyWatch(tmp_path)
    try:
        await _changed(watch)  # the watch (re)starting counts as a change
        (tmp_path / "pod.yaml").write_text("x")
        await _changed(watch)
        (tmp_path / "pod.yaml").unlink()
        await _changed(watch)
    finally:
        watch.close()


async def test_recursive_watch_sees_a_socket_in_a_new_subdirectory(tmp_path: Path) -> None:
    watch = InotifyWatch(tmp_path, recursive=True)
    sock = socket.socket(socket.AF_UNIX)
    try:
        await _changed(watch)
        (tmp_path / "sub").mkdir()
        await _changed(watch)
        await asyncio.sleep(0.05)  # let the reader add the new directory's watch
        while True:  # drain what the mkdir produced
            try:
                await asyncio.wait_for(watch.changed(), 0.05)
            except TimeoutError:
                break
        sock.bind(str(tmp_path / "sub" / "drv-reg.sock"))
        await _changed(watch)
    finally:
        sock.close()
        watch.close()


async def test_missing_directory_is_watched_once_it_appears(tmp_path: Path) -> None:
    folder = tmp_path / "later"
    watch = InotifyWatch(folder, retry=0.05)
    try:
        waiter = asyncio.ensure_future(watch.changed())
        await asyncio.sleep(0.1)
        assert not waiter.done()
        folder.mkdir()
        await asyncio.wait_for(waiter, BOUND)
        (folder / "a.yaml").write_text("x")
        await _changed(watch)
    finally:
        watch.close()


async def _settle() -> None:
    """Let the waiter's tasks start (the clock sleeper registers on its first step)."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_wait_change_returns_on_a_change_without_the_clock(fake_clock: FakeClock) -> None:
    watch = FakeWatch()
    waiter = asyncio.ensure_future(wait_change(watch, fake_clock, 20.0))
    await _settle()
    watch.trigger()
    assert await asyncio.wait_for(waiter, BOUND) is True


async def _times_out_after_20s(watch: DirWatch, fake_clock: FakeClock) -> None:
    """wait_change(watch, 20 s) with no change: still waiting at 19.9 s, False at 20 s."""
    waiter = asyncio.ensure_future(wait_change(watch, fake_clock, 20.0))
    await _settle()
    await fake_clock.wait_for_sleepers()
    fake_clock.advance(19.9)
    await _settle()
    assert not waiter.done()
    await fake_clock.wait_for_sleepers()
    fake_clock.advance(0.1)
    assert await asyncio.wait_for(waiter, BOUND) is False


async def test_wait_change_returns_on_the_resync_period(fake_clock: FakeClock) -> None:
    await _times_out_after_20s(FakeWatch(), fake_clock)
    # without a watch, the period alone
    waiter = asyncio.ensure_future(wait_change(None, fake_clock, 1.0))
    await _settle()
    await fake_clock.wait_for_sleepers()
    fake_clock.advance(1.0)
    assert await asyncio.wait_for(waiter, BOUND) is False


async def test_many_watches_share_one_inotify_instance(tmp_path: Path) -> None:
    """200 directories (more than the kernel's default 128 instances per user) through one hub:
    every watch sees its own change, and the process holds one inotify instance for all of them."""
    hub = InotifyHub()
    dirs = [tmp_path / f"d{i}" for i in range(200)]
    for d in dirs:
        d.mkdir()
    watches = [InotifyWatch(d, hub=hub) for d in dirs]
    try:
        for w in watches:  # each start counts as a change
            await asyncio.wait_for(w.changed(), 5)
        assert _inotify_fds() == 1
        (dirs[137] / "x.sock").write_text("")
        await asyncio.wait_for(watches[137].changed(), 5)
        quiet = asyncio.ensure_future(watches[3].changed())
        await asyncio.sleep(0.1)
        assert not quiet.done()  # another directory's event is not this watch's
        quiet.cancel()
    finally:
        for w in watches:
            w.close()
        hub.close()
    assert _inotify_fds() == 0


def _inotify_fds() -> int:
    fd_dir = Path("/proc/self/fd")
    count = 0
    for fd in fd_dir.iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd) == "anon_inode:inotify":
                count += 1
    return count


async def test_wait_change_on_inotify_watch_change_or_period(tmp_path: Path, fake_clock: FakeClock) -> None:
    """InotifyWatch's own path (changed_within): a change wakes it at once, else the clock's period;
    a change while nobody waited is reported by the next wait; a cancelled wait leaves no waiter."""
    watch = InotifyWatch(tmp_path)
    try:
        assert await asyncio.wait_for(wait_change(watch, fake_clock, 20.0), BOUND) is True  # the (re)start
        await _times_out_after_20s(watch, fake_clock)
        waiter = asyncio.ensure_future(wait_change(watch, fake_clock, 20.0))
        await _settle()
        (tmp_path / "plugin.sock").write_text("x")
        assert await asyncio.wait_for(waiter, BOUND) is True
        (tmp_path / "other").write_text("x")  # nobody waits: kept for the next wait
        for _ in range(100):
            if watch._dirty:
                break
            await asyncio.sleep(0.01)
        assert await asyncio.wait_for(wait_change(watch, fake_clock, 20.0), BOUND) is True
        waiter = asyncio.ensure_future(wait_change(watch, fake_clock, 20.0))
        await _settle()
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
        assert watch._waiters == []
    finally:
        watch.close()
