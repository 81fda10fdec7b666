"""The configuration model: frozen dataclasses every subsystem reads, and the paths derived from them.

Kept apart from parsing so that the many modules that only *read* configuration
(cm, devices, supervisor, daemon, tests building a Config by hand) depend on plain
data, not on YAML handling or validation. Field defaults here are the documented
defaults; derived paths (sockets, state files) hang off root_dir/state_dir on
Config so nothing below has to guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from struct import pack, unpack
from typing import Any

from nodeagent.config import controllers as controller_names
from nodeagent.config import gatelist

KUBELET_API_VERSION = "kubelet.config.k8s.io/v1beta1"
NODEAGENT_API_VERSION = "nodeagent.dev/v1alpha1"
KUBELET = "KubeletConfiguration"
NODEAGENT = "NodeAgentConfiguration"

# The feature gates nodeagent reads, at their Kubernetes 1.37 defaults (gatelist.py holds every gate of the
# release; kubernetesVersion picks an older release's defaults, see nodeagent/config/versions.py), plus the
# internal key of nodeagent's own classic-DRA switch (NodeAgentConfiguration.classicDRA, off by default).
NODEAGENT_READS = (
    "KubeletPodResourcesGet", "KubeletPodResourcesDynamicResources", "ResourceHealthStatus", "PodsAPI",
    "DynamicResourceAllocation", "DRAPrioritizedList", "DRAExtendedResource", "DRAOptionalNodeOperations",
    "DRAPartitionableDevices", "DRAConsumableCapacity", "DRAAdminAccess", "DRAResourceClaimDeviceStatus",
    "DRADeviceTaints", "DRADeviceTaintRules", "DRADeviceBindingConditions", "DRASchedulerFilterTimeout",
    "DRAListTypeAttributes", "DRANodeAllocatableResources", "CPUManagerPolicyAlphaOptions",
    "CPUManagerPolicyBetaOptions", "TopologyManagerPolicyAlphaOptions", "TopologyManagerPolicyBetaOptions",
    "KubeletFineGrainedAuthz",  # the kubelet endpoint's nodes/configz, nodes/pods, nodes/healthz checks
    "KubeletEnsureSecretPulledImages",  # the wording of the Pulled event
    "InPlacePodVerticalScaling",  # containers' status resources/allocatedResources (on from 1.33)
    "InPlacePodLevelResourcesVerticalScaling",  # the pod's status resources/allocatedResources (on from 1.36)
)
DEFAULT_FEATURE_GATES: Mapping[str, bool] = {
    **{gate: gatelist.enabled(gate, 37, {}) for gate in NODEAGENT_READS},
    **dict.fromkeys(gatelist.NODEAGENT_GATES, False),
}


@dataclass(frozen=True)
class Threshold:
    """One eviction threshold: an absolute quantity (canonical units) or a percentage."""

    signal: str
    quantity: int | None = None
    percentage: float | None = None  # fraction in [0, 1], a float32 value (see float32)

    def resolve(self, capacity: int) -> int:
        """Threshold in canonical units against `capacity`: evictionapi.GetThresholdQuantity's
        `int64(float64(capacity) * float64(percentage))`, where the kubelet keeps the percentage
        as a float32 (10% is 0.100000001490116..., so 10% of 264 GB is some 26 bytes above a
        tenth); the product truncates toward zero, as Go's conversion does."""
        if self.quantity is not None:
            return self.quantity
        return int(float(capacity) * float32(self.percentage or 0.0))


def float32(value: float) -> float:
    """`value` rounded to the nearest IEEE float32, as a Go float32(value) conversion does."""
    return float(unpack("<f", pack("<f", value))[0])


def percentage_fraction(percent: float) -> float:
    """The kubelet's parsePercentage: `float32(ParseFloat(text, 32)) / 100`, computed in float32
    (a float64 quotient of two float32 values, rounded to float32, is the float32 quotient)."""
    return float32(float32(percent) / 100.0)


# The kubelet's defaults for the node heartbeat (KubeletConfiguration v1beta1).
DEFAULT_NODE_LEASE_DURATION_SECONDS = 40  # the Lease is renewed every quarter of it
DEFAULT_NODE_STATUS_UPDATE_FREQUENCY = 10.0  # seconds between checks of the Node object
DEFAULT_NODE_STATUS_REPORT_FREQUENCY = 300.0  # an unchanged status is posted again after this


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
    cpu_manager_policy_options: Mapping[str, str] = field(default_factory=dict)  # cpuManagerPolicyOptions
    # topologyManagerPolicyOptions (known names, values checked): prefer-closest-numa-nodes, max-allowable-numa-nodes
    topology_manager_policy_options: Mapping[str, str] = field(default_factory=dict)
    memory_manager_policy: str = "None"  # memoryManagerPolicy: None | Static
    # reservedMemory: NUMA node -> memory type (memory, hugepages-<size>) -> bytes
    reserved_memory: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    pods_per_core: int = 0  # podsPerCore (0: no limit)
    max_pods: int = 110
    static_pod_path: str = ""
    file_check_frequency: float = 20.0  # seconds between static pod path scans (fileCheckFrequency)
    # The node's heartbeat (nodeLeaseDurationSeconds; nodeStatusUpdateFrequency, nodeStatusReportFrequency in
    # seconds); NodeAgentConfiguration.node's fields override them (config/file.py resolves both into it).
    node_lease_duration_seconds: int = 40
    node_status_update_frequency: float = 10.0
    node_status_report_frequency: float = 300.0
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: dict(DEFAULT_FEATURE_GATES))
    raw: Mapping[str, Any] = field(default_factory=dict)  # the document as given, for /configz

    def gate(self, name: str) -> bool:
        return bool(self.feature_gates.get(name, DEFAULT_FEATURE_GATES.get(name, False)))


@dataclass(frozen=True)
class NumaNode:
    id: int
    cpus: tuple[int, ...]
    memory: int  # bytes
    hugepages: tuple[tuple[str, int], ...] = ()  # (hugepages-<size>, bytes) pre-allocated on the node


@dataclass(frozen=True)
class CpuCore:
    """One physical core of the profile's machine: its hyperthreads and where it sits."""

    threads: tuple[int, ...]  # logical cpu ids (the thread siblings)
    socket: int
    numa_node: int
    uncore_cache: int  # L3 / uncore cache group id


@dataclass(frozen=True)
class CpuTopologySpec:
    """The machine's cpu topology as the node profile gives it (shorthand already expanded)."""

    cores: tuple[CpuCore, ...]
    # NUMA node -> distances to every NUMA node, in node id order (empty: the defaults)
    numa_distances: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeProfile:
    """Capacity overrides; anything left out is probed from the host."""

    capacity: Mapping[str, int] = field(default_factory=dict)  # canonical units
    numa_nodes: tuple[NumaNode, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    cpu_topology: CpuTopologySpec | None = None  # nodeProfile.cpuTopology


@dataclass(frozen=True)
class PluginSpec:
    """A plugin process the daemon spawns and keeps running."""

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    restart: bool = True


@dataclass(frozen=True)
class NodeGroup:
    """NodeAgentConfiguration.nodes[i]: `count` full virtual nodes in this process, each with its own
    root dir (sockets, plugins_registry), state database, Node and Lease, and plugins (config/nodes.py).

    `name`, `root_dir`, `state_dir` and the plugins' command and env are templates: {index} (0..count-1),
    {node} (the node's name), {rootDir} (the node's root dir, in plugins only).
    """

    name: str
    count: int = 1
    root_dir: str = ""  # "" = <rootDir>/nodes/{node}
    state_dir: str = ""  # "" = <stateDir>/nodes/{node}
    plugins: tuple[PluginSpec, ...] = ()
    # cluster mode: each node's own kubeconfig (its own credentials, as each kubelet has); {node} {index}.
    # "" = NodeAgentConfiguration.cluster.kubeconfig, shared
    kubeconfig: str = ""


# NodeAgentConfiguration.virtualNodes (parsed by config/virtualnodes.py)


@dataclass(frozen=True)
class DeviceGroup:
    driver: str
    pool: str  # "" = the node's name
    count: int
    name: str  # pattern with {index}
    attributes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # name -> {type: value}
    capacity: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class VirtualNodeSpec:
    name: str
    labels: Mapping[str, str]
    capacity: Mapping[str, str]  # resource -> quantity text
    allocatable: Mapping[str, str]
    devices: tuple[DeviceGroup, ...] = ()
    taints: tuple[Mapping[str, str], ...] = ()


# NodeAgentConfiguration.classicControllers (parsed by config/classic.py)


@dataclass(frozen=True)
class DeviceConfig:
    name: str
    attributes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """ResourceSlice shape: name -> {"string"|"int"|"bool"|"version": value}."""
    capacity: Mapping[str, str] = field(default_factory=dict)
    """name -> quantity text."""


@dataclass(frozen=True)
class PoolConfig:
    name: str
    node_names: tuple[str, ...] = ()
    node_selector: Mapping[str, Any] | None = None
    devices: tuple[DeviceConfig, ...] = ()

    @cached_property
    def selector(self) -> Mapping[str, Any]:
        """The pool's reach as a core NodeSelector (node names become matchFields terms); shared, read-only."""
        if self.node_selector is not None:
            return self.node_selector
        # A node field selector takes exactly one value per requirement: one term per node.
        return {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                for node in self.node_names
            ]
        }


@dataclass(frozen=True)
class ClassicControllerConfig:
    controller_name: str
    type: str = "cxl"
    pools: tuple[PoolConfig, ...] = ()


@dataclass(frozen=True)
class PodResourcesConfig:
    qps: float = 100.0
    burst: int = 10


@dataclass(frozen=True)
class APIServerConfig:
    """The Kubernetes API served over the object store (HTTPS; client certificates and bearer tokens).

    An empty bind_address turns it off. `kubeconfig` is where the daemon writes a kubeconfig
    for it at every start (None: STATE_DIR/kubeconfig). `anonymous` serves requests without a
    credential as system:anonymous (never the administrator), allowed only on a loopback address.
    """

    bind_address: str = "127.0.0.1:6443"
    kubeconfig: Path | None = None
    anonymous: bool = False
    max_request_bytes: int = 3 * 1024 * 1024  # the API server's --max-request-bytes default


@dataclass(frozen=True)
class SchedulerConfig:
    """controlPlane.scheduler: the embedded scheduler. Off, the store, API server and controllers
    still run and another scheduler (the real kube-scheduler on the API server's kubeconfig) binds
    the pods."""

    enabled: bool = True


KUBERNETES_ROLES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
"""The processes of a real control plane, in start order (controlPlane.kubernetes)."""


@dataclass(frozen=True)
class KubernetesConfig:
    """controlPlane.kubernetes: a real control plane (etcd, kube-apiserver, kube-scheduler,
    kube-controller-manager) started and supervised by the daemon instead of the embedded one, its
    data and PKI under STATE_DIR/kubernetes; the daemon's node joins it with a kubelet's identity.

    The programs are either one multi-role binary (`binary`, the role as its first argument, the
    command line of the project's kube-apiserver fixture, whose etcd role takes --data-dir,
    --listen-client-url and --listen-peer-url) or one upstream release binary per role
    (`binaries`, etcd with upstream etcd's flags). A program without a slash is looked up on PATH
    when the daemon starts. kube-apiserver serves on controlPlane.apiServer.bindAddress and the
    admin kubeconfig goes where controlPlane.apiServer.kubeconfig says, as for the embedded one.
    """

    binary: str = ""
    binaries: Mapping[str, str] = field(default_factory=dict)  # role (KUBERNETES_ROLES) -> program
    etcd_client_port: int = 2379  # on 127.0.0.1, as kubeadm's local etcd
    etcd_peer_port: int = 2380
    scheduler_port: int = 10259  # kube-scheduler's --secure-port default (its /healthz)
    controller_manager_port: int = 10257  # kube-controller-manager's --secure-port default
    service_cluster_ip_range: str = "10.96.0.0/12"  # kubeadm's default serviceSubnet
    extra_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # role -> more flags, appended
    # more node identities (system:node:NAME) to write kubeconfigs for, STATE_DIR/kubernetes/kubelet-NAME.conf:
    # for node processes that join this control plane (`cluster.kubeconfig`), as kubeadm's `kubeconfig user`
    node_credentials: tuple[str, ...] = ()
    ready_timeout: float = 120.0  # seconds each component may take to answer its readiness probe
    stop_timeout: float = 5.0  # seconds each component has after SIGTERM before SIGKILL

    def program(self, role: str) -> tuple[str, ...]:
        """The command that runs `role`: the multi-role binary and the role, or the role's own binary."""
        return (self.binary, role) if self.binary else (self.binaries[role],)


@dataclass(frozen=True)
class ControlPlaneConfig:
    """The embedded control plane (object store, claim controller, scheduler, API server)."""

    enabled: bool = True
    allocation_timeout: float = 10.0  # seconds one scheduling attempt's device search may take
    nodes_to_score: int = 100  # look for at least this many feasible nodes (upstream's minFeasibleNodesToFind)
    percentage_of_nodes_to_score: int = 0  # KubeSchedulerConfiguration's; 0: adaptive (50% - nodes/125, >= 5%)
    # PreBind waits this long for the binding conditions of allocated devices (KEP-5007; upstream's
    # DynamicResourcesArgs.bindingTimeout, default 600 s)
    binding_timeout: float = 600.0
    api_server: APIServerConfig = field(default_factory=lambda: APIServerConfig())
    # The node lifecycle controller marks a node whose Lease was not renewed for this long
    # Ready=Unknown and taints it unreachable (upstream nodeMonitorGracePeriod, 50 s since 1.32).
    node_monitor_grace_period: float = 50.0
    # ... and a node that never posted a Ready condition this long after its creation
    # (upstream nodeStartupGracePeriod, 60 s)
    node_startup_grace_period: float = 60.0
    # how often it checks every node's health (upstream nodeMonitorPeriod, 5 s)
    node_monitor_period: float = 5.0
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    kubernetes: KubernetesConfig | None = None  # controlPlane.kubernetes: a real control plane instead
    # controlPlane.controllers: the embedded controllers that run, as kube-controller-manager's
    # --controllers (config/controllers.py): "*" all, "NAME" one, "-NAME" one off; canonical names
    controllers: tuple[str, ...] = ("*",)

    def controller_enabled(self, name: str) -> bool:
        """Whether the embedded controller `name` (kube-controller-manager's canonical name) runs."""
        return controller_names.enabled(name, self.controllers)

    @property
    def schedules(self) -> bool:
        """Whether this process binds pods: the control plane on and its scheduler on."""
        return self.enabled and self.scheduler.enabled


@dataclass(frozen=True)
class ClusterConfig:
    """NodeAgentConfiguration.cluster: the node joins the Kubernetes API named by a kubeconfig
    (nodeagent's own API server in another process, or any cluster) instead of an embedded
    control plane. None: the node uses the control plane of this process."""

    kubeconfig: Path | None = None
    request_timeout: float = 10.0  # seconds one API request may take
    # The virtual nodes' own credentials when they differ from the node's (controlPlane.kubernetes: a kubelet
    # identity holds one node, the virtual nodes share one RBAC identity); None: `kubeconfig`. Not a file field.
    virtual_nodes_kubeconfig: Path | None = None


@dataclass(frozen=True)
class NodeConfig:
    """NodeAgentConfiguration.node: the local node (off: a control plane alone) and its API
    heartbeat: the effective nodeLeaseDurationSeconds, nodeStatusUpdateFrequency and
    nodeStatusReportFrequency, taken from the KubeletConfiguration unless this section sets
    leaseDurationSeconds, statusUpdateFrequency or statusReportFrequency (overrides)."""

    enabled: bool = True
    lease_duration_seconds: int = DEFAULT_NODE_LEASE_DURATION_SECONDS  # renewed every quarter of it (10 s)
    status_update_frequency: float = DEFAULT_NODE_STATUS_UPDATE_FREQUENCY  # seconds between Node checks
    status_report_frequency: float = DEFAULT_NODE_STATUS_REPORT_FREQUENCY  # seconds: an unchanged status again
    # The node binds unbound pods to itself (the scheduler's DefaultBinder, no kubelet counterpart):
    # only in the explicit no-scheduler setup, since the node cannot tell whether another scheduler
    # (the real kube-scheduler on the API server) serves a pod's schedulerName. Off by default.
    self_binding: bool = False


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
    # Parsed when the file is loaded (config/virtualnodes.py, config/classic.py), so check-config and run
    # give the same verdict; the control plane takes the specs as they are.
    virtual_nodes: tuple[VirtualNodeSpec, ...] = ()  # NodeAgentConfiguration.virtualNodes
    nodes: tuple[NodeGroup, ...] = ()  # NodeAgentConfiguration.nodes: full virtual nodes with sockets
    classic_controllers: tuple[ClassicControllerConfig, ...] = ()  # NodeAgentConfiguration.classicControllers
    # NodeAgentConfiguration.classicDRA: classic DRA (KEP-3063, removed from Kubernetes in 1.32 with its gate
    # DRAControlPlaneController): PodSchedulingContexts, spec.controllerName, classicControllers. Carried into
    # the effective gate map under that gate's name (gatelist.NODEAGENT_GATES), never into a KubeletConfiguration.
    classic_dra: bool = False
    # The fault timeline (nodeagent/config/faults.py), validated at parse time, played after start (faults/timeline.py).
    faults: tuple[Mapping[str, Any], ...] = ()  # NodeAgentConfiguration.faults
    # The emulated release (nodeagent/config/versions.py): feature-gate defaults and formats.
    kubernetes_version: str = "1.37"  # NodeAgentConfiguration.kubernetesVersion
    cluster: ClusterConfig = field(default_factory=lambda: ClusterConfig())  # NodeAgentConfiguration.cluster
    node: NodeConfig = field(default_factory=lambda: NodeConfig())  # NodeAgentConfiguration.node
    # NodeAgentConfiguration.nodeIP (the kubelet's --node-ip): one IP or a dual-stack pair; () = the IP of
    # the host's default-route interface (host/address.py). Full virtual nodes share it.
    node_ips: tuple[str, ...] = ()
    # NodeAgentConfiguration.sysfsDir: where the daemon's node writes the sysfs view of the machine it
    # simulates (cm/sysfsview.py); None = STATE_DIR/host/sys. Full virtual nodes use their own stateDir's.
    sysfs_dir: Path | None = None
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
    def pods_api_socket(self) -> Path:
        """The kubelet Pods API socket (KEP-4188): <root-dir>/pods-api/pods-api.sock."""
        return self.agent.root_dir / "pods-api" / "pods-api.sock"

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
    def apiserver_dir(self) -> Path:
        """The API server's CA, serving certificate and token (mode 0700)."""
        return self.agent.state_dir / "apiserver"

    @property
    def kubeconfig_path(self) -> Path:
        return self.agent.control_plane.api_server.kubeconfig or self.agent.state_dir / "kubeconfig"

    @property
    def cgroup_sim_root(self) -> Path:
        return self.agent.state_dir / "cgroup"

