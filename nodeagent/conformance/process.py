"""The plugin under test as a child process (`--driver-command` / `--plugin-command`).

The suite starts it with the directories and kubeconfig it prepared, both as placeholders in
the command ({root} {registry} {plugins} {device_plugins} {kubeconfig} {node} {cdi}) and as the
environment variables nodeagent sets for the plugins it spawns (NODEAGENT_ROOT_DIR,
NODEAGENT_KUBECONFIG, KUBECONFIG, NODEAGENT_NODE_NAME, NODE_NAME,
NODEAGENT_DEVICE_PLUGINS_DIR). Owning the process lets the restart cases stop and start it;
its output goes to a log file whose tail a failure can quote.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from collections.abc import Mapping
from pathlib import Path

STOP_GRACE = 10.0


def expand(command: str, values: Mapping[str, str]) -> list[str]:
    """shlex-split `command` and replace each {name} placeholder in every word."""
    words = shlex.split(command)
    out = []
    for word in words:
        for key, value in values.items():
            word = word.replace("{" + key + "}", value)
        out.append(word)
    return out


class PluginProcess:
    def __init__(self, argv: list[str], env: Mapping[str, str], log_path: Path) -> None:
        if not argv:
            raise ValueError("the plugin command is empty")
        self.argv = argv
        self.env = {**os.environ, **env}
        self.log_path = log_path
        self._proc: asyncio.subprocess.Process | None = None
        self.starts = 0

    async def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv, env=self.env, stdout=log, stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True)
        self.starts += 1

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    async def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), STOP_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    def log_tail(self, limit: int = 1500) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text[-limit:]


async def run_command(argv: list[str], timeout: float = 10.0) -> str:
    """Run a helper command (--set-health-command); "" when it succeeded, else what went wrong."""
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.PIPE)
    except OSError as err:
        return f"command {argv} cannot be started: {err}"
    try:
        _, err_out = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return f"command {argv} did not finish within {timeout:g}s"
    if proc.returncode:
        return f"command {argv} exited {proc.returncode}: {err_out.decode(errors='replace').strip()[-500:]}"
    return ""
