"""The NodeAgentConfiguration document: parsing into NodeAgentConfig and rendering it back.

Document 2 (nodeagent.dev/v1alpha1) holds everything the kubelet has no field for:
node name, directories and sockets, the simulated node profile, spawned plugins,
timeouts and the embedded control plane. Relative paths resolve against the config
file's folder. Parsing and rendering live together so one field name is spelled in
one module.
"""

from __future__ import annotations

import dataclasses
import math
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeagent.config import classic, controllers, versions, virtualnodes
from nodeagent.config import nodes as full_nodes
from nodeagent.config.cputopology import parse_cpu_topology, render_cpu_topology
from nodeagent.config.faults import parse_timeline
from nodeagent.config.fields import (
    Collector,
    as_bool,
    as_int,
    as_str,
    check_keys,
    choice,
    expect,
    is_loopback,
    map_path,
    parse_cpuset,
    parse_duration,
    split_host_port,
)
from nodeagent.config.model import (
    NODEAGENT,
    NODEAGENT_API_VERSION,
    APIServerConfig,
    ClusterConfig,
    ControlPlaneConfig,
    KubernetesConfig,
    NodeAgentConfig,
    NodeConfig,
    NodeProfile,
    NumaNode,
    PluginSpec,
    PodResourcesConfig,
    SchedulerConfig,
)
from nodeagent.config.nodeip import parse_node_ips
from nodeagent.config.realcp import parse_kubernetes, render_kubernetes
from nodeagent.errors import ConfigError, ValidationError
from nodeagent.util import quantity

_DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _profile(value: object, path: str) -> NodeProfile:
    doc = expect(value, dict, path, "object")
    check_keys(doc, {"capacity", "numaNodes", "labels", "cpuTopology"}, path)
    topology = (
        parse_cpu_topology(doc["cpuTopology"], f"{path}.cpuTopology") if doc.get("cpuTopology") is not None else None
    )
    topo_cpus = {n: tuple(sorted(t for c in topology.cores if c.numa_node == n for t in c.threads))
                 for n in {c.numa_node for c in topology.cores}} if topology else {}
    capacity: dict[str, int] = {}
    if doc.get("capacity") is not None:
        cap_path = f"{path}.capacity"
        for key, raw in expect(doc["capacity"], dict, cap_path, "object").items():
            p = map_path(cap_path, key)
            try:
                capacity[str(key)] = quantity.parse_nonnegative(str(key), raw)
            except quantity.QuantityError as err:
                raise ConfigError(f"{p}: {err}") from None
    numa: list[NumaNode] = []
    seen_cpus: set[int] = set()
    for i, item in enumerate(expect(doc.get("numaNodes") or [], list, f"{path}.numaNodes", "array")):
        p = f"{path}.numaNodes[{i}]"
        node = expect(item, dict, p, "object")
        check_keys(node, {"id", "cpus", "memory", "hugepages"}, p)
        cpus = parse_cpuset(node.get("cpus", ""), f"{p}.cpus")
        if topology is not None:
            # with cpuTopology, numaNodes only add memory; their cpus (optional) must agree
            nid = as_int(node.get("id", i), f"{p}.id", minimum=0)
            if nid not in topo_cpus:
                raise ConfigError(f"{p}.id: Invalid value: {nid}: cpuTopology has no NUMA node {nid}")
            if cpus and cpus != topo_cpus[nid]:
                raise ConfigError(f"{p}.cpus: Invalid value: cpuTopology puts cpus "
                                  f"{','.join(map(str, topo_cpus[nid]))} on NUMA node {nid}")
            cpus = topo_cpus[nid]
        if not cpus:
            raise ConfigError(f"{p}.cpus: Required value: a NUMA node needs at least one cpu")
        if seen_cpus & set(cpus):
            raise ConfigError(f"{p}.cpus: cpus {sorted(seen_cpus & set(cpus))} already belong to another node")
        seen_cpus |= set(cpus)
        try:
            mem = quantity.parse_nonnegative("memory", node.get("memory", 0))
        except quantity.QuantityError as err:
            raise ConfigError(f"{p}.memory: {err}") from None
        numa.append(NumaNode(id=as_int(node.get("id", i), f"{p}.id", minimum=0), cpus=cpus, memory=mem,
                             hugepages=_numa_hugepages(node.get("hugepages"), f"{p}.hugepages")))
    if len({n.id for n in numa}) != len(numa):
        raise ConfigError(f"{path}.numaNodes: NUMA node ids must be unique")
    labels = {
        str(k): as_str(v, map_path(f"{path}.labels", k))
        for k, v in expect(doc.get("labels") or {}, dict, f"{path}.labels", "object").items()
    }
    if topology is not None:
        given = {n.id for n in numa}
        numa.extend(NumaNode(id=n, cpus=c, memory=0) for n, c in sorted(topo_cpus.items()) if n not in given)
        numa.sort(key=lambda n: n.id)
    return NodeProfile(capacity=capacity, numa_nodes=tuple(numa), labels=labels, cpu_topology=topology)


def _numa_hugepages(value: object, path: str) -> tuple[tuple[str, int], ...]:
    """numaNodes[].hugepages: {hugepages-<size>: total bytes}, a whole number of pages."""
    out: list[tuple[str, int]] = []
    for key, raw in expect(value or {}, dict, path, "object").items():
        name, p = str(key), map_path(path, key)
        try:
            page = quantity.parse_nonnegative("memory", name.removeprefix("hugepages-"))
            total = quantity.parse_nonnegative(name, raw)
        except quantity.QuantityError as err:
            raise ConfigError(f"{p}: {err}") from None
        if not name.startswith("hugepages-") or page <= 0:
            raise ConfigError(f"{p}: the key must be hugepages-<page size>, e.g. hugepages-2Mi")
        if total % page:
            raise ConfigError(f"{p}: {raw} is not a whole number of {name.removeprefix('hugepages-')} pages")
        out.append((name, total))
    return tuple(sorted(out))


def _plugins(value: object, path: str) -> tuple[PluginSpec, ...]:
    out: list[PluginSpec] = []
    for i, item in enumerate(expect(value, list, path, "array")):
        p = f"{path}[{i}]"
        doc = expect(item, dict, p, "object")
        check_keys(doc, {"name", "command", "env", "restart"}, p)
        name = as_str(doc.get("name", ""), f"{p}.name")
        if not name:
            raise ConfigError(f"{p}.name: required")
        command = expect(doc.get("command"), list, f"{p}.command", "array of strings")
        if not command:
            raise ConfigError(f"{p}.command: required")
        env = {
            str(k): as_str(v, map_path(f"{p}.env", k))
            for k, v in expect(doc.get("env") or {}, dict, f"{p}.env", "object").items()
        }
        out.append(
            PluginSpec(
                name=name,
                command=tuple(as_str(c, f"{p}.command[{j}]") for j, c in enumerate(command)),
                env=env,
                restart=as_bool(doc.get("restart", True), f"{p}.restart"),
            )
        )
    return tuple(out)


def _abs_path(value: object, path: str, base: Path | None) -> Path:
    text = as_str(value, path)
    if not text:
        raise ConfigError(f"{path}: must not be empty")
    p = Path(text)
    if not p.is_absolute():
        if base is None:
            raise ConfigError(f'{path}: must be an absolute path, got "{text}"')
        p = (base / p).resolve()
    return p


def _socket_mode(value: object, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        mode = value
    else:
        text = as_str(value, path)
        try:
            mode = int(text, 8)
        except ValueError:
            raise ConfigError(f'{path}: invalid octal mode "{text}"') from None
    if not 0 <= mode <= 0o777:
        raise ConfigError(f"{path}: mode {oct(mode)} out of range")
    if mode & 0o002:
        # Connecting to a unix socket needs write permission on it, and the file mode is the
        # sockets' only access control: o+w would let every user on the host create and delete
        # any object through the admin socket. No deployment needs it (share with a group).
        raise ConfigError(
            f"{path}: mode {mode:04o} lets every user on the host connect to the sockets "
            "(the admin socket creates and deletes any object); use 0660 or tighter and a group"
        )
    return mode


REDACTED = "REDACTED"
"""What /configz shows instead of a plugin's env value (kubectl config view's word for secrets)."""




@dataclass(frozen=True)
class _Context:
    """What a field's parser may read besides its value: the document, the file's folder, and the
    attributes parsed before it (nodeName before virtualNodes, controlPlane before cluster)."""

    doc: Mapping[str, Any]
    base: Path | None
    values: dict[str, object]


@dataclass(frozen=True)
class _Field:
    """One NodeAgentConfiguration field, declared once: its key, how it parses (into NodeAgentConfig
    attributes) and how /configz and check-config render it back. The dataclass in model.py holds
    the attribute with its default and unit."""

    key: str
    parse: Callable[[object, str, _Context], Mapping[str, object]] | None  # None: parsed with another field
    render: Callable[[NodeAgentConfig], object]
    always: bool = False  # parse even when the field is absent (its default depends on other fields)


def _kubernetes_version(value: object, path: str) -> dict[str, object]:
    version = as_str(value, path)
    versions.minor(version, path)
    return {"kubernetes_version": version}


def _node_name(value: object, path: str) -> dict[str, object]:
    name = as_str(value, path)
    if not _DNS1123.fullmatch(name) or len(name) > 253:
        raise ConfigError(
            f'{path}: invalid value "{name}": a lowercase RFC 1123 subdomain must consist of '
            "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric"
        )
    return {"node_name": name}


def _metrics_bind_address(value: object, path: str) -> dict[str, object]:
    addr = as_str(value, path)
    _host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f'{path}: expected "host:port", got "{addr}"')
    return {"metrics_bind_address": addr}


def _pod_resources(value: object, pr_path: str) -> dict[str, object]:
    pr = expect(value, dict, pr_path, "object")
    check_keys(pr, {"qps", "burst"}, pr_path)
    qps: float = expect(pr.get("qps", 100), (int, float), f"{pr_path}.qps", "number")
    if not math.isfinite(qps) or qps <= 0:
        raise ConfigError(f"{pr_path}.qps: must be positive")
    return {"pod_resources": PodResourcesConfig(
        qps=float(qps), burst=as_int(pr.get("burst", 10), f"{pr_path}.burst", minimum=1))}


def _control_plane(value: object, cp_path: str, base: Path | None) -> ControlPlaneConfig:
    cp = expect(value, dict, cp_path, "object")
    check_keys(cp, {"enabled", "allocationTimeout", "nodesToScore", "percentageOfNodesToScore",
                    "bindingTimeout", "apiServer", "nodeMonitorGracePeriod", "nodeStartupGracePeriod",
                    "nodeMonitorPeriod", "scheduler", "kubernetes",
                    "controllers"}, cp_path)
    percentage = as_int(cp.get("percentageOfNodesToScore", 0), f"{cp_path}.percentageOfNodesToScore")
    if not 0 <= percentage <= 100:
        raise ConfigError(f"{cp_path}.percentageOfNodesToScore: Invalid value: {percentage}: "
                          "not in valid range [0-100]")
    return ControlPlaneConfig(
        enabled=as_bool(cp.get("enabled", True), f"{cp_path}.enabled"),
        allocation_timeout=parse_duration(cp.get("allocationTimeout", 10.0), f"{cp_path}.allocationTimeout"),
        nodes_to_score=as_int(cp.get("nodesToScore", 100), f"{cp_path}.nodesToScore", minimum=1),
        percentage_of_nodes_to_score=percentage,
        binding_timeout=parse_duration(cp.get("bindingTimeout", 600.0), f"{cp_path}.bindingTimeout"),
        api_server=_api_server(cp.get("apiServer"), f"{cp_path}.apiServer", base),
        node_monitor_grace_period=parse_duration(cp.get("nodeMonitorGracePeriod", 50.0),
                                                 f"{cp_path}.nodeMonitorGracePeriod"),
        node_startup_grace_period=parse_duration(cp.get("nodeStartupGracePeriod", 60.0),
                                                 f"{cp_path}.nodeStartupGracePeriod"),
        node_monitor_period=parse_duration(cp.get("nodeMonitorPeriod", 5.0), f"{cp_path}.nodeMonitorPeriod"),
        scheduler=_scheduler(cp.get("scheduler"), f"{cp_path}.scheduler"),
        kubernetes=_kubernetes(cp, cp_path, base),
        controllers=controllers.parse(cp.get("controllers"), f"{cp_path}.controllers"),
    )


def _kubernetes(cp: Mapping[str, Any], cp_path: str, base: Path | None) -> KubernetesConfig | None:
    """controlPlane.kubernetes, and what may not go with it: the real control plane replaces the embedded
    one, so settings that only the embedded one reads are refused rather than silently ignored."""
    if cp.get("kubernetes") is None:
        return None
    path = f"{cp_path}.kubernetes"
    k = parse_kubernetes(cp["kubernetes"], path, base)
    api = cp.get("apiServer")
    if isinstance(api, Mapping):
        if api.get("bindAddress", "127.0.0.1:6443") == "":
            raise ConfigError(f'{cp_path}.apiServer.bindAddress: Required value: kube-apiserver ({path}) serves '
                              "on this address")
        if api.get("anonymous") is True:
            raise ConfigError(f"{cp_path}.apiServer.anonymous: Forbidden: the embedded API server's setting; "
                              f"pass --anonymous-auth to kube-apiserver in {path}.extraArgs instead")
    if cp.get("enabled") is False:
        raise ConfigError(f"{cp_path}.enabled: Invalid value: false: {path} runs a control plane "
                          "(leave it out, or leave out enabled)")
    if isinstance(cp.get("scheduler"), Mapping) and cp["scheduler"].get("enabled") is False:
        raise ConfigError(f"{cp_path}.scheduler.enabled: Forbidden: the embedded scheduler's setting; with {path} "
                          "kube-scheduler runs")
    return k


def _scheduler(value: object, path: str) -> SchedulerConfig:
    doc = expect(value if value is not None else {}, dict, path, "object")
    check_keys(doc, {"enabled"}, path)
    return SchedulerConfig(enabled=as_bool(doc.get("enabled", True), f"{path}.enabled"))


def _cluster_and_node(doc: Mapping[str, Any], values: Mapping[str, object], base: Path | None) -> dict[str, object]:
    """`cluster` (the node joins the API of a kubeconfig, no embedded control plane) and `node`
    (the local node, off for a control plane alone): the cluster, node and, in cluster mode, a
    control plane turned off (`values` holds the control plane parsed before)."""
    path = NODEAGENT
    out: dict[str, object] = {}
    c_path = f"{path}.cluster"
    c = expect(doc.get("cluster") or {}, dict, c_path, "object")
    check_keys(c, {"kubeconfig", "requestTimeout"}, c_path)
    cp_doc = doc.get("controlPlane")
    real = isinstance(cp_doc, Mapping) and cp_doc.get("kubernetes") is not None
    if real and c.get("kubeconfig"):
        raise ConfigError(f"{c_path}.kubeconfig: Forbidden: may not be set with {path}.controlPlane.kubernetes "
                          "(the node joins the control plane this process starts)")
    if real and isinstance(doc.get("nodes"), list):
        for i, group in enumerate(doc["nodes"]):
            if isinstance(group, Mapping) and group.get("kubeconfig"):
                raise ConfigError(f"{path}.nodes[{i}].kubeconfig: Forbidden: may not be set with "
                                  f"{path}.controlPlane.kubernetes (each node joins the control plane this process "
                                  "starts with the credentials it issues)")
    if c.get("kubeconfig"):  # "" (as /configz renders the default): the control plane of this process
        out["cluster"] = ClusterConfig(
            kubeconfig=_abs_path(c["kubeconfig"], f"{c_path}.kubeconfig", base),
            request_timeout=parse_duration(c.get("requestTimeout", 10.0), f"{c_path}.requestTimeout"))
        cp = doc.get("controlPlane")
        if isinstance(cp, Mapping) and cp.get("enabled", False) is True:
            raise ConfigError(f"{path}.controlPlane.enabled: Invalid value: true: a node that joins a cluster "
                              f"({c_path}.kubeconfig) runs no embedded control plane")
        previous = values.get("control_plane")
        out["control_plane"] = dataclasses.replace(
            previous if isinstance(previous, ControlPlaneConfig) else ControlPlaneConfig(),
            enabled=False, api_server=APIServerConfig(bind_address=""))
    if doc.get("node") is not None:
        n_path = f"{path}.node"
        n = expect(doc["node"], dict, n_path, "object")
        check_keys(n, {"enabled", "leaseDurationSeconds", "statusUpdateFrequency", "statusReportFrequency",
                       "selfBinding"}, n_path)
        node = NodeConfig(
            enabled=as_bool(n.get("enabled", True), f"{n_path}.enabled"),
            lease_duration_seconds=as_int(n.get("leaseDurationSeconds", 40), f"{n_path}.leaseDurationSeconds",
                                          minimum=1),
            status_update_frequency=parse_duration(n.get("statusUpdateFrequency", 10.0),
                                                   f"{n_path}.statusUpdateFrequency"),
            status_report_frequency=parse_duration(n.get("statusReportFrequency", 300.0),
                                                   f"{n_path}.statusReportFrequency"),
            self_binding=as_bool(n.get("selfBinding", False), f"{n_path}.selfBinding"),
        )
        for key, seconds in (("statusUpdateFrequency", node.status_update_frequency),
                             ("statusReportFrequency", node.status_report_frequency)):
            if seconds <= 0:
                raise ConfigError(f"{n_path}.{key}: must be positive")
        if not node.enabled and "cluster" in out and not doc.get("virtualNodes"):
            raise ConfigError(f"{n_path}.enabled: Invalid value: false: with {path}.cluster there is nothing "
                              f"left to run (a node alone needs its node or {path}.virtualNodes)")
        cp = out.get("control_plane", values.get("control_plane"))
        if not node.enabled and isinstance(cp, ControlPlaneConfig) and not cp.enabled and "cluster" not in out:
            raise ConfigError(f"{n_path}.enabled: Invalid value: false: a control plane alone needs "
                              f"{path}.controlPlane.enabled")
        if node.self_binding:
            if real:
                raise ConfigError(f"{n_path}.selfBinding: Invalid value: true: kube-scheduler binds pods "
                                  f"({path}.controlPlane.kubernetes)")
            if "cluster" in out:
                raise ConfigError(f"{n_path}.selfBinding: Invalid value: true: a node that joins a cluster "
                                  f"({c_path}.kubeconfig) leaves binding to the cluster's scheduler")
            if not isinstance(cp, ControlPlaneConfig) or cp.schedules:  # absent: the default, scheduling
                raise ConfigError(f"{n_path}.selfBinding: Invalid value: true: the embedded scheduler binds pods "
                                  f"(self-binding needs {path}.controlPlane.scheduler.enabled: false)")
        out["node"] = node
    return out


def _faults(value: object, path: str) -> tuple[Mapping[str, Any], ...]:
    """The fault timeline, checked by its own parser (config/faults.py) and kept as written."""
    items = expect(value, list, path, "array")
    try:
        parse_timeline(items, path)
    except ValidationError as err:
        raise ConfigError(str(err)) from None
    return tuple(dict(x) for x in items)


def _api_server(value: object, path: str, base: Path | None) -> APIServerConfig:
    if value is None:
        return APIServerConfig()
    doc = expect(value, dict, path, "object")
    check_keys(doc, {"bindAddress", "kubeconfig", "anonymous", "maxRequestBytes"}, path)
    addr = as_str(doc.get("bindAddress", "127.0.0.1:6443"), f"{path}.bindAddress")
    host = split_host_port(addr, f"{path}.bindAddress")[0] if addr else ""
    anonymous = as_bool(doc.get("anonymous", False), f"{path}.anonymous")
    if anonymous and addr and not is_loopback(host):
        raise ConfigError(f"{path}.anonymous: anonymous access is only allowed on a loopback bindAddress, "
                          f'got "{addr}"')
    kubeconfig = _abs_path(doc["kubeconfig"], f"{path}.kubeconfig", base) if doc.get("kubeconfig") else None
    return APIServerConfig(
        bind_address=addr,
        kubeconfig=kubeconfig,
        anonymous=anonymous,
        max_request_bytes=as_int(doc.get("maxRequestBytes", 3 * 1024 * 1024), f"{path}.maxRequestBytes", minimum=1024),
    )


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _render_profile(a: NodeAgentConfig) -> dict[str, Any]:
    profile = a.node_profile
    return {
        "capacity": {r: quantity.format_canonical(r, v) for r, v in profile.capacity.items()},
        "numaNodes": [
            {"id": n.id, "cpus": ",".join(map(str, n.cpus)), "memory": quantity.format_bytes(n.memory),
             **({"hugepages": {h: quantity.format_bytes(v) for h, v in n.hugepages}} if n.hugepages else {})}
            for n in profile.numa_nodes
        ],
        "labels": dict(profile.labels),
        **render_cpu_topology(profile.cpu_topology),
    }


def _render_control_plane(a: NodeAgentConfig) -> dict[str, Any]:
    cp = a.control_plane
    return {
        "enabled": cp.enabled,
        "allocationTimeout": _seconds(cp.allocation_timeout),
        "nodesToScore": cp.nodes_to_score,
        "percentageOfNodesToScore": cp.percentage_of_nodes_to_score,
        "bindingTimeout": _seconds(cp.binding_timeout),
        "apiServer": {
            "bindAddress": cp.api_server.bind_address,
            "kubeconfig": str(cp.api_server.kubeconfig or ""),
            "anonymous": cp.api_server.anonymous,
            "maxRequestBytes": cp.api_server.max_request_bytes,
        },
        "nodeMonitorGracePeriod": _seconds(cp.node_monitor_grace_period),
        "nodeStartupGracePeriod": _seconds(cp.node_startup_grace_period),
        "nodeMonitorPeriod": _seconds(cp.node_monitor_period),
        "scheduler": {"enabled": cp.scheduler.enabled},
        **({"kubernetes": render_kubernetes(cp.kubernetes)} if cp.kubernetes is not None else {}),
        "controllers": list(cp.controllers),
    }


def _plugin_list(plugins: tuple[PluginSpec, ...]) -> list[dict[str, Any]]:
    # env values are often credentials; /configz is readable by anyone who reaches the port
    return [{"name": p.name, "command": list(p.command), "env": dict.fromkeys(p.env, REDACTED), "restart": p.restart}
            for p in plugins]


def _path_field(key: str, attr: str) -> _Field:
    return _Field(key, lambda v, p, c: {attr: _abs_path(v, p, c.base)}, lambda a: str(getattr(a, attr)))


def _duration_field(key: str, attr: str) -> _Field:
    return _Field(key, lambda v, p, c: {attr: parse_duration(v, p)}, lambda a: _seconds(getattr(a, attr)))


def _strings(value: object, path: str) -> tuple[str, ...]:
    return tuple(as_str(x, f"{path}[{i}]") for i, x in enumerate(expect(value, list, path, "array of strings")))


# Every NodeAgentConfiguration field, in the order they parse (a field may read those before it) and render.
_FIELDS: tuple[_Field, ...] = (
    _Field("kubernetesVersion", lambda v, p, c: _kubernetes_version(v, p), lambda a: a.kubernetes_version),
    _Field("nodeName", lambda v, p, c: _node_name(v, p), lambda a: a.node_name),
    _Field("nodeIP", lambda v, p, c: {"node_ips": parse_node_ips(as_str(v, p), p)}, lambda a: ",".join(a.node_ips)),
    _path_field("rootDir", "root_dir"),
    _path_field("stateDir", "state_dir"),
    _path_field("adminSocket", "admin_socket"),
    _Field("sysfsDir", lambda v, p, c: {"sysfs_dir": _abs_path(v, p, c.base)},
           lambda a: str(a.sysfs_dir or a.state_dir / "host" / "sys")),
    _Field("socketMode", lambda v, p, c: {"socket_mode": _socket_mode(v, p)}, lambda a: oct(a.socket_mode)),
    _Field("metricsBindAddress", lambda v, p, c: _metrics_bind_address(v, p), lambda a: a.metrics_bind_address),
    _Field("cgroupBackend", lambda v, p, c: {"cgroup_backend": choice(v, p, frozenset({"simulated", "cgroupfs"}))},
           lambda a: a.cgroup_backend),
    _Field("allocatableIgnoreEviction", lambda v, p, c: {"allocatable_ignore_eviction": as_bool(v, p)},
           lambda a: a.allocatable_ignore_eviction),
    _Field("classicDRA", lambda v, p, c: {"classic_dra": as_bool(v, p)}, lambda a: a.classic_dra),
    _Field("nodeProfile", lambda v, p, c: {"node_profile": _profile(v, p)}, _render_profile),
    _path_field("cgroupfsRoot", "cgroupfs_root"),
    _Field("kubeReservedProcesses", lambda v, p, c: {"kube_reserved_processes": _strings(v, p)},
           lambda a: list(a.kube_reserved_processes)),
    _Field("systemReservedProcesses", lambda v, p, c: {"system_reserved_processes": _strings(v, p)},
           lambda a: list(a.system_reserved_processes)),
    _Field("plugins", lambda v, p, c: {"plugins": _plugins(v, p)}, lambda a: _plugin_list(a.plugins)),
    _Field("podResources", lambda v, p, c: _pod_resources(v, p),
           lambda a: {"qps": a.pod_resources.qps, "burst": a.pod_resources.burst}),
    _duration_field("evictionInterval", "eviction_interval"),
    _duration_field("devicePluginGracePeriod", "device_plugin_grace_period"),
    _duration_field("allocateTimeout", "allocate_timeout"),
    _duration_field("shutdownTimeout", "shutdown_timeout"),
    # "" (as /configz renders the default) means none
    _Field("examplesDir", lambda v, p, c: {"examples_dir": str(_abs_path(v, p, c.base))} if v else {},
           lambda a: a.examples_dir),
    _Field("controlPlane", lambda v, p, c: {"control_plane": _control_plane(v, p, c.base)}, _render_control_plane),
    # cluster and node are parsed together: joining a cluster turns the embedded control plane off
    _Field("cluster", lambda v, p, c: _cluster_and_node(c.doc, c.values, c.base),
           lambda a: {"kubeconfig": str(a.cluster.kubeconfig or ""),
                      "requestTimeout": _seconds(a.cluster.request_timeout)}, always=True),
    _Field("node", None, lambda a: {"enabled": a.node.enabled, "leaseDurationSeconds": a.node.lease_duration_seconds,
                                    "statusUpdateFrequency": _seconds(a.node.status_update_frequency),
                                    "statusReportFrequency": _seconds(a.node.status_report_frequency),
                                    "selfBinding": a.node.self_binding}),
    # as written (parsed into specs at load, so check-config refuses what run would)
    _Field("virtualNodes", lambda v, p, c: {
        "virtual_nodes": virtualnodes.parse(expect(v, list, p, "array"), str(c.values["node_name"]))},
        lambda a: [dict(v) for v in a.raw.get("virtualNodes") or []]),
    _Field("nodes", lambda v, p, c: {"nodes": full_nodes.parse(v, p, _plugins)},
           lambda a: full_nodes.render(a.nodes, REDACTED)),
    _Field("classicControllers", lambda v, p, c: {
        "classic_controllers": classic.parse_classic_controllers(expect(v, list, p, "array"))},
        lambda a: [dict(c) for c in a.raw.get("classicControllers") or []]),
    _Field("faults", lambda v, p, c: {"faults": _faults(v, p)}, lambda a: [dict(f) for f in a.faults]),
)
_AGENT_KEYS = frozenset({"apiVersion", "kind", *(f.key for f in _FIELDS)})


def parse_agent(doc: Mapping[str, Any], base: Path | None = None) -> NodeAgentConfig:
    """Parse the NodeAgentConfiguration; relative paths resolve against `base` (the file's folder).
    Every field is parsed even when another is wrong, and every error is reported at once
    (ConfigErrors when there are several); one field reports its first error."""
    path = NODEAGENT
    errors = Collector()
    for key in doc:
        if key not in _AGENT_KEYS:
            errors.add(f"{path}.{key}: unknown field")
    api = doc.get("apiVersion", NODEAGENT_API_VERSION)
    if api != NODEAGENT_API_VERSION:
        errors.add(f'{path}.apiVersion: unsupported "{api}" (want {NODEAGENT_API_VERSION})')
    values: dict[str, object] = {"node_name": socket.gethostname().lower()}
    context = _Context(doc, base, values)
    for f in _FIELDS:
        parse = f.parse
        if parse is None or (doc.get(f.key) is None and not f.always):
            continue
        got = errors.run(lambda parse=parse, f=f: parse(doc.get(f.key), f"{path}.{f.key}", context))  # type: ignore[misc]
        if got is not None:
            values.update(got)
    errors.raise_all()
    return NodeAgentConfig(raw=dict(doc), **values)  # type: ignore[arg-type]


def render_agent(a: NodeAgentConfig) -> dict[str, Any]:
    """The effective NodeAgentConfiguration as /configz serves it."""
    return {f.key: f.render(a) for f in _FIELDS}
