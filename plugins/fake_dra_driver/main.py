"""Entry point of the fake DRA driver: `nodeagent-dra-driver --config PROFILE.yaml`.

Parses arguments, sets up plain stderr logging, serves until SIGTERM/SIGINT, then stops
(registration socket first, so the kubelet unregisters the driver). Paths, first found:
  root dir:     --root-dir, $NODEAGENT_ROOT_DIR (set by nodeagent for plugins it spawns),
                /var/lib/kubelet
  admin socket: --admin-socket, $NODEAGENT_ADMIN_SOCKET, /run/nodeagent/nodeagent.sock
  CDI dir:      --cdi-dir, the profile's cdi.dir, ROOT/../cdi
  node name:    --node-name, else the daemon's node (admin GetNode)
Spawned by nodeagent, the driver also stops when its parent exits. Exit codes: 0 clean
stop, 2 bad profile or socket problem, 70 crash injected by the profile's faults.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from nodeagent.errors import NodeAgentError
from plugins.common import runner
from plugins.fake_dra_driver.driver import FakeDRADriver
from plugins.fake_dra_driver.profile import load_profile


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nodeagent-dra-driver", description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, type=Path, help="profile YAML (configs/plugins/fake-dra.yaml)")
    p.add_argument("--root-dir", type=Path, help=f"kubelet root dir (default: ${runner.ENV_ROOT_DIR}, "
                                                 f"else {runner.DEFAULT_ROOT_DIR})")
    p.add_argument("--admin-socket", type=Path, help=f"nodeagent admin socket (default: ${runner.ENV_ADMIN_SOCKET}, "
                                                     f"else {runner.DEFAULT_ADMIN_SOCKET})")
    p.add_argument("--node-name", help="node of the published ResourceSlices (default: the daemon's node)")
    p.add_argument("--cdi-dir", type=Path, help="CDI spec folder (default: the profile's cdi.dir, else ROOT/../cdi)")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(levelname)s %(name)s %(message)s")
    environ = os.environ
    try:
        profile = load_profile(args.config)
        root = runner.pick_path(args.root_dir, None, environ, runner.ENV_ROOT_DIR, runner.DEFAULT_ROOT_DIR)
        admin = runner.pick_path(args.admin_socket, None, environ, runner.ENV_ADMIN_SOCKET,
                                 runner.DEFAULT_ADMIN_SOCKET)
        for what, path in (("--root-dir", root), ("--admin-socket", admin), ("--cdi-dir", args.cdi_dir)):
            if path is not None and not path.is_absolute():
                print(f"nodeagent-dra-driver: {what} {path}: must be an absolute path", file=sys.stderr)
                return 2
        driver = FakeDRADriver(profile, root_dir=root, admin_socket=admin, node_name=args.node_name,
                               cdi_dir=args.cdi_dir)
        asyncio.run(runner.run_until_stopped(driver.start, driver.stop,
                                             follow_parent=runner.spawned_by_daemon(environ)))
    except NodeAgentError as err:
        print(f"nodeagent-dra-driver: {err}", file=sys.stderr)
        return 2
    return 0
