"""Entry point of the fake DRA driver: `nodeagent-dra-driver --config PROFILE.yaml`.

Parses arguments, sets up plain stderr logging, serves until SIGTERM/SIGINT, then stops
(registration socket first, so the kubelet unregisters the driver). It is a Kubernetes API
client like any DRA driver: slices and claims go through the API of the kubeconfig. First found:
  root dir:     --root-dir, $NODEAGENT_ROOT_DIR (set by nodeagent for plugins it spawns),
                /var/lib/kubelet
  kubeconfig:   --kubeconfig, $NODEAGENT_KUBECONFIG (set by nodeagent), $KUBECONFIG,
                ~/.kube/config (read again when it changes; waited for when missing)
  node name:    --node-name, $NODEAGENT_NODE_NAME (set by nodeagent), $NODE_NAME, the host name
  CDI dir:      --cdi-dir, the profile's cdi.dir, ROOT/../cdi
Spawned by nodeagent, the driver also stops when its parent exits. Exit codes: 0 clean
stop, 2 bad profile or socket problem, 70 crash injected by the profile's faults.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from nodeagent.plugin_kit import NodeAgentError
from plugins.common import runner
from plugins.common.runner import add_log_arguments, setup_logging
from plugins.dra_kit.kube import KubeAccess
from plugins.fake_dra_driver.driver import FakeDRADriver
from plugins.fake_dra_driver.profile import load_profile


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nodeagent-dra-driver", description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, type=Path, help="profile YAML (configs/plugins/fake-dra.yaml)")
    p.add_argument("--root-dir", type=Path, help=f"kubelet root dir (default: ${runner.ENV_ROOT_DIR}, "
                                                 f"else {runner.DEFAULT_ROOT_DIR})")
    p.add_argument("--kubeconfig", type=Path, help=f"kubeconfig of the Kubernetes API (default: "
                                                   f"${runner.ENV_KUBECONFIG}, else $KUBECONFIG, else ~/.kube/config)")
    p.add_argument("--node-name", help=f"node of the published ResourceSlices (default: ${runner.ENV_NODE_NAME}, "
                                       "else $NODE_NAME, else the host name)")
    p.add_argument("--cdi-dir", type=Path, help="CDI spec folder (default: the profile's cdi.dir, else ROOT/../cdi)")
    add_log_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    setup_logging(args.log_level, args.log_format, os.environ)
    environ = os.environ
    try:
        profile = load_profile(args.config)
        root = runner.pick_path(args.root_dir, None, environ, runner.ENV_ROOT_DIR, runner.DEFAULT_ROOT_DIR)
        kubeconfig = runner.pick_kubeconfig(args.kubeconfig, None, environ)
        for what, path in (("--root-dir", root), ("--cdi-dir", args.cdi_dir)):
            if path is not None and not path.is_absolute():
                print(f"nodeagent-dra-driver: {what} {path}: must be an absolute path", file=sys.stderr)
                return 2
        api = KubeAccess(kubeconfig.absolute())
        node = runner.pick_node_name(args.node_name, environ)
        driver = FakeDRADriver(profile, root_dir=root, api=api, node_name=node, cdi_dir=args.cdi_dir)

        async def stop() -> None:
            await driver.stop()
            await api.close()

        asyncio.run(runner.run_until_stopped(driver.start, stop, follow_parent=runner.spawned_by_daemon(environ)))
    except NodeAgentError as err:
        print(f"nodeagent-dra-driver: {err}", file=sys.stderr)
        return 2
    return 0
