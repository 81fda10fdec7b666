"""The KubeletConfiguration document: its vocabulary, parsing into KubeletConfig, and rendering it back.

Document 1 uses the kubelet's own field names (kubelet.config.k8s.io/v1beta1), so a
real kubelet config loads; the fields nodeagent honours are parsed and validated here
with kubelet semantics (eviction signals, node allocatable enforcement rules); every other
v1beta1 field is type-checked by kubelet_schema.py and reported as accepted but ignored.
Parsing and rendering live together so one field name is spelled in one module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.config import gatelist, kubelet_schema, versions
from nodeagent.config.fields import (
    Collector,
    as_bool,
    as_int,
    as_str,
    check_keys,
    choice,
    expect,
    key_path,
    map_path,
    parse_cpuset,
    parse_duration,
    quantity_map,
)
from nodeagent.config.model import (
    DEFAULT_FEATURE_GATES,
    DEFAULT_NODE_LEASE_DURATION_SECONDS,
    DEFAULT_NODE_STATUS_REPORT_FREQUENCY,
    DEFAULT_NODE_STATUS_UPDATE_FREQUENCY,
    KUBELET,
    KUBELET_API_VERSION,
    KubeletConfig,
    Threshold,
    percentage_fraction,
)
from nodeagent.errors import ConfigError
from nodeagent.util import quantity

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
TOPOLOGY_POLICY_OPTIONS = frozenset({"prefer-closest-numa-nodes", "max-allowable-numa-nodes"})
MEMORY_MANAGER_POLICIES = frozenset({"None", "Static"})

def _signal(key: object, path: str) -> str:
    if key not in EVICTION_SIGNALS:
        raise ConfigError(f"{path}: unknown eviction signal (one of {', '.join(sorted(EVICTION_SIGNALS))})")
    return str(key)


def _thresholds(value: object, path: str) -> dict[str, Threshold]:
    out: dict[str, Threshold] = {}
    for key, raw in expect(value, dict, path, "object").items():
        p = map_path(path, key)
        key = _signal(key, p)
        text = raw if isinstance(raw, str) else str(raw)
        if text.endswith("%"):
            try:
                pct = float(text[:-1])
            except ValueError:
                raise ConfigError(f'{p}: invalid percentage "{text}"') from None
            if not 0 <= pct <= 100:
                raise ConfigError(f'{p}: percentage "{text}" must be between 0% and 100%')
            out[key] = Threshold(key, percentage=percentage_fraction(pct))
            continue
        resource = "memory" if key.startswith(("memory", "allocatableMemory")) else "count"
        try:
            out[key] = Threshold(key, quantity=quantity.parse_nonnegative(resource, raw))
        except quantity.QuantityError as err:
            raise ConfigError(f"{p}: {err}") from None
    return out


def _reserved_memory(value: object, path: str) -> dict[int, dict[str, int]]:
    """reservedMemory: [{numaNode, limits: {memory|hugepages-<size>: quantity}}], no node twice per type."""
    out: dict[int, dict[str, int]] = {}
    for i, item in enumerate(expect(value, list, path, "array")):
        p = f"{path}[{i}]"
        doc = expect(item, dict, p, "object")
        check_keys(doc, {"numaNode", "limits"}, p)
        node = as_int(doc.get("numaNode", 0), f"{p}.numaNode", minimum=0)
        limits = out.setdefault(node, {})
        for key, raw in expect(doc.get("limits") or {}, dict, f"{p}.limits", "object").items():
            name = str(key)
            kp = map_path(f"{p}.limits", key)
            if name != "memory" and not name.startswith("hugepages-"):
                raise ConfigError(f"{kp}: memory type must be memory or hugepages-<size>")
            if name in limits:
                # validateReservedMemoryConfiguration's duplicate check, word for word.
                raise ConfigError(f"{kp}: invalid configuration: the reserved memory has a duplicate value "
                                  f'for NUMA node {node} and resource "{name}"')
            try:
                limits[name] = quantity.parse_nonnegative(name, raw)
            except quantity.QuantityError as err:
                raise ConfigError(f"{kp}: {err}") from None
    return out


def _topology_options(value: object, path: str) -> dict[str, str]:
    """topologyManagerPolicyOptions as NewPolicyOptions checks them (known names, parsable values)."""
    out: dict[str, str] = {}
    for key, raw in expect(value, dict, path, "object").items():
        name, text = str(key), as_str(raw, map_path(path, key))
        p = map_path(path, key)
        if name not in TOPOLOGY_POLICY_OPTIONS:
            raise ConfigError(f'{p}: bad option "{name}": unknown Topology Manager Policy option: "{name}"')
        if name == "prefer-closest-numa-nodes" and text.lower() not in ("1", "t", "true", "0", "f", "false"):
            raise ConfigError(
                f'{p}: bad value for option "{name}": strconv.ParseBool: parsing "{text}": invalid syntax')
        if name == "max-allowable-numa-nodes":
            try:
                number = int(text)
            except ValueError:
                raise ConfigError(f'{p}: bad value for option "{name}": strconv.Atoi: parsing "{text}": '
                                  "invalid syntax") from None
            if number < 8:
                raise ConfigError(f'{p}: the minimum value of "{name}" should not be less than 8')
        out[name] = text
    return out


def _lease_duration(value: object, path: str) -> int:
    """nodeLeaseDurationSeconds: 0 is "unset" (the default, 40); below 0 the kubelet's validation error."""
    seconds = as_int(value, path)
    if seconds < 0:
        raise ConfigError(f"{path}: invalid configuration: nodeLeaseDurationSeconds must be greater than 0")
    return seconds


def _node_status_defaults(values: dict[str, object]) -> None:
    """The kubelet's defaulting of the heartbeat fields (v1beta1 SetDefaults_KubeletConfiguration): a zero
    or absent field takes its default; nodeStatusReportFrequency, when unset, follows an explicitly set
    nodeStatusUpdateFrequency (backward compatibility), else 5m."""
    update = values.get("node_status_update_frequency") or 0.0
    if not values.get("node_status_report_frequency"):
        values["node_status_report_frequency"] = update or DEFAULT_NODE_STATUS_REPORT_FREQUENCY
    if not update:
        values["node_status_update_frequency"] = DEFAULT_NODE_STATUS_UPDATE_FREQUENCY
    if not values.get("node_lease_duration_seconds"):
        values["node_lease_duration_seconds"] = DEFAULT_NODE_LEASE_DURATION_SECONDS


def _cgroup_root(value: object, path: str) -> str:
    text = as_str(value, path) or "/"
    if not text.startswith("/"):
        raise ConfigError(f'{path}: must be an absolute cgroup path, got "{text}"')
    return text


# The fields nodeagent honours: kubelet field name -> parser returning (KubeletConfig attribute, value).
_KUBELET_FIELDS: dict[str, Callable[[object, str], tuple[str, object]]] = {
    "kubeReserved": lambda v, p: ("kube_reserved", quantity_map(v, p, RESERVABLE)),
    "systemReserved": lambda v, p: ("system_reserved", quantity_map(v, p, RESERVABLE)),
    "evictionHard": lambda v, p: ("eviction_hard", _thresholds(v, p)),
    "evictionSoft": lambda v, p: ("eviction_soft", _thresholds(v, p)),
    "evictionSoftGracePeriod": lambda v, p: (
        "eviction_soft_grace_period",
        {
            _signal(k, map_path(p, k)): parse_duration(d, map_path(p, k))
            for k, d in expect(v, dict, p, "object").items()
        },
    ),
    "evictionPressureTransitionPeriod": lambda v, p: (
        "eviction_pressure_transition_period",
        parse_duration(v, p),
    ),
    "enforceNodeAllocatable": lambda v, p: (
        "enforce_node_allocatable",
        tuple(
            choice(item, f"{p}[{i}]", ENFORCE_KEYS)
            for i, item in enumerate(expect(v, list, p, "array"))
        ),
    ),
    "kubeReservedCgroup": lambda v, p: ("kube_reserved_cgroup", as_str(v, p)),
    "systemReservedCgroup": lambda v, p: ("system_reserved_cgroup", as_str(v, p)),
    "cgroupDriver": lambda v, p: ("cgroup_driver", choice(v, p, frozenset({"cgroupfs", "systemd"}))),
    "cgroupRoot": lambda v, p: ("cgroup_root", _cgroup_root(v, p)),
    "cgroupsPerQOS": lambda v, p: ("cgroups_per_qos", as_bool(v, p)),
    "cpuManagerPolicy": lambda v, p: ("cpu_manager_policy", choice(v, p, CPU_MANAGER_POLICIES)),
    "reservedSystemCPUs": lambda v, p: ("reserved_system_cpus", parse_cpuset(v, p)),
    "topologyManagerPolicy": lambda v, p: ("topology_manager_policy", choice(v, p, TOPOLOGY_POLICIES)),
    "topologyManagerScope": lambda v, p: (
        "topology_manager_scope",
        choice(v, p, frozenset({"container", "pod"})),
    ),
    "maxPods": lambda v, p: ("max_pods", as_int(v, p, minimum=1)),
    "podsPerCore": lambda v, p: ("pods_per_core", as_int(v, p, minimum=0)),
    "memoryManagerPolicy": lambda v, p: ("memory_manager_policy", choice(v, p, MEMORY_MANAGER_POLICIES)),
    "reservedMemory": lambda v, p: ("reserved_memory", _reserved_memory(v, p)),
    "topologyManagerPolicyOptions": lambda v, p: ("topology_manager_policy_options", _topology_options(v, p)),
    "staticPodPath": lambda v, p: ("static_pod_path", as_str(v, p)),
    "fileCheckFrequency": lambda v, p: ("file_check_frequency", parse_duration(v, p)),
    # The node's heartbeat; 0 means the default, as in the kubelet's defaulting (see _node_status_defaults).
    "nodeLeaseDurationSeconds": lambda v, p: ("node_lease_duration_seconds", _lease_duration(v, p)),
    "nodeStatusUpdateFrequency": lambda v, p: ("node_status_update_frequency", parse_duration(v, p)),
    "nodeStatusReportFrequency": lambda v, p: ("node_status_report_frequency", parse_duration(v, p)),
    "featureGates": lambda v, p: (
        "feature_gates",
        {
            **DEFAULT_FEATURE_GATES,
            **{str(k): as_bool(b, map_path(p, k)) for k, b in expect(v, dict, p, "object").items()},
        },
    ),
    "cpuManagerPolicyOptions": lambda v, p: (
        "cpu_manager_policy_options",
        {str(k): as_str(o, map_path(p, k)) for k, o in expect(v, dict, p, "object").items()},
    ),
}


def parse_kubelet(doc: Mapping[str, Any]) -> KubeletConfig:
    """Type-check every field as v1beta1 declares it, parse the fields nodeagent acts on, and report
    every error found at once (ConfigErrors when there are several)."""
    path = KUBELET
    errors = Collector()
    for key in doc:
        if key not in ("apiVersion", "kind") and key not in kubelet_schema.KUBELET_CONFIGURATION:
            errors.add(f"{key_path(path, str(key))}: unknown field")
    api = doc.get("apiVersion", KUBELET_API_VERSION)
    if api != KUBELET_API_VERSION:
        errors.add(f'{path}.apiVersion: unsupported "{api}" (want {KUBELET_API_VERSION})')
    values: dict[str, object] = {}
    for key, spec in kubelet_schema.KUBELET_CONFIGURATION.items():
        if doc.get(key) is None:
            continue
        type_errors = kubelet_schema.check(doc[key], spec, key_path(path, key))
        if type_errors:
            errors.messages.extend(type_errors)
            continue
        parse = _KUBELET_FIELDS.get(key)
        if parse is not None:
            parsed = errors.run(lambda parse=parse, key=key: parse(doc[key], key_path(path, key)))  # type: ignore[misc]
            if parsed is not None:
                values[parsed[0]] = parsed[1]
    _node_status_defaults(values)
    if "eviction_hard" not in values:
        values["eviction_hard"] = _thresholds(dict(DEFAULT_EVICTION_HARD), f"{path}.evictionHard")
    errors.raise_all()
    cfg = KubeletConfig(raw=dict(doc), **values)  # type: ignore[arg-type]
    errors.run(lambda: _validate_enforcement(cfg))
    for signal in cfg.eviction_soft:
        if signal not in cfg.eviction_soft_grace_period:
            errors.add(
                f'{path}.evictionSoftGracePeriod["{signal}"]: grace period must be specified '
                f"for the soft eviction threshold {signal}"
            )
    errors.raise_all()
    return cfg


# The kubelet endpoint's fields: read from KubeletConfig.raw by nodeagent/kubeletserver/options.py (its only
# reader, with the kubelet's defaults and texts), so acted on though not parsed here.
SERVER_FIELDS = frozenset({"enableServer", "address", "port", "tlsCertFile", "tlsPrivateKeyFile", "authentication",
                           "authorization"})


def ignored_fields(cfg: KubeletConfig) -> tuple[str, ...]:
    """The KubeletConfiguration fields the document sets that nodeagent accepts but does not act on."""
    return kubelet_schema.ignored_fields(cfg.raw, frozenset(_KUBELET_FIELDS) | SERVER_FIELDS)


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


def render_kubelet(k: KubeletConfig, version: str = versions.DEFAULT_VERSION) -> dict[str, Any]:
    """The effective KubeletConfiguration as /configz serves it (kubelet field names); featureGates
    shows the effective gates nodeagent reads that the emulated release has (never nodeagent's own
    switches nor a gate newer than the release: an upstream reader of /configz would refuse them)."""
    known = gatelist.known(versions.minor(version))

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
        "memoryManagerPolicy": k.memory_manager_policy,
        # omitempty in KubeletConfiguration v1beta1: left out when empty / zero
        **({"cpuManagerPolicyOptions": dict(k.cpu_manager_policy_options)}
           if k.cpu_manager_policy_options else {}),
        **({"topologyManagerPolicyOptions": dict(k.topology_manager_policy_options)}
           if k.topology_manager_policy_options else {}),
        **({"reservedMemory": [
            {"numaNode": n, "limits": {r: quantity.format_canonical(r, v) for r, v in sorted(limits.items())}}
            for n, limits in sorted(k.reserved_memory.items())
        ]} if k.reserved_memory else {}),
        **({"podsPerCore": k.pods_per_core} if k.pods_per_core else {}),
        "maxPods": k.max_pods,
        "staticPodPath": k.static_pod_path,
        "fileCheckFrequency": f"{k.file_check_frequency:g}s",
        "nodeLeaseDurationSeconds": k.node_lease_duration_seconds,
        "nodeStatusUpdateFrequency": f"{k.node_status_update_frequency:g}s",
        "nodeStatusReportFrequency": f"{k.node_status_report_frequency:g}s",
        "featureGates": {g: v for g, v in k.feature_gates.items() if g in known},
    }
