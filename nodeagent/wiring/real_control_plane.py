"""Wiring of controlPlane.kubernetes: the real control plane started before the nodes, which then join it.

Order: the PKI (made or reused) and the kubeconfigs, then etcd, kube-apiserver, kube-scheduler and
kube-controller-manager (nodeagent/realcp/supervise.py), then the RBAC objects the nodes need. What
comes back is the daemon's configuration as for a node joining any cluster: `cluster.kubeconfig` is the
local node's own kubeconfig (user system:node:NAME in system:nodes, so the Node authorizer and
NodeRestriction hold it to its own objects, as a kubelet), and so is each full virtual node's
(NodeAgentConfiguration.nodes: kubelet-NAME.conf each, the group's `kubeconfig` set to it), the
embedded control plane and API server off. The user's kubeconfig (the admin's) is written where
controlPlane.apiServer.kubeconfig says, or STATE_DIR/kubeconfig, as the embedded API server's is.
The processes are stopped after the nodes (the daemon's closers run in reverse).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import os
import shutil
from collections.abc import Mapping

from nodeagent.config import Config
from nodeagent.config import nodes as nodes_config
from nodeagent.config.model import APIServerConfig, ClusterConfig, KubernetesConfig
from nodeagent.errors import StartupError
from nodeagent.realcp import pki, plan
from nodeagent.realcp.bootstrap import Bootstrap
from nodeagent.realcp.supervise import Supervisor
from nodeagent.util.clock import Clock
from nodeagent.wiring.running import Running

logger = logging.getLogger(__name__)


def resolve_programs(k: KubernetesConfig, environ: Mapping[str, str]) -> KubernetesConfig:
    """Bare program names looked up on PATH (the daemon's environment, as for plugins); StartupError if missing."""

    def find(program: str, what: str) -> str:
        found = program if "/" in program else shutil.which(program, path=environ.get("PATH", os.defpath))
        if found is None or not os.access(found, os.X_OK) or not os.path.isfile(found):
            raise StartupError(f"controlPlane.kubernetes.{what}: {program}: not an executable file"
                               + ("" if "/" in program else " on PATH")
                               + " (`make kube-binaries` builds the multi-role binary)")
        return found

    if k.binary:
        return dataclasses.replace(k, binary=find(k.binary, "binary"))
    return dataclasses.replace(k, binaries={r: find(p, f"binaries.{r}") for r, p in k.binaries.items()})


async def start(cfg: Config, environ: Mapping[str, str], clock: Clock, running: Running) -> Config:
    """Start the real control plane; the configuration the nodes then run with (they join it)."""
    k = cfg.agent.control_plane.kubernetes
    assert k is not None
    k = resolve_programs(k, environ)
    agent = cfg.agent
    layout = plan.Layout(agent.state_dir / "kubernetes")
    try:
        ep = plan.endpoints(agent.control_plane.api_server.bind_address, k)
    except plan.PlanError as err:
        raise StartupError(f"controlPlane.apiServer.bindAddress: {err}") from None
    local = (agent.node_name,) if agent.node.enabled else ()
    # the full virtual nodes (NodeAgentConfiguration.nodes) are kubelets too: each joins with its own
    # identity (system:node:NAME), so the Node authorizer and NodeRestriction hold it to its objects
    full = tuple(nodes_config.node_name(g, i) for g in agent.nodes for i in range(g.count))
    nodes = tuple(dict.fromkeys((*local, *full, *k.node_credentials)))
    virtual = bool(agent.virtual_nodes)  # they share one RBAC identity (plan.VIRTUAL_NODES_USER)
    specs = plan.certificates(ep, k.service_cluster_ip_range, nodes, virtual_nodes=virtual)
    now = dt.datetime.fromtimestamp(clock.now(), tz=dt.UTC)
    await asyncio.to_thread(pki.ensure, layout, specs, now)
    ca_pem = layout.cert(plan.CA).read_bytes()

    def write(name: str, cert_name: str, user: str) -> None:
        cert, key = pki.pem(layout, cert_name)
        pki.write_kubeconfig(layout.kubeconfig(name), plan.kubeconfig(ep.api_url, ca_pem, cert, key, user))

    for role, stem in plan.KUBECONFIGS.items():
        write(stem, role, {plan.ADMIN: plan.ADMIN_USER, plan.SCHEDULER: plan.SCHEDULER_USER,
                           plan.CONTROLLER_MANAGER: plan.CONTROLLER_MANAGER_USER}[role])
    for node in nodes:
        write(f"kubelet-{node}", f"kubelet-{node}", plan.node_user(node))
    if virtual:
        write(plan.VIRTUAL_NODES, plan.VIRTUAL_NODES, plan.VIRTUAL_NODES_USER)
    user_kubeconfig = cfg.kubeconfig_path
    user_kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(layout.kubeconfig(plan.KUBECONFIGS[plan.ADMIN]), user_kubeconfig)
    user_kubeconfig.chmod(0o600)

    bootstrap = Bootstrap(layout, ep.api_url)
    running.closers.append(bootstrap.close)
    env = {key: v for key, v in environ.items() if key != "NOTIFY_SOCKET"}
    supervisor = Supervisor(plan.components(k, ep, layout),
                            log_path=layout.log, clock=clock, probe=bootstrap.probe, ready_timeout=k.ready_timeout,
                            stop_timeout=k.stop_timeout, env=env)
    running.closers.append(supervisor.stop)  # stops what start() got to, if start() fails
    await supervisor.start()
    for obj in plan.rbac_objects(virtual_nodes=virtual):
        await bootstrap.apply(obj)
    await _default_service_account(bootstrap, clock)
    logger.info("kubernetes control plane ready api=%s kubeconfig=%s state=%s", ep.api_url, user_kubeconfig,
                layout.root)
    control_plane = dataclasses.replace(agent.control_plane, enabled=False,
                                        api_server=APIServerConfig(bind_address="", kubeconfig=user_kubeconfig))
    cluster = ClusterConfig(kubeconfig=layout.kubeconfig(f"kubelet-{agent.node_name}") if local else user_kubeconfig,
                            request_timeout=agent.cluster.request_timeout,
                            virtual_nodes_kubeconfig=layout.kubeconfig(plan.VIRTUAL_NODES) if virtual else None)
    # a group's own kubeconfig is refused beside controlPlane.kubernetes (config/agent.py)
    groups = tuple(dataclasses.replace(g, kubeconfig=str(layout.kubeconfig("kubelet-{node}"))) for g in agent.nodes)
    return dataclasses.replace(cfg, agent=dataclasses.replace(agent, control_plane=control_plane, cluster=cluster,
                                                              nodes=groups))


DEFAULT_SA_WAIT = 30.0
"""Seconds to wait at start for kube-controller-manager's serviceaccount controller to create default/default."""


async def _default_service_account(bootstrap: Bootstrap, clock: Clock) -> None:
    """Ready means pods can be created: until the serviceaccount controller made default/default, the
    ServiceAccount admission plugin refuses every pod there ('error looking up service account
    default/default'), seen right after start in the tier. Bounded: that controller may be switched off."""
    deadline = clock.monotonic() + DEFAULT_SA_WAIT
    while not await bootstrap.exists("/api/v1/namespaces/default/serviceaccounts/default"):
        if clock.monotonic() >= deadline:
            logger.warning("service account default/default not created after %.0fs (kube-controller-manager's "
                           "serviceaccount controller): pods in default are refused until it is", DEFAULT_SA_WAIT)
            return
        await clock.sleep(0.2)

