"""The real control plane's processes: started in order, watched, restarted with backoff, stopped in reverse.

Start: each component is spawned only once the one before answers its readiness probe (etcd's
/health before kube-apiserver, kube-apiserver's /readyz before the scheduler and the controller
manager), as kubeadm's static pods come up in practice; one that exits or is not ready within the
bound fails the start with its last log lines (StartupError: the daemon exits 2 and says why).

Running: a component that exits is reported once per exit, at error level, with its exit code and the
last lines of its log, and started again after a delay that doubles from 10 s to 5 min (the kubelet's
CrashLoopBackOff for the static pods kubeadm runs these as), back to 10 s after ten minutes of
running: never a hot loop, and a component that recovers (kube-apiserver once etcd is back) does.

Stop: in reverse order, SIGTERM, then SIGKILL after the stop bound; if the daemon's own shutdown bound
cancels the stop, whatever still runs is killed at once. Each child runs in a process group of its own
(a terminal's Ctrl-C reaches the daemon alone, which stops them in order) and gets SIGTERM from the
kernel if the daemon dies without stopping them (PR_SET_PDEATHSIG), so a killed daemon leaves no
etcd holding its port. Logs go to STATE_DIR/kubernetes/logs/ROLE.log, the previous run's kept as
ROLE.log.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from nodeagent.errors import StartupError
from nodeagent.realcp.plan import Component, Probe
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

RESTART_BACKOFF, RESTART_BACKOFF_CAP = 10.0, 300.0  # the kubelet's CrashLoopBackOff: 10 s doubling to 5 min
RESET_AFTER = 600.0  # seconds of running after which the next exit starts the backoff again
PROBE_PERIOD = 0.2  # seconds between readiness probes while starting
TAIL_LINES = 20

ProbeFn = Callable[[Probe], Awaitable[bool]]

_PR_SET_PDEATHSIG = 1


def _libc_prctl() -> Callable[..., int] | None:
    try:
        fn: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: children outlive a killed daemon there
        return None
    return fn


_prctl = _libc_prctl()  # looked up before any fork: the child only calls it


def die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the thread that forked it ends (the daemon's; the test
    helpers' too, so a crashed test worker leaves no daemon behind)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines of a log (read from its end: a component's log can be large)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class _Child:
    component: Component
    proc: asyncio.subprocess.Process
    log: IO[bytes]
    started: float


class Supervisor:
    """Owns the component processes from start() to stop(). `probe` answers whether a component is ready;
    `restart_backoff` is the delay rule between a component's exit and its next start (tests shorten it)."""

    def __init__(self, components: Sequence[Component], *, log_path: Callable[[str], Path], clock: Clock,
                 probe: ProbeFn, ready_timeout: float, stop_timeout: float, env: Mapping[str, str],
                 restart_backoff: Backoff | None = None) -> None:
        self._components = tuple(components)
        self._log_path = log_path
        self._clock = clock
        self._probe = probe
        self._ready_timeout = ready_timeout
        self._stop_timeout = stop_timeout
        self._env = dict(env)
        self._backoff = restart_backoff or Backoff(RESTART_BACKOFF, RESTART_BACKOFF_CAP)
        self._children: dict[str, _Child] = {}
        self._watchers: list[asyncio.Task[None]] = []
        self._stopping = False

    def pids(self) -> dict[str, int]:
        return {role: c.proc.pid for role, c in self._children.items() if c.proc.returncode is None}

    async def start(self) -> None:
        """Start every component in order, each once the one before is ready; StartupError if one is not."""
        for component in self._components:
            child = await self._spawn(component, rotate=True)
            await self._wait_ready(child)
            logger.info("kubernetes component ready role=%s pid=%d", component.role, child.proc.pid)
        for component in self._components:
            self._watchers.append(asyncio.create_task(self._watch(component.role),
                                                      name=f"kubernetes-{component.role}"))

    async def _spawn(self, component: Component, *, rotate: bool) -> _Child:
        path = self._log_path(component.role)
        path.parent.mkdir(parents=True, exist_ok=True)
        if rotate and path.exists():
            os.replace(path, path.with_name(path.name + ".1"))
        log = path.open("ab")
        try:
            proc = await asyncio.create_subprocess_exec(
                *component.argv, executable=component.executable or None, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=self._env, process_group=0, preexec_fn=die_with_parent)
        except OSError as err:
            log.close()
            raise StartupError(f"kubernetes component {component.role}: cannot start "
                               f"{component.executable or component.argv[0]}: {err}") from None
        child = self._children[component.role] = _Child(component, proc, log, self._clock.monotonic())
        logger.info("kubernetes component started role=%s pid=%d log=%s", component.role, proc.pid, path)
        return child

    async def _wait_ready(self, child: _Child) -> None:
        role = child.component.role
        deadline = self._clock.monotonic() + self._ready_timeout
        while True:
            if child.proc.returncode is not None:
                raise StartupError(f"kubernetes component {role} exited with code {child.proc.returncode} before "
                                   f"it was ready; the last lines of {self._log_path(role)}:\n"
                                   f"{tail(self._log_path(role))}")
            if await self._probe(child.component.probe):
                return
            if self._clock.monotonic() > deadline:
                raise StartupError(f"kubernetes component {role} not ready within {self._ready_timeout:g}s "
                                   f"({child.component.probe.url}); the last lines of {self._log_path(role)}:\n"
                                   f"{tail(self._log_path(role))}")
            await self._clock.sleep(PROBE_PERIOD)

    async def _watch(self, role: str) -> None:
        """Report each exit once and start the component again after the backoff."""
        backoff = self._backoff
        delay = 0.0
        while not self._stopping:
            child = self._children[role]
            code = await child.proc.wait()
            child.log.close()
            if self._stopping:
                return
            if self._clock.monotonic() - child.started > RESET_AFTER:
                delay = 0.0
            delay = backoff.next_delay(delay)
            logger.error("kubernetes component exited role=%s pid=%d code=%s restart_in=%gs; the last lines of "
                         "%s:\n%s", role, child.proc.pid, code, delay, self._log_path(role),
                         tail(self._log_path(role)))
            await self._clock.sleep(delay)
            if self._stopping:
                return
            while True:
                try:
                    await self._spawn(child.component, rotate=False)
                    break
                except StartupError as err:  # the binary went away: keep trying, on the same backoff
                    delay = backoff.next_delay(delay)
                    logger.error("%s; retry_in=%gs", err, delay)
                    await self._clock.sleep(delay)

    async def stop(self) -> None:
        """Stop in reverse order: SIGTERM, SIGKILL after the bound; killed at once if this is cancelled."""
        self._stopping = True
        try:
            await cancel_and_wait(self._watchers)
            for component in reversed(self._components):
                child = self._children.get(component.role)
                if child is not None:
                    await self._stop_one(child)
        finally:
            for child in self._children.values():
                if child.proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        child.proc.kill()
                child.log.close()

    async def _stop_one(self, child: _Child) -> None:
        if child.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                child.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(child.proc.wait(), self._stop_timeout)
            except TimeoutError:
                logger.warning("kubernetes component did not stop within %gs, killing role=%s pid=%d",
                               self._stop_timeout, child.component.role, child.proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    child.proc.kill()
                await child.proc.wait()
        logger.info("kubernetes component stopped role=%s code=%s", child.component.role, child.proc.returncode)
