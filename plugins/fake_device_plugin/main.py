"""Entry point of the fake device plugin: `nodeagent-device-plugin --config PROFILE.yaml`.

Parses arguments, sets up plain stderr logging, runs the plugin until SIGTERM/SIGINT,
then stops it (its ListAndWatch streams end, which the kubelet sees as the plugin gone).
Exit codes: 0 clean stop, 2 bad profile or socket problem.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from nodeagent.errors import NodeAgentError
from plugins.fake_device_plugin.plugin import FakeDevicePlugin
from plugins.fake_device_plugin.profile import load_profile

logger = logging.getLogger("plugins.fake_device_plugin")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nodeagent-device-plugin", description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, type=Path, help="profile YAML (configs/plugins/fake-gpu.yaml)")
    p.add_argument("--device-plugins-dir", type=Path, help="override the profile's devicePluginsDir")
    p.add_argument("--kubelet-socket", type=Path, help="default: <device-plugins-dir>/kubelet.sock")
    p.add_argument("--watch-interval", type=float, help="seconds between kubelet.sock checks")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


async def _run(plugin: FakeDevicePlugin) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await plugin.start()
    logger.info("fake device plugin running resource=%s socket=%s",
                plugin.profile.resource_name, plugin.socket_path)
    await stop.wait()
    await plugin.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level,
                        format="%(levelname)s %(name)s %(message)s")
    try:
        profile = load_profile(args.config)
        plugin = FakeDevicePlugin(
            profile,
            device_plugins_dir=args.device_plugins_dir,
            kubelet_socket=args.kubelet_socket,
            watch_interval=args.watch_interval,
        )
        asyncio.run(_run(plugin))
    except NodeAgentError as err:
        print(f"nodeagent-device-plugin: {err}", file=sys.stderr)
        return 2
    return 0
