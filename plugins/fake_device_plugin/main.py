"""Entry point of the fake device plugin: `nodeagent-device-plugin --config PROFILE.yaml`.

Parses arguments, sets up plain stderr logging, runs the plugin until SIGTERM/SIGINT,
then stops it (its ListAndWatch streams end, which the kubelet sees as the plugin gone).
The device-plugins directory is, first found: --device-plugins-dir, the profile's
devicePluginsDir, $NODEAGENT_DEVICE_PLUGINS_DIR (set by nodeagent for the plugins it
spawns), /var/lib/kubelet/device-plugins. Spawned by nodeagent (that variable set), the
plugin also stops when its parent exits: a daemon killed with SIGKILL cannot stop its
children, and the daemon that starts next spawns a fresh copy on the same socket.
Exit codes: 0 clean stop, 2 bad profile or socket problem.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from nodeagent.errors import NodeAgentError
from plugins.fake_device_plugin.plugin import FakeDevicePlugin
from plugins.fake_device_plugin.profile import Profile, load_profile

logger = logging.getLogger("plugins.fake_device_plugin")

ENV_DEVICE_PLUGINS_DIR = "NODEAGENT_DEVICE_PLUGINS_DIR"
PARENT_CHECK_INTERVAL = 0.5  # seconds between checks that the spawning daemon is still our parent


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nodeagent-device-plugin", description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, type=Path, help="profile YAML (configs/plugins/fake-gpu.yaml)")
    p.add_argument("--device-plugins-dir", type=Path,
                   help=f"override the profile's devicePluginsDir and ${ENV_DEVICE_PLUGINS_DIR}")
    p.add_argument("--kubelet-socket", type=Path, help="default: <device-plugins-dir>/kubelet.sock")
    p.add_argument("--watch-interval", type=float, help="seconds between kubelet.sock checks")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def device_plugins_dir(flag: Path | None, profile: Profile, environ: Mapping[str, str]) -> Path | None:
    """The flag, else the profile's field, else the environment; None: the plugin's default."""
    if flag is not None:
        return flag
    if profile.device_plugins_dir is not None:
        return profile.device_plugins_dir
    env = environ.get(ENV_DEVICE_PLUGINS_DIR, "")
    return Path(env) if env else None


async def _watch_parent(stop: asyncio.Event, parent: int) -> None:
    while not stop.is_set():
        await asyncio.sleep(PARENT_CHECK_INTERVAL)
        if os.getppid() != parent:
            logger.warning("parent process gone, stopping parent_pid=%d", parent)
            stop.set()


async def _run(plugin: FakeDevicePlugin, *, follow_parent: bool) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    parent = os.getppid()
    await plugin.start()
    logger.info("fake device plugin running resource=%s socket=%s",
                plugin.profile.resource_name, plugin.socket_path)
    watcher = asyncio.ensure_future(_watch_parent(stop, parent)) if follow_parent else None
    await stop.wait()
    if watcher is not None:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    await plugin.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level,
                        format="%(levelname)s %(name)s %(message)s")
    try:
        profile = load_profile(args.config)
        plugin = FakeDevicePlugin(
            profile,
            device_plugins_dir=device_plugins_dir(args.device_plugins_dir, profile, os.environ),
            kubelet_socket=args.kubelet_socket,
            watch_interval=args.watch_interval,
        )
        asyncio.run(_run(plugin, follow_parent=bool(os.environ.get(ENV_DEVICE_PLUGINS_DIR))))
    except NodeAgentError as err:
        print(f"nodeagent-device-plugin: {err}", file=sys.stderr)
        return 2
    return 0
