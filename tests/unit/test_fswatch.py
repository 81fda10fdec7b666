"""The DirWatch port: inotify changes wake the owner at once, the clock gives the resync."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from nodeagent.clock import FakeClock
from nodeagent.fswatch import FakeWatch, InotifyWatch, wait_change

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


async def test_wait_change_returns_on_the_resync_period(fake_clock: FakeClock) -> None:
    waiter = asyncio.ensure_future(wait_change(FakeWatch(), fake_clock, 20.0))
    await _settle()
    fake_clock.advance(19.9)
    await _settle()
    assert not waiter.done()
    fake_clock.advance(0.1)
    assert await asyncio.wait_for(waiter, BOUND) is False
    # without a watch, the period alone
    waiter = asyncio.ensure_future(wait_change(None, fake_clock, 1.0))
    await _settle()
    fake_clock.advance(1.0)
    assert await asyncio.wait_for(waiter, BOUND) is False
