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
from pathlib import Path
from typing import Any

from nodeagent import quantity
from nodeagent.config import classic, versions, virtualnodes
from nodeagent.config import nodes as full_nodes
from nodeagent.config.cputopology import parse_cpu_topology, render_cpu_topology
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
    NodeAgentConfig,
    NodeConfig,
    NodeProfile,
    NumaNode,
    PluginSpec,
    PodResourcesConfig,
)
from nodeagent.config.nodeip import parse_node_ips
from nodeagent.errors import ConfigError, ValidationError
from nodeagent.faults import timeline as fault_timeline

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


_AGENT_KEYS = {
    "apiVersion", "kind", "nodeName", "rootDir", "stateDir", "adminSocket", "socketMode",
    "metricsBindAddress", "cgroupBackend", "cgroupfsRoot", "allocatableIgnoreEviction",
    "nodeProfile", "kubeReservedProcesses", "systemReservedProcesses", "plugins", "podResources",
    "evictionInterval", "devicePluginGracePeriod", "allocateTimeout", "shutdownTimeout",
    "examplesDir", "controlPlane", "virtualNodes", "classicControllers", "faults", "kubernetesVersion",
    "cluster", "node", "nodes", "nodeIP", "classicDRA",
}


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

    def field(key: str, parse: Callable[[object, str], Mapping[str, object]]) -> None:
        if doc.get(key) is not None:
            got = errors.run(lambda: parse(doc[key], f"{path}.{key}"))
            if got is not None:
                values.update(got)

    field("kubernetesVersion", _kubernetes_version)
    field("nodeName", _node_name)
    field("nodeIP", lambda v, p: {"node_ips": parse_node_ips(as_str(v, p), p)})
    for key, attr in (("rootDir", "root_dir"), ("stateDir", "state_dir"), ("adminSocket", "admin_socket"),
                      ("cgroupfsRoot", "cgroupfs_root")):
        field(key, lambda v, p, attr=attr: {attr: _abs_path(v, p, base)})  # type: ignore[misc]
    field("socketMode", lambda v, p: {"socket_mode": _socket_mode(v, p)})
    field("metricsBindAddress", _metrics_bind_address)
    field("cgroupBackend", lambda v, p: {"cgroup_backend": choice(v, p, frozenset({"simulated", "cgroupfs"}))})
    field("classicDRA", lambda v, p: {"classic_dra": as_bool(v, p)})
    field("allocatableIgnoreEviction", lambda v, p: {"allocatable_ignore_eviction": as_bool(v, p)})
    field("nodeProfile", lambda v, p: {"node_profile": _profile(v, p)})
    for key, attr in (("kubeReservedProcesses", "kube_reserved_processes"),
                      ("systemReservedProcesses", "system_reserved_processes")):
        field(key, lambda v, p, attr=attr: {  # type: ignore[misc]
            attr: tuple(as_str(x, f"{p}[{i}]") for i, x in enumerate(expect(v, list, p, "array of strings")))})
    field("plugins", lambda v, p: {"plugins": _plugins(v, p)})
    field("podResources", _pod_resources)
    for key, attr in (("evictionInterval", "eviction_interval"),
                      ("devicePluginGracePeriod", "device_plugin_grace_period"),
                      ("allocateTimeout", "allocate_timeout"), ("shutdownTimeout", "shutdown_timeout")):
        field(key, lambda v, p, attr=attr: {attr: parse_duration(v, p)})  # type: ignore[misc]
    field("controlPlane", lambda v, p: {"control_plane": _control_plane(v, p, base)})
    errors.run(lambda: _cluster_and_node(doc, values, base))
    field("virtualNodes", lambda v, p: {
        "virtual_nodes": virtualnodes.parse(expect(v, list, p, "array"), str(values["node_name"]))})
    field("classicControllers", lambda v, p: {
        "classic_controllers": classic.parse_classic_controllers(expect(v, list, p, "array"))})
    field("nodes", lambda v, p: {"nodes": full_nodes.parse(v, p, _plugins)})
    field("faults", lambda v, p: {"faults": _faults(v, p)})
    if doc.get("examplesDir"):
        field("examplesDir", lambda v, p: {"examples_dir": str(_abs_path(v, p, base))})
    errors.raise_all()
    return NodeAgentConfig(raw=dict(doc), **values)  # type: ignore[arg-type]


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
                    "bindingTimeout", "apiServer", "nodeMonitorGracePeriod"}, cp_path)
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
    )


def _cluster_and_node(doc: Mapping[str, Any], values: dict[str, object], base: Path | None) -> None:
    """`cluster` (the node joins the API of a kubeconfig, no embedded control plane) and `node`
    (the local node, off for a control plane alone); values gets cluster, node and, in cluster
    mode, a control plane turned off."""
    path = NODEAGENT
    c_path = f"{path}.cluster"
    c = expect(doc.get("cluster") or {}, dict, c_path, "object")
    check_keys(c, {"kubeconfig", "requestTimeout"}, c_path)
    if c.get("kubeconfig"):  # "" (as /configz renders the default): the control plane of this process
        values["cluster"] = ClusterConfig(
            kubeconfig=_abs_path(c["kubeconfig"], f"{c_path}.kubeconfig", base),
            request_timeout=parse_duration(c.get("requestTimeout", 10.0), f"{c_path}.requestTimeout"))
        cp = doc.get("controlPlane")
        if isinstance(cp, Mapping) and cp.get("enabled", False) is True:
            raise ConfigError(f"{path}.controlPlane.enabled: Invalid value: true: a node that joins a cluster "
                              f"({c_path}.kubeconfig) runs no embedded control plane")
        previous = values.get("control_plane")
        values["control_plane"] = dataclasses.replace(
            previous if isinstance(previous, ControlPlaneConfig) else ControlPlaneConfig(),
            enabled=False, api_server=APIServerConfig(bind_address=""))
    if doc.get("node") is not None:
        n_path = f"{path}.node"
        n = expect(doc["node"], dict, n_path, "object")
        check_keys(n, {"enabled", "leaseDurationSeconds", "statusUpdateFrequency", "statusReportFrequency"}, n_path)
        node = NodeConfig(
            enabled=as_bool(n.get("enabled", True), f"{n_path}.enabled"),
            lease_duration_seconds=as_int(n.get("leaseDurationSeconds", 40), f"{n_path}.leaseDurationSeconds",
                                          minimum=1),
            status_update_frequency=parse_duration(n.get("statusUpdateFrequency", 10.0),
                                                   f"{n_path}.statusUpdateFrequency"),
            status_report_frequency=parse_duration(n.get("statusReportFrequency", 300.0),
                                                   f"{n_path}.statusReportFrequency"),
        )
        for key, seconds in (("statusUpdateFrequency", node.status_update_frequency),
                             ("statusReportFrequency", node.status_report_frequency)):
            if seconds <= 0:
                raise ConfigError(f"{n_path}.{key}: must be positive")
        if not node.enabled and "cluster" in values and not doc.get("virtualNodes"):
            raise ConfigError(f"{n_path}.enabled: Invalid value: false: with {path}.cluster there is nothing "
                              f"left to run (a node alone needs its node or {path}.virtualNodes)")
        cp = values.get("control_plane")
        if not node.enabled and isinstance(cp, ControlPlaneConfig) and not cp.enabled and "cluster" not in values:
            raise ConfigError(f"{n_path}.enabled: Invalid value: false: a control plane alone needs "
                              f"{path}.controlPlane.enabled")
        values["node"] = node


def _faults(value: object, path: str) -> tuple[Mapping[str, Any], ...]:
    """The fault timeline, checked by its own parser (nodeagent.faults.timeline) and kept as written."""
    items = expect(value, list, path, "array")
    try:
        fault_timeline.parse(items, path)
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


def render_agent(a: NodeAgentConfig) -> dict[str, Any]:
    """The effective NodeAgentConfiguration as /configz serves it."""
    return {
        "kubernetesVersion": a.kubernetes_version,
        "nodeName": a.node_name,
        "nodeIP": ",".join(a.node_ips),
        "rootDir": str(a.root_dir),
        "stateDir": str(a.state_dir),
        "adminSocket": str(a.admin_socket),
        "socketMode": oct(a.socket_mode),
        "metricsBindAddress": a.metrics_bind_address,
        "cgroupBackend": a.cgroup_backend,
        "allocatableIgnoreEviction": a.allocatable_ignore_eviction,
        "classicDRA": a.classic_dra,
        "nodeProfile": {
            "capacity": {r: quantity.format_canonical(r, v) for r, v in a.node_profile.capacity.items()},
            "numaNodes": [
                {"id": n.id, "cpus": ",".join(map(str, n.cpus)), "memory": quantity.format_bytes(n.memory),
                 **({"hugepages": {h: quantity.format_bytes(v) for h, v in n.hugepages}} if n.hugepages else {})}
                for n in a.node_profile.numa_nodes
            ],
            "labels": dict(a.node_profile.labels),
            **render_cpu_topology(a.node_profile.cpu_topology),
        },
        "cgroupfsRoot": str(a.cgroupfs_root),
        "kubeReservedProcesses": list(a.kube_reserved_processes),
        "systemReservedProcesses": list(a.system_reserved_processes),
        "plugins": [
            # env values are often credentials; /configz is readable by anyone who reaches the port
            {"name": p.name, "command": list(p.command), "env": dict.fromkeys(p.env, REDACTED), "restart": p.restart}
            for p in a.plugins
        ],
        "podResources": {"qps": a.pod_resources.qps, "burst": a.pod_resources.burst},
        "evictionInterval": f"{a.eviction_interval:g}s",
        "devicePluginGracePeriod": f"{a.device_plugin_grace_period:g}s",
        "allocateTimeout": f"{a.allocate_timeout:g}s",
        "shutdownTimeout": f"{a.shutdown_timeout:g}s",
        "examplesDir": a.examples_dir,
        "controlPlane": {
            "enabled": a.control_plane.enabled,
            "allocationTimeout": f"{a.control_plane.allocation_timeout:g}s",
            "nodesToScore": a.control_plane.nodes_to_score,
            "percentageOfNodesToScore": a.control_plane.percentage_of_nodes_to_score,
            "bindingTimeout": f"{a.control_plane.binding_timeout:g}s",
            "apiServer": {
                "bindAddress": a.control_plane.api_server.bind_address,
                "kubeconfig": str(a.control_plane.api_server.kubeconfig or ""),
                "anonymous": a.control_plane.api_server.anonymous,
                "maxRequestBytes": a.control_plane.api_server.max_request_bytes,
            },
            "nodeMonitorGracePeriod": f"{a.control_plane.node_monitor_grace_period:g}s",
        },
        "cluster": {"kubeconfig": str(a.cluster.kubeconfig or ""),
                    "requestTimeout": f"{a.cluster.request_timeout:g}s"},
        "node": {"enabled": a.node.enabled, "leaseDurationSeconds": a.node.lease_duration_seconds,
                 "statusUpdateFrequency": f"{a.node.status_update_frequency:g}s",
                 "statusReportFrequency": f"{a.node.status_report_frequency:g}s"},
        # as written (parsed into a.virtual_nodes and a.classic_controllers at load)
        "virtualNodes": [dict(v) for v in a.raw.get("virtualNodes") or []],
        "nodes": full_nodes.render(a.nodes, REDACTED),
        "classicControllers": [dict(c) for c in a.raw.get("classicControllers") or []],
        "faults": [dict(f) for f in a.faults],
    }
