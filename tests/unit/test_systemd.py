"""sd_notify protocol against a real fake notify socket (path and abstract), watchdog maths and loop."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeagent.systemd import Notifier, watchdog_interval
from nodeagent.util.clock import FakeClock


class FakeSystemd:
    """The receiving side of NOTIFY_SOCKET: a bound AF_UNIX datagram socket."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        bind_to = "\0" + address[1:] if address.startswith("@") else address
        self.sock.bind(bind_to)
        self.sock.settimeout(2.0)

    def receive(self) -> bytes:
        return self.sock.recv(4096)

    def pending(self) -> list[bytes]:
        out: list[bytes] = []
        self.sock.setblocking(False)
        try:
            while True:
                out.append(self.sock.recv(4096))
        except BlockingIOError:
            return out
        finally:
            self.sock.settimeout(2.0)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def path_systemd(short_dir: Path) -> Iterator[FakeSystemd]:
    fake = FakeSystemd(str(short_dir / "notify"))
    yield fake
    fake.close()


@pytest.fixture
def abstract_systemd() -> Iterator[FakeSystemd]:
    fake = FakeSystemd(f"@nodeagent-test-{secrets.token_hex(8)}")
    yield fake
    fake.close()


@pytest.fixture(params=["path", "abstract"])
def fake_systemd(
    request: pytest.FixtureRequest, short_dir: Path
) -> Iterator[FakeSystemd]:
    if request.param == "path":
        fake = FakeSystemd(str(short_dir / "notify"))
    else:
        fake = FakeSystemd(f"@nodeagent-test-{secrets.token_hex(8)}")
    yield fake
    fake.close()


# ---------------------------------------------------------------- datagrams


def test_ready_with_status(fake_systemd: FakeSystemd) -> None:
    n = Notifier(fake_systemd.address)
    assert n.enabled
    assert n.ready(status="serving 3 sockets") is True
    assert fake_systemd.receive() == b"READY=1\nSTATUS=serving 3 sockets"


def test_ready_without_status(fake_systemd: FakeSystemd) -> None:
    assert Notifier(fake_systemd.address).ready() is True
    assert fake_systemd.receive() == b"READY=1"


def test_status_stopping_watchdog_each_one_datagram(fake_systemd: FakeSystemd) -> None:
    n = Notifier(fake_systemd.address)
    assert n.status("admitting pods") is True
    assert n.stopping() is True
    assert n.stopping(status="draining") is True
    assert n.watchdog() is True
    assert [fake_systemd.receive() for _ in range(4)] == [
        b"STATUS=admitting pods",
        b"STOPPING=1",
        b"STOPPING=1\nSTATUS=draining",
        b"WATCHDOG=1",
    ]
    assert fake_systemd.pending() == []


def test_status_newlines_cannot_inject_assignments(path_systemd: FakeSystemd) -> None:
    Notifier(path_systemd.address).status("line one\nREADY=1")
    assert path_systemd.receive() == b"STATUS=line one READY=1"


def test_abstract_address_is_not_a_file(abstract_systemd: FakeSystemd, short_dir: Path) -> None:
    # '@name' must go to the abstract namespace, not to a file called "@name".
    assert Notifier(abstract_systemd.address).watchdog() is True
    assert abstract_systemd.receive() == b"WATCHDOG=1"
    assert not Path(abstract_systemd.address).exists()


def test_utf8_status(path_systemd: FakeSystemd) -> None:
    Notifier(path_systemd.address).status("node größe 8 cpu")
    assert path_systemd.receive() == "STATUS=node größe 8 cpu".encode()


# ---------------------------------------------------------------- no-op and failures


@pytest.mark.parametrize("address", [None, ""])
def test_unset_address_is_a_no_op(address: str | None) -> None:
    n = Notifier(address)
    assert not n.enabled
    assert n.ready(status="x") is False
    assert n.status("x") is False
    assert n.stopping() is False
    assert n.watchdog() is False


def test_unsupported_address_is_disabled_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="nodeagent.systemd"):
        n = Notifier("relative/notify")
    assert not n.enabled
    assert n.ready() is False
    assert "not supported" in caplog.text


def test_socket_gone_is_logged_not_raised(short_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeSystemd(str(short_dir / "notify"))
    n = Notifier(fake.address)
    assert n.watchdog() is True
    fake.close()
    os.unlink(fake.address)
    with caplog.at_level(logging.DEBUG, logger="nodeagent.systemd"):
        assert n.watchdog() is False
        assert n.watchdog() is False
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, "a run of failures warns once"
    assert "cannot notify systemd" in warnings[0].getMessage()
    # systemd comes back (socket re-created): sending works again.
    again = FakeSystemd(fake.address)
    try:
        with caplog.at_level(logging.INFO, logger="nodeagent.systemd"):
            assert n.ready() is True
        assert again.receive() == b"READY=1"
        assert "works again" in caplog.text
    finally:
        again.close()


def test_abstract_socket_nobody_listening() -> None:
    n = Notifier(f"@nodeagent-test-absent-{secrets.token_hex(8)}")
    assert n.enabled
    assert n.ready() is False


# ---------------------------------------------------------------- watchdog interval


@pytest.mark.parametrize(
    ("usec", "pid_value", "expected"),
    [
        ("30000000", None, 15.0),
        ("30000000", "", 15.0),
        ("30000000", "4242", 15.0),
        ("1000000", "4242", 0.5),
        ("3", None, 1.5e-6),
        ("30000000", "4243", None),  # meant for another process
        ("30000000", "abc", None),
        (None, None, None),
        ("", "4242", None),
        ("0", None, None),
        ("-5", None, None),
        ("30s", None, None),
    ],
)
def test_watchdog_interval(usec: str | None, pid_value: str | None, expected: float | None) -> None:
    assert watchdog_interval(usec, pid_value, pid=4242) == expected


def test_watchdog_interval_defaults_to_own_pid() -> None:
    assert watchdog_interval("2000000", str(os.getpid())) == 1.0
    assert watchdog_interval("2000000", str(os.getpid() + 1)) is None


# ---------------------------------------------------------------- watchdog loop


async def _settle() -> None:
    # Enough loop turns for the loop to ping, and for its next clock.sleep to register.
    for _ in range(20):
        await asyncio.sleep(0)


async def test_watchdog_loop_pings_every_interval_until_stopped(
    path_systemd: FakeSystemd, fake_clock: FakeClock
) -> None:
    n = Notifier(path_systemd.address)
    stop = asyncio.Event()
    task = asyncio.create_task(n.watchdog_loop(15.0, fake_clock, stop))
    await _settle()
    assert path_systemd.pending() == [b"WATCHDOG=1"], "first ping at once"
    await fake_clock.wait_for_sleepers()
    fake_clock.advance(14.5)
    await _settle()
    assert path_systemd.pending() == []
    await fake_clock.wait_for_sleepers()
    fake_clock.advance(0.5)
    await _settle()
    assert path_systemd.pending() == [b"WATCHDOG=1"]
    await fake_clock.wait_for_sleepers()
    fake_clock.advance(15.0)
    await _settle()
    assert path_systemd.pending() == [b"WATCHDOG=1"]
    stop.set()
    await asyncio.wait_for(task, 1.0)
    fake_clock.advance(100.0)
    await _settle()
    assert path_systemd.pending() == []


async def test_watchdog_loop_survives_missing_socket(short_dir: Path, fake_clock: FakeClock) -> None:
    n = Notifier(str(short_dir / "nobody"))
    stop = asyncio.Event()
    task = asyncio.create_task(n.watchdog_loop(1.0, fake_clock, stop))
    for _ in range(3):
        await _settle()
        await fake_clock.wait_for_sleepers()
        fake_clock.advance(1.0)
    assert not task.done()
    stop.set()
    await asyncio.wait_for(task, 1.0)


async def test_watchdog_loop_already_stopped_sends_nothing(
    path_systemd: FakeSystemd, fake_clock: FakeClock
) -> None:
    stop = asyncio.Event()
    stop.set()
    await asyncio.wait_for(Notifier(path_systemd.address).watchdog_loop(1.0, fake_clock, stop), 1.0)
    assert path_systemd.pending() == []


async def test_watchdog_loop_cancel_is_clean(path_systemd: FakeSystemd, fake_clock: FakeClock) -> None:
    task = asyncio.create_task(Notifier(path_systemd.address).watchdog_loop(1.0, fake_clock, asyncio.Event()))
    await _settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert path_systemd.pending() == [b"WATCHDOG=1"]


async def test_watchdog_loop_rejects_bad_interval(fake_clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="positive"):
        await Notifier(None).watchdog_loop(0, fake_clock, asyncio.Event())
