"""Keeps the plugin processes named in NodeAgentConfiguration.plugins running.

Each plugin is a child process (a real plugin program, as it would run beside a real
kubelet). A plugin that exits is restarted with exponential backoff (1 s doubling to
30 s) when `restart` is set. On stop, children get SIGTERM, then SIGKILL after a grace. Each
child runs in a process group of its own, so a terminal's Ctrl-C reaches only the daemon (which
stops them); a daemon killed outright leaves them to notice their parent is gone.
The environment passed to children is given explicitly by the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Mapping
from pathlib import Path

from nodeagent.config import PluginSpec
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

RESTART_BACKOFF, RESTART_BACKOFF_CAP = 1.0, 30.0
"""Seconds before a plugin that exited is started again: doubling per exit, back to the start after
a run of more than a minute."""


class PluginSupervisor:
    def __init__(
        self,
        plugins: tuple[PluginSpec, ...],
        *,
        env: Mapping[str, str],
        clock: Clock,
        cwd: str | None = None,
        bin_dir: Path | None = None,
    ) -> None:
        self._plugins = plugins
        self._env = dict(env)
        self._clock = clock
        self._cwd = cwd
        self._bin_dir = bin_dir
        self._tasks: list[asyncio.Task[None]] = []
        self._procs: dict[str, asyncio.subprocess.Process] = {}
        self._stopping = False

    def start(self) -> None:
        for spec in self._plugins:
            self._tasks.append(asyncio.create_task(self._keep(spec), name=f"plugin-{spec.name}"))

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self._procs.items() if p.returncode is None}

    def _resolve(self, command: tuple[str, ...]) -> tuple[str, ...]:
        """A bare program name found beside our own interpreter (the virtualenv's bin) wins over PATH,
        so `nodeagent-device-plugin` runs from the same installation as the daemon."""
        if self._bin_dir is not None and "/" not in command[0]:
            local = self._bin_dir / command[0]
            if local.exists():
                return (str(local), *command[1:])
        return command

    async def _keep(self, spec: PluginSpec) -> None:
        backoff = Backoff(RESTART_BACKOFF, RESTART_BACKOFF_CAP)
        delay = 0.0  # the last restart delay; none yet
        while not self._stopping:
            env = {**self._env, **spec.env}
            try:
                # A process group of its own: Ctrl-C in the daemon's terminal (SIGINT to the foreground
                # group) reaches the daemon alone, which stops its plugins with SIGTERM in its own order;
                # a plugin caught mid-start by the terminal's SIGINT printed a KeyboardInterrupt traceback.
                proc = await asyncio.create_subprocess_exec(*self._resolve(spec.command), env=env, cwd=self._cwd,
                                                            process_group=0)
            except OSError as err:
                logger.error("plugin start failed name=%s command=%s error=%s", spec.name, spec.command[0], err)
            else:
                self._procs[spec.name] = proc
                logger.info("plugin started name=%s pid=%d", spec.name, proc.pid)
                started = self._clock.monotonic()
                code = await proc.wait()
                if self._stopping:
                    return
                logger.warning("plugin exited name=%s pid=%d code=%s", spec.name, proc.pid, code)
                if self._clock.monotonic() - started > 60:
                    delay = 0.0
            if not spec.restart:
                return
            delay = backoff.next_delay(delay)
            await self._clock.sleep(delay)

    def kill(self) -> None:
        """SIGKILL every plugin still running, at once (the daemon's stop ran out of time)."""
        self._stopping = True
        for name, p in self._procs.items():
            if p.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
                logger.warning("plugin killed name=%s pid=%d: the daemon's stop timed out", name, p.pid)

    async def stop(self, grace: float = 5.0) -> None:
        self._stopping = True
        procs = [p for p in self._procs.values() if p.returncode is None]
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
        if procs:
            waits = [asyncio.create_task(p.wait()) for p in procs]
            _, pending = await asyncio.wait(waits, timeout=grace)
            for p in procs:
                if p.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        p.kill()
                    await p.wait()
            await cancel_and_wait(pending)
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
