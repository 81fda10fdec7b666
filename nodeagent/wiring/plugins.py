"""Wiring of the plugin processes the daemon spawns (the config's `plugins:` list).

Exists because spawned plugins need to find this node: they get the daemon's environment
minus systemd's notify variables (only the daemon talks to systemd) plus the root dir,
the device-plugins dir, kubelet.sock, the admin socket (for the `nodeagent` CLI), the
node name and a kubeconfig of the daemon's Kubernetes API (DRA drivers publish their
ResourceSlices and read claims through it), and they run from the daemon's own bin dir. With
the API server of this process, each plugin's kubeconfig holds only the plugin's own
credential: a token of its own service account (authn/identities.py), bound to this node and
refreshed before it expires (apiserver/plugin_credentials.py), never the administrator's token.
A node that joined another cluster (cluster.kubeconfig) cannot issue those there: its plugins get
the node's kubeconfig unless their `env` names their own NODEAGENT_KUBECONFIG (README, "Plugin
identities").
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from nodeagent.apiserver.authn import identities
from nodeagent.config import Config
from nodeagent.config.model import PluginSpec
from nodeagent.supervisor import PluginSupervisor
from nodeagent.systemd import NOTIFY_ENV
from nodeagent.util.clock import Clock
from nodeagent.wiring.running import Running

logger = logging.getLogger(__name__)
ENV_KUBECONFIG = "NODEAGENT_KUBECONFIG"


def _own_kubeconfig(spec: PluginSpec, cfg: Config, write: Callable[..., None]) -> PluginSpec:
    """`spec` with NODEAGENT_KUBECONFIG naming a kubeconfig of the plugin's own identity (written now),
    unless the plugin's configured env names one itself."""
    if ENV_KUBECONFIG in spec.env:
        return spec
    user = identities.plugin_user(spec.name)
    path = cfg.agent.state_dir / "plugins" / f"{identities.plugin_account(spec.name)}.kubeconfig"
    write(path, user, node=cfg.agent.node_name)
    logger.info("plugin credential written plugin=%s user=%s kubeconfig=%s", spec.name, user.name, path)
    return dataclasses.replace(spec, env={**spec.env, ENV_KUBECONFIG: str(path)})


def start_supervisor(cfg: Config, environ: Mapping[str, str], clock: Clock, running: Running) -> None:
    """Spawn the configured plugins under a supervisor, stopped at shutdown."""
    plugin_env = {k: v for k, v in environ.items() if k not in NOTIFY_ENV}
    plugin_env.update(
        NODEAGENT_ROOT_DIR=str(cfg.agent.root_dir),
        NODEAGENT_DEVICE_PLUGINS_DIR=str(cfg.device_plugins_dir),
        NODEAGENT_KUBELET_SOCKET=str(cfg.kubelet_socket),
        NODEAGENT_ADMIN_SOCKET=str(cfg.agent.admin_socket),
        NODEAGENT_NODE_NAME=cfg.agent.node_name,
        # a node that joined a cluster hands its plugins the cluster's kubeconfig (it cannot issue credentials
        # there); with the API server of this process each plugin gets its own (_own_kubeconfig)
        NODEAGENT_KUBECONFIG=str(cfg.agent.cluster.kubeconfig or cfg.kubeconfig_path),
    )
    specs = cfg.agent.plugins
    if cfg.agent.cluster.kubeconfig is None and running.identity_kubeconfig is not None:
        specs = tuple(_own_kubeconfig(spec, cfg, running.identity_kubeconfig) for spec in specs)
    supervisor = PluginSupervisor(
        specs, env=plugin_env, clock=clock, bin_dir=Path(sys.executable).parent
    )
    supervisor.start()
    running.closers.append(supervisor.stop)
    running.aborters.append(supervisor.kill)  # a stop that timed out leaves no plugin behind
