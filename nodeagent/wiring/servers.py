"""Wiring of what the daemon serves to clients: pod-resources, Pods API and admin sockets, HTTP.

Exists because these servers only read the node (pods, devices, cpus, memory, claims)
and must be built after it: the pod-resources socket with its metrics and rate limit,
the admin API's backend and socket, and the HTTP server with the Prometheus collectors,
the stats summary, /healthz (every socket serving) and /configz.
"""

from __future__ import annotations

import resource
from collections.abc import Callable, Sequence
from typing import Any

from nodeagent import config as config_mod
from nodeagent.admin import service as admin_service
from nodeagent.admin.backend import NodeBackend
from nodeagent.config import Config
from nodeagent.config.versions import release_version
from nodeagent.devices.manager import DeviceManager
from nodeagent.dra.manager import DRAManager
from nodeagent.host.address import node_addresses, resolve_node_ips
from nodeagent.metrics import collectors
from nodeagent.metrics.http import NodeHTTPServer
from nodeagent.metrics.instruments import Instruments
from nodeagent.metrics.summary import SummaryBuilder
from nodeagent.node import DeviceHealthRouter
from nodeagent.objects.pod.model import Pod
from nodeagent.podresources import service as podresources_service
from nodeagent.pods.manager import PodManager
from nodeagent.pods.qos import pod_qos
from nodeagent.podsapi import model as podsapi_model
from nodeagent.podsapi import service as podsapi_service
from nodeagent.podsapi.provider import PodManagerView
from nodeagent.podsapi.source import PodsSource
from nodeagent.rpc.interceptors import MetricsInterceptor, rate_limit
from nodeagent.rpc.server import Service, UnixServer
from nodeagent.util.clock import Clock
from nodeagent.util.ticker import Ticker
from nodeagent.wiring.dra import DRAParts
from nodeagent.wiring.node_resources import NodeBase, NodeResources
from nodeagent.wiring.running import Running


def pod_resources_server(
    cfg: Config, clock: Clock, base: NodeBase, res: NodeResources, dra: DRAManager
) -> UnixServer:
    """The pod-resources socket (v1 and v1alpha1), rate limited as configured; not started."""
    return UnixServer(
        cfg.pod_resources_socket,
        podresources_service.services(
            res.pods, res.devices.manager, base.cm.cpu_manager, base.cm.memory_manager, dra,
            instruments=base.instruments, gates=cfg.kubelet.gate,
        ),
        mode=cfg.agent.socket_mode,
        interceptors=[
            MetricsInterceptor(base.instruments),
            rate_limit(cfg.agent.pod_resources.qps, cfg.agent.pod_resources.burst, clock.monotonic),
            base.faults.injector.server_interceptor(),
        ],
        what="pod-resources socket",
        bind_dir=base.bind_dir,
    )


def pods_api_server(
    cfg: Config, clock: Clock, base: NodeBase, pods: PodManager, synced: Callable[[], bool],
    interval: float | None = None, ticker: Ticker | None = None,
) -> tuple[UnixServer, PodsSource] | None:
    """The kubelet Pods API socket (KEP-4188) and its source, if the PodsAPI gate is on; not started.

    Rate limited as the kubelet limits it (100 QPS, burst 10, unary calls); answers
    FAILED_PRECONDITION until `synced()` (the node restored its pods and synced with the store).
    `interval`: how often the source looks for changes to publish (None: its default, 50 ms);
    `ticker`: a ticker shared by many nodes that does the looking instead of a timer of its own.
    """
    if not cfg.kubelet.gate("PodsAPI"):
        return None
    source = PodsSource(PodManagerView(pods), synced=synced, clock=clock, ticker=ticker,
                        interval=PodsSource.DEFAULT_INTERVAL if interval is None else interval)
    server = UnixServer(
        cfg.pods_api_socket,
        podsapi_service.services(source),
        mode=cfg.agent.socket_mode,
        interceptors=[
            MetricsInterceptor(base.instruments),
            rate_limit(podsapi_model.DEFAULT_QPS, podsapi_model.DEFAULT_BURST, clock.monotonic),
            base.faults.injector.server_interceptor(),
        ],
        what="pods API socket",
        bind_dir=base.bind_dir,
    )
    return server, source


def admin_backend(cfg: Config, clock: Clock, base: NodeBase, res: NodeResources, dra: DRAParts) -> NodeBackend:
    """The admin API's view of the node (pods, resources, conditions, device health, claims)."""
    return NodeBackend(
        node_name=cfg.agent.node_name,
        labels=cfg.agent.node_profile.labels,
        pods=res.pods,
        recorder=base.recorder,
        resources=res.node.node_resources,
        conditions=base.cm.conditions,
        devices=DeviceHealthRouter(res.devices.manager, dra.registry),
        clock=clock,
        claims_describe=dra.manager.describe_lines,
        pod_facts=lambda pod: _pod_facts(base, pod),
        gates=cfg.kubelet.feature_gates,
        addresses=node_addresses(resolve_node_ips(cfg.agent.node_ips, base.probe), cfg.agent.node_name),
        system=base.probe.facts().system,
        kubelet_version=release_version(cfg.agent.kubernetes_version),
        controller_attach_detach=bool(cfg.kubelet.raw.get("enableControllerAttachDetach", True)),
    )


def _pod_facts(base: NodeBase, pod: Pod) -> list[str]:
    """What only this node knows of a pod for `nodeagent describe`: its cgroup and exclusive CPUs."""
    lines = [f"Cgroup: {base.cm.naming.pod(pod.uid, pod_qos(pod))}"]
    for container, cpus in sorted(base.cm.cpu_manager.assignments().get(pod.uid, {}).items()):
        if cpus:
            lines.append(f"Exclusive CPUs ({container}): {','.join(map(str, sorted(cpus)))}")
    return lines


def admin_server(
    cfg: Config, backend: NodeBackend, instruments: Instruments, extra: Sequence[Service] = ()
) -> UnixServer:
    """The admin API socket (with `extra` services next to Admin: the faults'); not started."""
    return UnixServer(
        cfg.agent.admin_socket,
        [*admin_service.services(backend), *extra],
        mode=cfg.agent.socket_mode,
        interceptors=[MetricsInterceptor(instruments)],
        what="admin socket",
        peer_check=True,  # root and the daemon's uid only, whatever socketMode allows
    )


async def start_sockets(servers: Sequence[UnixServer], running: Running) -> None:
    """Bind and start each server in order, recording it as running."""
    for server in servers:
        await server.start()
        running.servers.append(server)


def build_http(
    cfg: Config, clock: Clock, base: NodeBase, res: NodeResources, running: Running
) -> tuple[NodeHTTPServer, Callable[[], dict[str, Any]]]:
    """Register the node's collectors and build the HTTP server (metrics, stats summary, healthz, configz),
    not started; with the stats summary callable (the kubelet endpoint serves both). A node without
    metricsBindAddress (a full virtual node) gets the handlers only, for its kubelet endpoint."""
    registry = base.registry
    collectors.register_collectors(registry, lambda: res.node.metrics_snapshot(res.pods))
    collectors.register_device_collector(registry, lambda: _device_figures(res.devices.manager))
    summary = SummaryBuilder(cfg.agent.node_name, res.node.stats_provider(res.pods, base.probe), _self_usage, clock)
    http = NodeHTTPServer(
        cfg.agent.metrics_bind_address or None,
        registry,
        health=lambda: all(s.serving for s in running.servers),
        configz=config_mod.effective(cfg),
        summary=summary.summary,
    )
    return http, summary.summary


async def start_http(http: NodeHTTPServer, running: Running) -> None:
    """Start the HTTP server built by build_http."""
    await http.start()
    running.closers.append(http.stop)


def _self_usage() -> tuple[float, int]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def _device_figures(manager: DeviceManager) -> list[collectors.DeviceFigures]:
    return [
        collectors.DeviceFigures(s.resource, healthy=s.healthy, unhealthy=s.unhealthy,
                                 allocated=s.allocated, registered=s.registered)
        for s in manager.snapshot()
    ]
