"""Wiring of the virtual nodes of a node process (`cluster.kubeconfig` with `virtualNodes`).

Exists because without an embedded control plane nobody else publishes NodeAgentConfiguration.
virtualNodes: the node process serves them itself as API clients (nodeapi/virtual.py), beside
its own node or, with `node.enabled: false`, alone. One API client for all of them (one
connection pool, one pod watch, one claim watch): they share the process's credentials.
With an embedded control plane the control plane publishes and runs them in process instead
(controlplane/loop.py), and this does nothing.
"""

from __future__ import annotations

import logging

from nodeagent.config import Config
from nodeagent.config.versions import release_version
from nodeagent.nodeapi.virtual import VirtualNodeHost
from nodeagent.util.clock import Clock
from nodeagent.wiring.running import Running

logger = logging.getLogger(__name__)


async def start(cfg: Config, clock: Clock, running: Running) -> VirtualNodeHost | None:
    """Register, publish and run the virtual nodes over the cluster's API; None when there are none
    or the control plane of this process runs them. ConfigError names a bad virtualNodes field."""
    agent = cfg.agent
    if agent.cluster.kubeconfig is None or not agent.virtual_nodes:
        return None
    specs = agent.virtual_nodes
    from nodeagent.nodeapi.remote import RemoteAPI  # kubernetes_asyncio: only a node process with a kubeconfig

    api = RemoteAPI(agent.cluster.virtual_nodes_kubeconfig or agent.cluster.kubeconfig,
                    timeout=agent.cluster.request_timeout, node_name=agent.node_name)
    running.closers.append(api.close)
    host = VirtualNodeHost(api, clock, specs, host=agent.node_name, lease_duration=agent.node.lease_duration_seconds,
                           status_interval=agent.node.status_update_frequency, node_ips=agent.node_ips,
                           report_interval=agent.node.status_report_frequency,
                           kubelet_version=release_version(agent.kubernetes_version), gate=cfg.kubelet.gate)
    await host.start()
    running.closers.append(host.stop)  # closers run in reverse: the host stops before its client closes
    return host
