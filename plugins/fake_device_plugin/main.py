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
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from nodeagent.plugin_kit import NodeAgentError
from plugins.common.runner import (
    ENV_DEVICE_PLUGINS_DIR,
    add_log_arguments,
    pick_path,
    run_until_stopped,
    setup_logging,
    spawned_by_daemon,
)
from plugins.fake_device_plugin.plugin import FakeDevicePlugin
from plugins.fake_device_plugin.profile import Profile, load_profile

__all__ = ["ENV_DEVICE_PLUGINS_DIR", "device_plugins_dir", "main"]

logger = logging.getLogger("plugins.fake_device_plugin")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nodeagent-device-plugin", description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, type=Path, help="profile YAML (configs/plugins/fake-gpu.yaml)")
    p.add_argument("--device-plugins-dir", type=Path,
                   help=f"override the profile's devicePluginsDir and ${ENV_DEVICE_PLUGINS_DIR}")
    p.add_argument("--kubelet-socket", type=Path, help="default: <device-plugins-dir>/kubelet.sock")
    p.add_argument("--watch-interval", type=float, help="seconds between kubelet.sock checks")
    add_log_arguments(p)
    return p


def device_plugins_dir(flag: Path | None, profile: Profile, environ: Mapping[str, str]) -> Path | None:
    """The flag, else the profile's field, else the environment; None: the plugin's default."""
    return pick_path(flag, profile.device_plugins_dir, environ, ENV_DEVICE_PLUGINS_DIR, None)


async def _run(plugin: FakeDevicePlugin, *, follow_parent: bool) -> None:
    async def start() -> None:
        await plugin.start()
        logger.info("fake device plugin running resource=%s socket=%s",
                    plugin.profile.resource_name, plugin.socket_path)

    await run_until_stopped(start, plugin.stop, follow_parent=follow_parent)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging(args.log_level, args.log_format, os.environ)
    try:
        profile = load_profile(args.config)
        plugin = FakeDevicePlugin(
            profile,
            device_plugins_dir=device_plugins_dir(args.device_plugins_dir, profile, os.environ),
            kubelet_socket=args.kubelet_socket,
            watch_interval=args.watch_interval,
        )
        asyncio.run(_run(plugin, follow_parent=spawned_by_daemon(os.environ, ENV_DEVICE_PLUGINS_DIR)))
    except NodeAgentError as err:
        print(f"nodeagent-device-plugin: {err}", file=sys.stderr)
        return 2
    return 0
