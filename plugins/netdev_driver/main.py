"""Entry point of the netdev DRA driver: `nodeagent-netdev-driver --config PROFILE.yaml`.

Parses arguments, sets up stderr logging, builds the driver (pyroute2 Netlink in the
profile's namespace, the Kubernetes API of a kubeconfig for slices and claims, optional CDI)
and the kit's DriverServer, and runs both until SIGTERM/SIGINT (or, spawned by nodeagent,
until the parent exits). Root dir: flag, profile, $NODEAGENT_ROOT_DIR, /var/lib/kubelet.
Kubeconfig: flag, profile, $NODEAGENT_KUBECONFIG, $KUBECONFIG, ~/.kube/config. Node name:
flag, $NODEAGENT_NODE_NAME, $NODE_NAME, the host name. Needs CAP_NET_ADMIN and CAP_SYS_ADMIN
(namespaces). Exit codes: 0 clean stop, 2 bad profile, socket or netlink problem.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from nodeagent.plugin_kit import NodeAgentError
from nodeagent.plugin_kit.netlink import PyRoute2Netlink
from plugins.common.runner import (
    DEFAULT_ROOT_DIR,
    ENV_KUBECONFIG,
    ENV_NODE_NAME,
    ENV_ROOT_DIR,
    add_log_arguments,
    pick_kubeconfig,
    pick_node_name,
    pick_path,
    run_until_stopped,
    setup_logging,
    spawned_by_daemon,
)
from plugins.dra_kit.cdi import CDIWriter
from plugins.dra_kit.kube import KubeAccess
from plugins.dra_kit.server import DriverServer
from plugins.netdev_driver.driver import NetdevDriver
from plugins.netdev_driver.profile import load_profile

logger = logging.getLogger("plugins.netdev_driver")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nodeagent-netdev-driver", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--config", required=True, type=Path, help="profile YAML (configs/plugins/netdev.yaml)")
    p.add_argument("--root-dir", type=Path, help=f"kubelet root (plugins_registry, plugins); ${ENV_ROOT_DIR}")
    p.add_argument("--kubeconfig", type=Path, help=f"kubeconfig of the Kubernetes API; ${ENV_KUBECONFIG}, "
                                                   "$KUBECONFIG, ~/.kube/config")
    p.add_argument("--netns", help="publish the links of this named namespace (overrides the profile)")
    p.add_argument("--node-name", help=f"node of the ResourceSlices; ${ENV_NODE_NAME}, $NODE_NAME, the host name")
    add_log_arguments(p)
    return p


async def _run(driver: NetdevDriver, server: DriverServer, api: KubeAccess, *, follow_parent: bool) -> None:
    async def start() -> None:
        await driver.start()
        await server.start()
        logger.info("netdev driver serving driver=%s socket=%s", driver.driver, server.plugin_path)

    async def stop() -> None:
        await server.stop()
        await driver.stop()
        await api.close()

    await run_until_stopped(start, stop, follow_parent=follow_parent)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging(args.log_level, args.log_format, os.environ)
    try:
        profile = load_profile(args.config)
        if args.netns:
            profile = replace(profile, netns=args.netns)
        root = pick_path(args.root_dir, profile.root_dir, os.environ, ENV_ROOT_DIR, DEFAULT_ROOT_DIR)
        kubeconfig = pick_kubeconfig(args.kubeconfig, profile.kubeconfig, os.environ)
        state_dir = profile.state_dir or root / "plugins" / profile.driver_name
        cdi = CDIWriter(profile.cdi_dir, profile.cdi_kind, profile.driver_name) if profile.cdi_dir else None
        api = KubeAccess(kubeconfig.absolute())
        driver = NetdevDriver(profile, PyRoute2Netlink(profile.netns), api, state_dir=state_dir, cdi=cdi,
                              node_name=pick_node_name(args.node_name, os.environ))
        server = DriverServer(profile.driver_name, root, driver)
        asyncio.run(_run(driver, server, api, follow_parent=spawned_by_daemon(os.environ)))
    except NodeAgentError as err:
        print(f"nodeagent-netdev-driver: {err}", file=sys.stderr)
        return 2
    return 0
