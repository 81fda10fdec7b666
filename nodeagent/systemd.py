"""The systemd notify protocol (sd_notify), with no dependency: readiness, status, watchdog.

Why here and not libsystemd: the protocol is a few datagrams on an AF_UNIX socket
(`READY=1`, `STATUS=...`, `STOPPING=1`, `WATCHDOG=1`), and a Python binding would be a
native dependency for three lines of work. See sd_notify(3) and sd_watchdog_enabled(3).

This module never reads the environment: the daemon passes the values of
NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID in, so tests need no monkeypatching.
Sending never raises: under systemd a lost notification must not take the node down,
so failures are logged (once per run of failures) and reported as a False return.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket

from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

# Variables systemd sets for the main process. The daemon should drop them from the
# environment of the plugin processes it spawns, so a plugin does not mistake itself
# for the service's main process.
NOTIFY_ENV = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")

# Bound on a blocking send; systemd drains its notify socket quickly, and the daemon's
# event loop must never hang on it.
SEND_TIMEOUT = 1.0


def _socket_address(address: str) -> bytes | None:
    """Kernel address for NOTIFY_SOCKET: a path, or '@name' for an abstract socket."""
    if address.startswith("@"):
        return b"\0" + address[1:].encode()
    if address.startswith("/"):
        return os.fsencode(address)
    return None


def _one_line(text: str) -> str:
    # A newline would start a new assignment in the datagram.
    return " ".join(text.splitlines())


class Notifier:
    """Sends sd_notify datagrams to `address` (the value of NOTIFY_SOCKET).

    An empty or None address makes every method a no-op that returns False, which is
    what the daemon wants when it does not run under systemd (or runs with Type=simple).
    """

    def __init__(self, address: str | None, *, timeout: float = SEND_TIMEOUT) -> None:
        self._address: bytes | None = None
        self._display = address or ""
        self._timeout = timeout
        self._failing = False
        if address:
            self._address = _socket_address(address)
            if self._address is None:
                logger.warning("notify socket address not supported, notifications off address=%s", address)

    @property
    def enabled(self) -> bool:
        return self._address is not None

    def notify(self, *assignments: str) -> bool:
        """Send one datagram of newline-separated VAR=value assignments; True if sent."""
        if self._address is None or not assignments:
            return False
        payload = "\n".join(assignments).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.settimeout(self._timeout)
                sock.sendto(payload, self._address)
        except OSError as err:
            if not self._failing:
                logger.warning(
                    "cannot notify systemd address=%s error=%s", self._display, err.strerror or err
                )
            else:
                logger.debug("cannot notify systemd address=%s error=%s", self._display, err)
            self._failing = True
            return False
        if self._failing:
            logger.info("notifying systemd works again address=%s", self._display)
            self._failing = False
        return True

    def ready(self, status: str = "") -> bool:
        """READY=1 (with STATUS= when given): every socket serves, start-up is over."""
        if status:
            return self.notify("READY=1", f"STATUS={_one_line(status)}")
        return self.notify("READY=1")

    def status(self, text: str) -> bool:
        """STATUS=text, shown by `systemctl status`."""
        return self.notify(f"STATUS={_one_line(text)}")

    def stopping(self, status: str = "") -> bool:
        """STOPPING=1 (with STATUS= when given): shutdown has begun."""
        if status:
            return self.notify("STOPPING=1", f"STATUS={_one_line(status)}")
        return self.notify("STOPPING=1")

    def watchdog(self) -> bool:
        """WATCHDOG=1: the keep-alive ping systemd expects within WatchdogSec."""
        return self.notify("WATCHDOG=1")

    async def watchdog_loop(self, interval: float, clock: Clock, stop: asyncio.Event) -> None:
        """Ping the watchdog now and every `interval` seconds until `stop` is set.

        `interval` comes from watchdog_interval() (half of WatchdogSec). The loop never
        raises; cancelling it is also a clean way to end it.
        """
        if interval <= 0:
            raise ValueError(f"watchdog interval must be positive, got {interval}")
        logger.info("watchdog loop started interval=%.3fs", interval)
        while not stop.is_set():
            self.watchdog()
            sleeper = asyncio.ensure_future(clock.sleep(interval))
            stopper = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                await cancel_and_wait(task for task in (sleeper, stopper) if not task.done())
        logger.info("watchdog loop stopped")


def watchdog_interval(
    watchdog_usec: str | None, watchdog_pid: str | None, *, pid: int | None = None
) -> float | None:
    """Seconds between WATCHDOG=1 pings, or None when the watchdog is not for us.

    Arguments are the raw values of WATCHDOG_USEC and WATCHDOG_PID. As
    sd_watchdog_enabled(3) does, the watchdog applies only when WATCHDOG_USEC is a
    positive integer and WATCHDOG_PID is unset/empty or equals our pid (`pid`,
    default os.getpid()). The interval is half the timeout, as systemd recommends.
    """
    if not watchdog_usec:
        return None
    try:
        usec = int(watchdog_usec)
    except ValueError:
        logger.warning("ignoring invalid WATCHDOG_USEC value=%r", watchdog_usec)
        return None
    if usec <= 0:
        return None
    if watchdog_pid:
        try:
            target = int(watchdog_pid)
        except ValueError:
            logger.warning("ignoring watchdog with invalid WATCHDOG_PID value=%r", watchdog_pid)
            return None
        if target != (os.getpid() if pid is None else pid):
            return None
    return usec / 2 / 1_000_000
