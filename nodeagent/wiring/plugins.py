"""Wiring of the plugin processes the daemon spawns (the config's `plugins:` list).

Exists because spawned plugins need to find this node: they get the daemon's environment
minus systemd's notify variables (only the daemon talks to systemd) plus the root dir,
the device-plugins dir, kubelet.sock, the admin socket (for the `nodeagent` CLI), the
node name and the kubeconfig of the daemon's Kubernetes API (DRA drivers publish their
ResourceSlices and read claims through it), and they run from the daemon's own bin dir.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from nodeagent.config import Config
from nodeagent.supervisor import PluginSupervisor
from nodeagent.systemd import NOTIFY_ENV
from nodeagent.util.clock import Clock
from nodeagent.wiring.running import Running


def start_supervisor(cfg: Config, environ: Mapping[str, str], clock: Clock, running: Running) -> None:
    """Spawn the configured plugins under a supervisor, stopped at shutdown."""
    plugin_env = {k: v for k, v in environ.items() if k not in NOTIFY_ENV}
    plugin_env.update(
        NODEAGENT_ROOT_DIR=str(cfg.agent.root_dir),
        NODEAGENT_DEVICE_PLUGINS_DIR=str(cfg.device_plugins_dir),
        NODEAGENT_KUBELET_SOCKET=str(cfg.kubelet_socket),
        NODEAGENT_ADMIN_SOCKET=str(cfg.agent.admin_socket),
        NODEAGENT_NODE_NAME=cfg.agent.node_name,
        # a node that joined a cluster hands its plugins the cluster's kubeconfig
        NODEAGENT_KUBECONFIG=str(cfg.agent.cluster.kubeconfig or cfg.kubeconfig_path),
    )
    supervisor = PluginSupervisor(
        cfg.agent.plugins, env=plugin_env, clock=clock, bin_dir=Path(sys.executable).parent
    )
    supervisor.start()
    running.closers.append(supervisor.stop)
    running.aborters.append(supervisor.kill)  # a stop that timed out leaves no plugin behind
