"""Configuration: one YAML file, two documents, parsed once into frozen dataclasses.

Document 1 is a `KubeletConfiguration` (kubelet.config.k8s.io/v1beta1) with the
kubelet's own field names; document 2 is a `NodeAgentConfiguration`
(nodeagent.dev/v1alpha1) for everything the kubelet does not have. Every wrong key,
type or value raises ConfigError naming its path, e.g.
`KubeletConfiguration.evictionHard["memory.available"]: invalid quantity "10XB"`.

This module only parses and validates; it reads no environment and touches no file
except the one it is asked to load. Paths are derived from root_dir/state_dir here so
nothing below has to guess.
"""

from __future__ import annotations

import dataclasses
import math
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from nodeagent import quantity
from nodeagent.errors import ConfigError

KUBELET_API_VERSION = "kubelet.config.k8s.io/v1beta1"
NODEAGENT_API_VERSION = "nodeagent.dev/v1alpha1"
KUBELET = "KubeletConfiguration"
NODEAGENT = "NodeAgentConfiguration"

# The kubelet's defaults (pkg/kubelet/apis/config/v1beta1/defaults_linux.go).
DEFAULT_EVICTION_HARD: Mapping[str, str] = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
    "imagefs.inodesFree": "5%",
}
EVICTION_SIGNALS = frozenset(
    {
        "memory.available",
        "nodefs.available",
        "nodefs.inodesFree",
        "imagefs.available",
        "imagefs.inodesFree",
        "containerfs.available",
        "containerfs.inodesFree",
        "pid.available",
        "allocatableMemory.available",
    }
)
ENFORCE_KEYS = frozenset({"pods", "kube-reserved", "system-reserved", "none"})
RESERVABLE = frozenset({"cpu", "memory", "ephemeral-storage", "pid"})
CPU_MANAGER_POLICIES = frozenset({"none", "static"})
TOPOLOGY_POLICIES = frozenset({"none", "best-effort", "restricted", "single-numa-node"})

# Default feature gates nodeagent reads (current kubelet defaults).
DEFAULT_FEATURE_GATES: Mapping[str, bool] = {
    "KubeletPodResourcesGet": True,
    "KubeletPodResourcesGetAllocatable": True,
    "KubeletPodResourcesDynamicResources": True,
    "ResourceHealthStatus": True,
    "DRAPrioritizedList": True,
    "DRAControlPlaneController": False,
    "DynamicResourceAllocation": True,
}

# KubeletConfiguration fields that nodeagent accepts (so a real kubelet config loads)
# but that have no effect on a fake node.
_KUBELET_IGNORED = frozenset(
    {
        "address", "port", "readOnlyPort", "tlsCertFile", "tlsPrivateKeyFile", "authentication",
        "authorization", "clusterDNS", "clusterDomain", "healthzBindAddress", "healthzPort",
        "syncFrequency", "httpCheckFrequency", "nodeStatusUpdateFrequency",
        "nodeStatusReportFrequency", "imageMinimumGCAge", "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent", "volumeStatsAggPeriod", "runtimeRequestTimeout",
        "hairpinMode", "serializeImagePulls", "rotateCertificates", "serverTLSBootstrap",
        "containerLogMaxSize", "containerLogMaxFiles", "containerRuntimeEndpoint",
        "imageServiceEndpoint", "streamingConnectionIdleTimeout", "logging", "shutdownGracePeriod",
        "shutdownGracePeriodCriticalPods", "memorySwap", "failSwapOn", "podPidsLimit",
        "resolvConf", "protectKernelDefaults", "makeIPTablesUtilChains", "kubeletCgroups",
        "systemCgroups", "memoryManagerPolicy", "reservedMemory", "topologyManagerPolicyOptions",
        "cpuCFSQuota", "cpuCFSQuotaPeriod", "registerNode", "registerWithTaints", "providerID",
        "staticPodURL", "staticPodURLHeader", "enableServer", "enableDebuggingHandlers",
        "enableProfilingHandler", "enableContentionProfiling", "enableSystemLogHandler",
        "enableSystemLogQuery", "podLogsDir", "seccompDefault", "localStorageCapacityIsolation",
        "containerLogMaxWorkers", "containerLogMonitorInterval", "eventRecordQPS", "eventBurst",
        "kubeAPIQPS", "kubeAPIBurst", "podsPerCore", "cpuManagerReconcilePeriod",
        "oomScoreAdj", "maxOpenFiles", "contentType", "iptablesMasqueradeBit",
        "iptablesDropBit", "evictionMinimumReclaim", "evictionMaxPodGracePeriod",
        "mergeDefaultEvictionSettings", "imageMaximumGCAge", "maxParallelImagePulls",
    }
)


@dataclass(frozen=True)
class Threshold:
    """One eviction threshold: an absolute quantity (canonical units) or a percentage."""

    signal: str
    quantity: int | None = None
    percentage: float | None = None  # fraction in [0, 1]

    def resolve(self, capacity: int) -> int:
        """Threshold in canonical units against `capacity` (percentages round down, as Go does)."""
        if self.quantity is not None:
            return self.quantity
        return int(capacity * (self.percentage or 0.0))


@dataclass(frozen=True)
class KubeletConfig:
    """The KubeletConfiguration fields nodeagent honours (kubelet names in comments)."""

    kube_reserved: Mapping[str, int] = field(default_factory=dict)  # kubeReserved
    system_reserved: Mapping[str, int] = field(default_factory=dict)  # systemReserved
    eviction_hard: Mapping[str, Threshold] = field(default_factory=dict)  # evictionHard
    eviction_soft: Mapping[str, Threshold] = field(default_factory=dict)  # evictionSoft
    eviction_soft_grace_period: Mapping[str, float] = field(default_factory=dict)  # seconds
    eviction_pressure_transition_period: float = 300.0  # seconds
    enforce_node_allocatable: tuple[str, ...] = ("pods",)
    kube_reserved_cgroup: str = ""
    system_reserved_cgroup: str = ""
    cgroup_driver: str = "cgroupfs"  # cgroupfs | systemd (naming of the tree)
    cgroup_root: str = "/"
    cgroups_per_qos: bool = True
    cpu_manager_policy: str = "none"
    reserved_system_cpus: tuple[int, ...] = ()
    topology_manager_policy: str = "none"
    topology_manager_scope: str = "container"
    max_pods: int = 110
    static_pod_path: str = ""
    file_check_frequency: float = 20.0  # seconds between static pod path scans (fileCheckFrequency)
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: dict(DEFAULT_FEATURE_GATES))
    raw: Mapping[str, Any] = field(default_factory=dict)  # the document as given, for /configz

    def gate(self, name: str) -> bool:
        return bool(self.feature_gates.get(name, DEFAULT_FEATURE_GATES.get(name, False)))


@dataclass(frozen=True)
class NumaNode:
    id: int
    cpus: tuple[int, ...]
    memory: int  # bytes


@dataclass(frozen=True)
class NodeProfile:
    """Capacity overrides; anything left out is probed from the host."""

    capacity: Mapping[str, int] = field(default_factory=dict)  # canonical units
    numa_nodes: tuple[NumaNode, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PluginSpec:
    """A plugin process the daemon spawns and keeps running."""

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    restart: bool = True


@dataclass(frozen=True)
class PodResourcesConfig:
    qps: float = 100.0
    burst: int = 10


@dataclass(frozen=True)
class ControlPlaneConfig:
    """The embedded control plane (object store, claim controller, scheduler)."""

    enabled: bool = True
    allocation_timeout: float = 10.0  # seconds one scheduling attempt's device search may take
    nodes_to_score: int = 100  # stop looking after this many feasible nodes (percentageOfNodesToScore)


@dataclass(frozen=True)
class NodeAgentConfig:
    node_name: str
    root_dir: Path = Path("/var/lib/kubelet")
    state_dir: Path = Path("/var/lib/nodeagent")
    admin_socket: Path = Path("/run/nodeagent/nodeagent.sock")
    socket_mode: int = 0o660
    metrics_bind_address: str = "127.0.0.1:10255"
    cgroup_backend: str = "simulated"  # simulated | cgroupfs
    cgroupfs_root: Path = Path("/sys/fs/cgroup")
    allocatable_ignore_eviction: bool = False
    node_profile: NodeProfile = field(default_factory=NodeProfile)
    kube_reserved_processes: tuple[str, ...] = ()
    system_reserved_processes: tuple[str, ...] = ()
    plugins: tuple[PluginSpec, ...] = ()
    pod_resources: PodResourcesConfig = field(default_factory=PodResourcesConfig)
    eviction_interval: float = 10.0  # seconds between eviction manager passes
    device_plugin_grace_period: float = 300.0  # seconds capacity stays after a plugin is gone
    allocate_timeout: float = 10.0  # seconds for a device plugin Allocate call
    shutdown_timeout: float = 10.0  # seconds, hard bound on the whole shutdown
    examples_dir: str = ""  # manifests applied at start (demo)
    control_plane: ControlPlaneConfig = field(default_factory=lambda: ControlPlaneConfig())
    # Parsed and validated by the control plane's own modules (controlplane/virtual_nodes.py,
    # controlplane/classic/config.py), which report errors under these paths.
    virtual_nodes: tuple[Mapping[str, Any], ...] = ()  # NodeAgentConfiguration.virtualNodes
    classic_controllers: tuple[Mapping[str, Any], ...] = ()  # NodeAgentConfiguration.classicControllers
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    kubelet: KubeletConfig
    agent: NodeAgentConfig

    # Derived paths: every socket and state file hangs off root_dir/state_dir.
    @property
    def device_plugins_dir(self) -> Path:
        return self.agent.root_dir / "device-plugins"

    @property
    def kubelet_socket(self) -> Path:
        return self.device_plugins_dir / "kubelet.sock"

    @property
    def pod_resources_socket(self) -> Path:
        return self.agent.root_dir / "pod-resources" / "kubelet.sock"

    @property
    def plugins_registry_dir(self) -> Path:
        return self.agent.root_dir / "plugins_registry"

    @property
    def plugins_dir(self) -> Path:
        return self.agent.root_dir / "plugins"

    @property
    def state_db(self) -> Path:
        return self.agent.state_dir / "state.db"

    @property
    def objects_db(self) -> Path:
        return self.agent.state_dir / "objects.db"

    @property
    def cgroup_sim_root(self) -> Path:
        return self.agent.state_dir / "cgroup"


# ---------------------------------------------------------------- parsing helpers

T = TypeVar("T")


def _key_path(parent: str, key: str) -> str:
    return f"{parent}.{key}"


def _map_path(parent: str, key: object) -> str:
    return f'{parent}["{key}"]'


def _type_name(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


def _expect(value: object, kind: type[T] | tuple[type, ...], path: str, what: str) -> T:
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ConfigError(f"{path}: expected {what}, got boolean")
    if not isinstance(value, kind):
        raise ConfigError(f"{path}: expected {what}, got {_type_name(value)}")
    return value  # type: ignore[return-value]


def _check_keys(doc: Mapping[str, Any], allowed: set[str] | frozenset[str], path: str) -> None:
    for key in doc:
        if key not in allowed:
            raise ConfigError(f"{_key_path(path, str(key))}: unknown field")


def _quantity_map(value: object, path: str, allowed: frozenset[str] | None = None) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, raw in _expect(value, dict, path, "object").items():
        p = _map_path(path, key)
        if allowed is not None and key not in allowed:
            raise ConfigError(f"{p}: unsupported resource (one of {', '.join(sorted(allowed))})")
        try:
            out[str(key)] = quantity.parse_nonnegative(str(key), raw)
        except quantity.QuantityError as err:
            raise ConfigError(f"{p}: {err}") from None
    return out


def _signal(key: object, path: str) -> str:
    if key not in EVICTION_SIGNALS:
        raise ConfigError(f"{path}: unknown eviction signal (one of {', '.join(sorted(EVICTION_SIGNALS))})")
    return str(key)


def _thresholds(value: object, path: str) -> dict[str, Threshold]:
    out: dict[str, Threshold] = {}
    for key, raw in _expect(value, dict, path, "object").items():
        p = _map_path(path, key)
        if key not in EVICTION_SIGNALS:
            raise ConfigError(f"{p}: unknown eviction signal (one of {', '.join(sorted(EVICTION_SIGNALS))})")
        text = raw if isinstance(raw, str) else str(raw)
        if text.endswith("%"):
            try:
                pct = float(text[:-1])
            except ValueError:
                raise ConfigError(f'{p}: invalid percentage "{text}"') from None
            if not 0 <= pct <= 100:
                raise ConfigError(f'{p}: percentage "{text}" must be between 0% and 100%')
            out[key] = Threshold(key, percentage=pct / 100)
            continue
        resource = "memory" if key.startswith(("memory", "allocatableMemory")) else "count"
        try:
            out[key] = Threshold(key, quantity=quantity.parse_nonnegative(resource, raw))
        except quantity.QuantityError as err:
            raise ConfigError(f"{p}: {err}") from None
    return out


_DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: object, path: str) -> float:
    """Go duration text ("5m0s", "30s", "1h") or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{path}: duration must be a finite, non-negative number of seconds")
        return float(value)
    text = _expect(value, str, path, "duration string")
    if text in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION_RE.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or pos == 0:
        raise ConfigError(f'{path}: invalid duration "{text}" (e.g. "30s", "5m0s")')
    return total


def parse_cpuset(value: object, path: str) -> tuple[int, ...]:
    """Linux cpuset list syntax: "0-3,8,10-11"."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    text = _expect(value, str, path, "cpu list string").strip()
    if not text:
        return ()
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if m is None:
            raise ConfigError(f'{path}: invalid cpu list "{text}" (e.g. "0-1,4")')
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if hi < lo:
            raise ConfigError(f'{path}: invalid cpu range "{part}"')
        cpus.update(range(lo, hi + 1))
    return tuple(sorted(cpus))


def _cgroup_root(value: object, path: str) -> str:
    text = _str(value, path) or "/"
    if not text.startswith("/"):
        raise ConfigError(f'{path}: must be an absolute cgroup path, got "{text}"')
    return text


def _bool(value: object, path: str) -> bool:
    return _expect(value, bool, path, "boolean")


def _str(value: object, path: str) -> str:
    return _expect(value, str, path, "string")


def _int(value: object, path: str, minimum: int | None = None) -> int:
    n = _expect(value, int, path, "integer")
    if minimum is not None and n < minimum:
        raise ConfigError(f"{path}: must be at least {minimum}, got {n}")
    return n


def _choice(value: object, path: str, choices: frozenset[str]) -> str:
    text = _str(value, path)
    if text not in choices:
        raise ConfigError(f'{path}: unsupported value "{text}" (one of {", ".join(sorted(choices))})')
    return text


# ---------------------------------------------------------------- KubeletConfiguration

_KUBELET_FIELDS: dict[str, Callable[[object, str], tuple[str, object]]] = {
    "kubeReserved": lambda v, p: ("kube_reserved", _quantity_map(v, p, RESERVABLE)),
    "systemReserved": lambda v, p: ("system_reserved", _quantity_map(v, p, RESERVABLE)),
    "evictionHard": lambda v, p: ("eviction_hard", _thresholds(v, p)),
    "evictionSoft": lambda v, p: ("eviction_soft", _thresholds(v, p)),
    "evictionSoftGracePeriod": lambda v, p: (
        "eviction_soft_grace_period",
        {
            _signal(k, _map_path(p, k)): parse_duration(d, _map_path(p, k))
            for k, d in _expect(v, dict, p, "object").items()
        },
    ),
    "evictionPressureTransitionPeriod": lambda v, p: (
        "eviction_pressure_transition_period",
        parse_duration(v, p),
    ),
    "enforceNodeAllocatable": lambda v, p: (
        "enforce_node_allocatable",
        tuple(
            _choice(item, f"{p}[{i}]", ENFORCE_KEYS)
            for i, item in enumerate(_expect(v, list, p, "array"))
        ),
    ),
    "kubeReservedCgroup": lambda v, p: ("kube_reserved_cgroup", _str(v, p)),
    "systemReservedCgroup": lambda v, p: ("system_reserved_cgroup", _str(v, p)),
    "cgroupDriver": lambda v, p: ("cgroup_driver", _choice(v, p, frozenset({"cgroupfs", "systemd"}))),
    "cgroupRoot": lambda v, p: ("cgroup_root", _cgroup_root(v, p)),
    "cgroupsPerQOS": lambda v, p: ("cgroups_per_qos", _bool(v, p)),
    "cpuManagerPolicy": lambda v, p: ("cpu_manager_policy", _choice(v, p, CPU_MANAGER_POLICIES)),
    "reservedSystemCPUs": lambda v, p: ("reserved_system_cpus", parse_cpuset(v, p)),
    "topologyManagerPolicy": lambda v, p: ("topology_manager_policy", _choice(v, p, TOPOLOGY_POLICIES)),
    "topologyManagerScope": lambda v, p: (
        "topology_manager_scope",
        _choice(v, p, frozenset({"container", "pod"})),
    ),
    "maxPods": lambda v, p: ("max_pods", _int(v, p, minimum=1)),
    "staticPodPath": lambda v, p: ("static_pod_path", _str(v, p)),
    "fileCheckFrequency": lambda v, p: ("file_check_frequency", parse_duration(v, p)),
    "featureGates": lambda v, p: (
        "feature_gates",
        {
            **DEFAULT_FEATURE_GATES,
            **{str(k): _bool(b, _map_path(p, k)) for k, b in _expect(v, dict, p, "object").items()},
        },
    ),
    "cpuManagerPolicyOptions": lambda v, p: ("_ignored", _expect(v, dict, p, "object")),
}


def parse_kubelet(doc: Mapping[str, Any]) -> KubeletConfig:
    path = KUBELET
    _check_keys(doc, {"apiVersion", "kind", *_KUBELET_FIELDS, *_KUBELET_IGNORED}, path)
    api = doc.get("apiVersion", KUBELET_API_VERSION)
    if api != KUBELET_API_VERSION:
        raise ConfigError(f'{path}.apiVersion: unsupported "{api}" (want {KUBELET_API_VERSION})')
    values: dict[str, object] = {}
    for key, parse in _KUBELET_FIELDS.items():
        if key in doc and doc[key] is not None:
            name, value = parse(doc[key], _key_path(path, key))
            if name != "_ignored":
                values[name] = value
    if "eviction_hard" not in values:
        values["eviction_hard"] = _thresholds(dict(DEFAULT_EVICTION_HARD), f"{path}.evictionHard")
    cfg = KubeletConfig(raw=dict(doc), **values)  # type: ignore[arg-type]
    _validate_enforcement(cfg)
    for signal in cfg.eviction_soft:
        if signal not in cfg.eviction_soft_grace_period:
            raise ConfigError(
                f'{path}.evictionSoftGracePeriod["{signal}"]: grace period must be specified '
                f"for the soft eviction threshold {signal}"
            )
    return cfg


def _validate_enforcement(cfg: KubeletConfig) -> None:
    """The Node Allocatable design's rules for enforceNodeAllocatable."""
    path = f"{KUBELET}.enforceNodeAllocatable"
    keys = set(cfg.enforce_node_allocatable)
    if "none" in keys and len(keys) > 1:
        raise ConfigError(f'{path}: "none" cannot be combined with other values')
    if not cfg.cgroups_per_qos and keys - {"none"}:
        raise ConfigError(
            f"{path}: must be empty (or [none]) when cgroupsPerQOS is false, "
            "because node allocatable is enforced on the kubepods cgroup"
        )
    if "kube-reserved" in keys and not cfg.kube_reserved_cgroup:
        raise ConfigError(f"{path}: kube-reserved is enforced, so kubeReservedCgroup must be set")
    if "system-reserved" in keys and not cfg.system_reserved_cgroup:
        raise ConfigError(f"{path}: system-reserved is enforced, so systemReservedCgroup must be set")


# ---------------------------------------------------------------- NodeAgentConfiguration


def _profile(value: object, path: str) -> NodeProfile:
    doc = _expect(value, dict, path, "object")
    _check_keys(doc, {"capacity", "numaNodes", "labels"}, path)
    capacity: dict[str, int] = {}
    if doc.get("capacity") is not None:
        cap_path = f"{path}.capacity"
        for key, raw in _expect(doc["capacity"], dict, cap_path, "object").items():
            p = _map_path(cap_path, key)
            try:
                capacity[str(key)] = quantity.parse_nonnegative(str(key), raw)
            except quantity.QuantityError as err:
                raise ConfigError(f"{p}: {err}") from None
    numa: list[NumaNode] = []
    seen_cpus: set[int] = set()
    for i, item in enumerate(_expect(doc.get("numaNodes") or [], list, f"{path}.numaNodes", "array")):
        p = f"{path}.numaNodes[{i}]"
        node = _expect(item, dict, p, "object")
        _check_keys(node, {"id", "cpus", "memory"}, p)
        cpus = parse_cpuset(node.get("cpus", ""), f"{p}.cpus")
        if not cpus:
            raise ConfigError(f"{p}.cpus: Required value: a NUMA node needs at least one cpu")
        if seen_cpus & set(cpus):
            raise ConfigError(f"{p}.cpus: cpus {sorted(seen_cpus & set(cpus))} already belong to another node")
        seen_cpus |= set(cpus)
        try:
            mem = quantity.parse_nonnegative("memory", node.get("memory", 0))
        except quantity.QuantityError as err:
            raise ConfigError(f"{p}.memory: {err}") from None
        numa.append(NumaNode(id=_int(node.get("id", i), f"{p}.id", minimum=0), cpus=cpus, memory=mem))
    if len({n.id for n in numa}) != len(numa):
        raise ConfigError(f"{path}.numaNodes: NUMA node ids must be unique")
    labels = {
        str(k): _str(v, _map_path(f"{path}.labels", k))
        for k, v in _expect(doc.get("labels") or {}, dict, f"{path}.labels", "object").items()
    }
    return NodeProfile(capacity=capacity, numa_nodes=tuple(numa), labels=labels)


def _plugins(value: object, path: str) -> tuple[PluginSpec, ...]:
    out: list[PluginSpec] = []
    for i, item in enumerate(_expect(value, list, path, "array")):
        p = f"{path}[{i}]"
        doc = _expect(item, dict, p, "object")
        _check_keys(doc, {"name", "command", "env", "restart"}, p)
        name = _str(doc.get("name", ""), f"{p}.name")
        if not name:
            raise ConfigError(f"{p}.name: required")
        command = _expect(doc.get("command"), list, f"{p}.command", "array of strings")
        if not command:
            raise ConfigError(f"{p}.command: required")
        env = {
            str(k): _str(v, _map_path(f"{p}.env", k))
            for k, v in _expect(doc.get("env") or {}, dict, f"{p}.env", "object").items()
        }
        out.append(
            PluginSpec(
                name=name,
                command=tuple(_str(c, f"{p}.command[{j}]") for j, c in enumerate(command)),
                env=env,
                restart=_bool(doc.get("restart", True), f"{p}.restart"),
            )
        )
    return tuple(out)


def _abs_path(value: object, path: str, base: Path | None) -> Path:
    text = _str(value, path)
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
        text = _str(value, path)
        try:
            mode = int(text, 8)
        except ValueError:
            raise ConfigError(f'{path}: invalid octal mode "{text}"') from None
    if not 0 <= mode <= 0o777:
        raise ConfigError(f"{path}: mode {oct(mode)} out of range")
    return mode


_AGENT_KEYS = {
    "apiVersion", "kind", "nodeName", "rootDir", "stateDir", "adminSocket", "socketMode",
    "metricsBindAddress", "cgroupBackend", "cgroupfsRoot", "allocatableIgnoreEviction",
    "nodeProfile", "kubeReservedProcesses", "systemReservedProcesses", "plugins", "podResources",
    "evictionInterval", "devicePluginGracePeriod", "allocateTimeout", "shutdownTimeout",
    "examplesDir", "controlPlane", "virtualNodes", "classicControllers",
}


def parse_agent(doc: Mapping[str, Any], base: Path | None = None) -> NodeAgentConfig:
    """Parse the NodeAgentConfiguration; relative paths resolve against `base` (the file's folder)."""
    path = NODEAGENT
    _check_keys(doc, _AGENT_KEYS, path)
    api = doc.get("apiVersion", NODEAGENT_API_VERSION)
    if api != NODEAGENT_API_VERSION:
        raise ConfigError(f'{path}.apiVersion: unsupported "{api}" (want {NODEAGENT_API_VERSION})')

    def get(key: str) -> object:
        return doc.get(key)

    values: dict[str, object] = {}
    if get("nodeName") is not None:
        name = _str(get("nodeName"), f"{path}.nodeName")
        if not _DNS1123.fullmatch(name) or len(name) > 253:
            raise ConfigError(
                f'{path}.nodeName: invalid value "{name}": a lowercase RFC 1123 subdomain must consist of '
                "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric"
            )
        values["node_name"] = name
    else:
        values["node_name"] = socket.gethostname().lower()
    for key, attr in (("rootDir", "root_dir"), ("stateDir", "state_dir"), ("adminSocket", "admin_socket"),
                      ("cgroupfsRoot", "cgroupfs_root")):
        if get(key) is not None:
            values[attr] = _abs_path(get(key), f"{path}.{key}", base)
    if get("socketMode") is not None:
        values["socket_mode"] = _socket_mode(get("socketMode"), f"{path}.socketMode")
    if get("metricsBindAddress") is not None:
        addr = _str(get("metricsBindAddress"), f"{path}.metricsBindAddress")
        _host, sep, port = addr.rpartition(":")
        if not sep or not port.isdigit() or int(port) > 65535:
            raise ConfigError(f'{path}.metricsBindAddress: expected "host:port", got "{addr}"')
        values["metrics_bind_address"] = addr
    if get("cgroupBackend") is not None:
        values["cgroup_backend"] = _choice(
            get("cgroupBackend"), f"{path}.cgroupBackend", frozenset({"simulated", "cgroupfs"})
        )
    if get("allocatableIgnoreEviction") is not None:
        values["allocatable_ignore_eviction"] = _bool(
            get("allocatableIgnoreEviction"), f"{path}.allocatableIgnoreEviction"
        )
    if get("nodeProfile") is not None:
        values["node_profile"] = _profile(get("nodeProfile"), f"{path}.nodeProfile")
    for key, attr in (("kubeReservedProcesses", "kube_reserved_processes"),
                      ("systemReservedProcesses", "system_reserved_processes")):
        if get(key) is not None:
            items = _expect(get(key), list, f"{path}.{key}", "array of strings")
            values[attr] = tuple(_str(x, f"{path}.{key}[{i}]") for i, x in enumerate(items))
    if get("plugins") is not None:
        values["plugins"] = _plugins(get("plugins"), f"{path}.plugins")
    if get("podResources") is not None:
        pr_path = f"{path}.podResources"
        pr = _expect(get("podResources"), dict, pr_path, "object")
        _check_keys(pr, {"qps", "burst"}, pr_path)
        qps: float = _expect(pr.get("qps", 100), (int, float), f"{pr_path}.qps", "number")
        if not math.isfinite(qps) or qps <= 0:
            raise ConfigError(f"{pr_path}.qps: must be positive")
        values["pod_resources"] = PodResourcesConfig(
            qps=float(qps), burst=_int(pr.get("burst", 10), f"{pr_path}.burst", minimum=1)
        )
    for key, attr in (("evictionInterval", "eviction_interval"),
                      ("devicePluginGracePeriod", "device_plugin_grace_period"),
                      ("allocateTimeout", "allocate_timeout"), ("shutdownTimeout", "shutdown_timeout")):
        if get(key) is not None:
            values[attr] = parse_duration(get(key), f"{path}.{key}")
    if get("controlPlane") is not None:
        cp_path = f"{path}.controlPlane"
        cp = _expect(get("controlPlane"), dict, cp_path, "object")
        _check_keys(cp, {"enabled", "allocationTimeout", "nodesToScore"}, cp_path)
        values["control_plane"] = ControlPlaneConfig(
            enabled=_bool(cp.get("enabled", True), f"{cp_path}.enabled"),
            allocation_timeout=parse_duration(cp.get("allocationTimeout", 10.0), f"{cp_path}.allocationTimeout"),
            nodes_to_score=_int(cp.get("nodesToScore", 100), f"{cp_path}.nodesToScore", minimum=1),
        )
    for key, attr in (("virtualNodes", "virtual_nodes"), ("classicControllers", "classic_controllers")):
        if get(key) is not None:
            items = _expect(get(key), list, f"{path}.{key}", "array")
            values[attr] = tuple(_expect(x, dict, f"{path}.{key}[{i}]", "object") for i, x in enumerate(items))
    if get("examplesDir"):
        values["examples_dir"] = str(_abs_path(get("examplesDir"), f"{path}.examplesDir", base))
    return NodeAgentConfig(raw=dict(doc), **values)  # type: ignore[arg-type]


# ---------------------------------------------------------------- loading


def parse_documents(docs: list[object], base: Path | None = None) -> Config:
    kubelet_doc: Mapping[str, Any] | None = None
    agent_doc: Mapping[str, Any] | None = None
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ConfigError(f"document {i}: expected a mapping, got {_type_name(doc)}")
        kind = doc.get("kind")
        if kind == KUBELET:
            if kubelet_doc is not None:
                raise ConfigError(f"document {i}: a second {KUBELET}")
            kubelet_doc = doc
        elif kind == NODEAGENT:
            if agent_doc is not None:
                raise ConfigError(f"document {i}: a second {NODEAGENT}")
            agent_doc = doc
        else:
            raise ConfigError(f'document {i}.kind: unknown kind "{kind}" (want {KUBELET} or {NODEAGENT})')
    return Config(
        kubelet=parse_kubelet(kubelet_doc or {}),
        agent=parse_agent(agent_doc or {}, base),
    )


def load(path: Path) -> Config:
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read configuration: {err.strerror}") from None
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: invalid YAML: {err}") from None
    return parse_documents(docs, base=path.resolve().parent)


def with_overrides(
    cfg: Config,
    *,
    root_dir: Path | None = None,
    state_dir: Path | None = None,
    node_name: str | None = None,
    admin_socket: Path | None = None,
) -> Config:
    """Apply command-line overrides (--root-dir, --state-dir, --node-name, --admin-socket)."""
    changes: dict[str, object] = {}
    for attr, value in (("root_dir", root_dir), ("state_dir", state_dir), ("admin_socket", admin_socket)):
        if value is not None:
            if not value.is_absolute():
                value = value.resolve()
            changes[attr] = value
    if node_name:
        changes["node_name"] = node_name
    return dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, **changes))  # type: ignore[arg-type]


def effective(cfg: Config) -> dict[str, Any]:
    """The effective configuration as /configz serves it (kubelet field names where they exist)."""
    k = cfg.kubelet
    a = cfg.agent

    def thresholds(m: Mapping[str, Threshold]) -> dict[str, str]:
        return {
            s: (
                f"{t.percentage * 100:g}%"
                if t.percentage is not None
                else quantity.format_bytes(t.quantity or 0)
                if s.startswith(("memory", "allocatableMemory", "nodefs.available", "imagefs.available"))
                else str(t.quantity)
            )
            for s, t in m.items()
        }

    return {
        "kubeletconfig": {
            "kubeReserved": {r: quantity.format_canonical(r, v) for r, v in k.kube_reserved.items()},
            "systemReserved": {r: quantity.format_canonical(r, v) for r, v in k.system_reserved.items()},
            "evictionHard": thresholds(k.eviction_hard),
            "evictionSoft": thresholds(k.eviction_soft),
            "evictionSoftGracePeriod": {s: f"{v:g}s" for s, v in k.eviction_soft_grace_period.items()},
            "evictionPressureTransitionPeriod": f"{k.eviction_pressure_transition_period:g}s",
            "enforceNodeAllocatable": list(k.enforce_node_allocatable),
            "kubeReservedCgroup": k.kube_reserved_cgroup,
            "systemReservedCgroup": k.system_reserved_cgroup,
            "cgroupDriver": k.cgroup_driver,
            "cgroupRoot": k.cgroup_root,
            "cgroupsPerQOS": k.cgroups_per_qos,
            "cpuManagerPolicy": k.cpu_manager_policy,
            "reservedSystemCPUs": ",".join(str(c) for c in k.reserved_system_cpus),
            "topologyManagerPolicy": k.topology_manager_policy,
            "topologyManagerScope": k.topology_manager_scope,
            "maxPods": k.max_pods,
            "staticPodPath": k.static_pod_path,
            "fileCheckFrequency": f"{k.file_check_frequency:g}s",
            "featureGates": dict(k.feature_gates),
        },
        "nodeagentconfig": {
            "nodeName": a.node_name,
            "rootDir": str(a.root_dir),
            "stateDir": str(a.state_dir),
            "adminSocket": str(a.admin_socket),
            "socketMode": oct(a.socket_mode),
            "metricsBindAddress": a.metrics_bind_address,
            "cgroupBackend": a.cgroup_backend,
            "allocatableIgnoreEviction": a.allocatable_ignore_eviction,
            "nodeProfile": {
                "capacity": {r: quantity.format_canonical(r, v) for r, v in a.node_profile.capacity.items()},
                "numaNodes": [
                    {"id": n.id, "cpus": ",".join(map(str, n.cpus)), "memory": quantity.format_bytes(n.memory)}
                    for n in a.node_profile.numa_nodes
                ],
                "labels": dict(a.node_profile.labels),
            },
            "cgroupfsRoot": str(a.cgroupfs_root),
            "kubeReservedProcesses": list(a.kube_reserved_processes),
            "systemReservedProcesses": list(a.system_reserved_processes),
            "plugins": [
                {"name": p.name, "command": list(p.command), "env": dict(p.env), "restart": p.restart}
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
            },
            "virtualNodes": [dict(v) for v in a.virtual_nodes],
            "classicControllers": [dict(c) for c in a.classic_controllers],
        },
    }
