"""Process plumbing every plugin shares: where things live, and run-until-stopped.

When nodeagent spawns a plugin it sets NODEAGENT_ROOT_DIR, NODEAGENT_DEVICE_PLUGINS_DIR,
NODEAGENT_KUBECONFIG (the kubeconfig of its Kubernetes API) and NODEAGENT_NODE_NAME; the
plugin then uses them and also stops when its parent goes away (a daemon killed with SIGKILL
cannot stop its children; the next daemon spawns a fresh copy on the same sockets). Run on
its own, a plugin uses the kubelet's default paths, $KUBECONFIG (else ~/.kube/config) and
$NODE_NAME (else the host name), as a driver on the upstream kubeletplugin helper does.
The daemon's variables win over the standard ones: a daemon started from a shell whose
$KUBECONFIG names another cluster must not make its own drivers publish there.
Only this module and the plugins' main.py read the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import overload

from nodeagent.plugin_kit import LOG_FORMATS, cancel_and_wait, setup_logs

logger = logging.getLogger(__name__)

ENV_ROOT_DIR = "NODEAGENT_ROOT_DIR"
ENV_DEVICE_PLUGINS_DIR = "NODEAGENT_DEVICE_PLUGINS_DIR"
ENV_KUBECONFIG = "NODEAGENT_KUBECONFIG"
ENV_NODE_NAME = "NODEAGENT_NODE_NAME"
ENV_LOG_FORMAT = "NODEAGENT_LOG_FORMAT"  # the daemon's --log-format, so its children log as it does
DEFAULT_ROOT_DIR = Path("/var/lib/kubelet")
DEFAULT_KUBECONFIG = Path("~/.kube/config")  # client-go's recommended home file
PARENT_CHECK_INTERVAL = 0.5  # seconds between checks that the spawning daemon is still our parent


def spawned_by_daemon(environ: Mapping[str, str], env: str = ENV_ROOT_DIR) -> bool:
    """True when the daemon's variable `env` is set: the plugin then follows its parent."""
    return bool(environ.get(env))


@overload
def pick_path(flag: Path | None, profile: Path | None, environ: Mapping[str, str], env: str, default: Path) -> Path: ...
@overload
def pick_path(
    flag: Path | None, profile: Path | None, environ: Mapping[str, str], env: str, default: None
) -> Path | None: ...
def pick_path(
    flag: Path | None, profile: Path | None, environ: Mapping[str, str], env: str, default: Path | None
) -> Path | None:
    """The flag, else the profile's field, else the environment variable (if not empty), else the default."""
    if flag is not None:
        return flag
    if profile is not None:
        return profile
    value = environ.get(env, "")
    return Path(value) if value else default


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """--log-level and --log-format, the daemon's two logging flags with the same values."""
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--log-format", choices=list(LOG_FORMATS),
                        help=f"plain (no timestamps: journald adds them), full or json (default: "
                             f"${ENV_LOG_FORMAT}, which the daemon sets to its own, else plain)")


def setup_logging(level: str, fmt: str | None, environ: Mapping[str, str]) -> None:
    """Handlers as the daemon's (nodeagent.logs). Spawned by `nodeagent run --log-format full`, a
    plugin's lines interleave with the daemon's on one terminal, so they carry timestamps too;
    under its own systemd unit it logs plain, journald stamping each line."""
    chosen = fmt or environ.get(ENV_LOG_FORMAT, "")
    setup_logs(level, chosen if chosen in LOG_FORMATS else "plain")


def pick_kubeconfig(flag: Path | None, profile: Path | None, environ: Mapping[str, str]) -> Path:
    """--kubeconfig, the profile's, $NODEAGENT_KUBECONFIG (the daemon's), $KUBECONFIG (its first
    entry), else ~/.kube/config."""
    if flag is not None:
        return flag
    if profile is not None:
        return profile
    for env in (ENV_KUBECONFIG, "KUBECONFIG"):
        value = environ.get(env, "").split(os.pathsep)[0]
        if value:
            return Path(value)
    return DEFAULT_KUBECONFIG.expanduser()


def pick_node_name(flag: str | None, environ: Mapping[str, str]) -> str:
    """--node-name, $NODEAGENT_NODE_NAME (the daemon's), $NODE_NAME, else the host name lowercased
    (nodeagent's and the kubelet's default node name)."""
    if flag:
        return flag
    for env in (ENV_NODE_NAME, "NODE_NAME"):
        if environ.get(env):
            return environ[env]
    return socket.gethostname().lower()


async def _watch_parent(stop: asyncio.Event, parent: int) -> None:
    while not stop.is_set():
        await asyncio.sleep(PARENT_CHECK_INTERVAL)
        if os.getppid() != parent:
            logger.warning("parent process gone, stopping parent_pid=%d", parent)
            stop.set()


async def run_until_stopped(
    start: Callable[[], Awaitable[None]],
    stop: Callable[[], Awaitable[None]],
    *,
    follow_parent: bool,
    stop_event: asyncio.Event | None = None,
) -> None:
    """start(); wait for SIGTERM/SIGINT, `stop_event`, or (follow_parent) the parent's exit; stop()."""
    event = stop_event or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, event.set)
    parent = os.getppid()
    watcher = asyncio.ensure_future(_watch_parent(event, parent)) if follow_parent else None
    try:
        await start()
        await event.wait()
    finally:
        await cancel_and_wait([watcher])
        await stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
