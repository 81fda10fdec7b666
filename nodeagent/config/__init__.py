"""Configuration: one YAML file, two documents, parsed once into frozen dataclasses.

Document 1 is a `KubeletConfiguration` (kubelet.config.k8s.io/v1beta1) with the
kubelet's own field names; document 2 is a `NodeAgentConfiguration`
(nodeagent.dev/v1alpha1) for everything the kubelet does not have. Every wrong key,
type or value raises ConfigError naming its path, e.g.
`KubeletConfiguration.evictionHard["memory.available"]: invalid quantity "10XB"`.

This package only parses and validates; it reads no environment and touches no file
except the one it is asked to load. This module is its public face: import from
`nodeagent.config`, not from the parts, which are

- model.py: the frozen dataclasses and the paths derived from root_dir/state_dir;
- fields.py: typed field reads and field-path error messages shared by both documents;
- kubelet_schema.py: every KubeletConfiguration v1beta1 field with its Go type (type checks);
- kubelet.py: the KubeletConfiguration document (parse, validate, render);
- gatelist.py / versions.py: every feature gate of the emulated release (data), and the release's defaults;
- virtualnodes.py, classic.py: NodeAgentConfiguration.virtualNodes and classicControllers into specs;
- faults.py: a fault rule's spelling and NodeAgentConfiguration.faults (the timeline faults/ plays);
- agent.py: the NodeAgentConfiguration document (parse, validate, render);
- file.py: the file as a whole (load, split by kind, CLI overrides, effective config).
"""

from __future__ import annotations

from nodeagent.config.agent import _AGENT_KEYS as _AGENT_KEYS
from nodeagent.config.agent import parse_agent
from nodeagent.config.fields import parse_cpuset, parse_duration
from nodeagent.config.file import effective, load, parse_documents, with_overrides
from nodeagent.config.kubelet import _KUBELET_FIELDS as _KUBELET_FIELDS
from nodeagent.config.kubelet import (
    CPU_MANAGER_POLICIES,
    DEFAULT_EVICTION_HARD,
    ENFORCE_KEYS,
    EVICTION_SIGNALS,
    RESERVABLE,
    TOPOLOGY_POLICIES,
    ignored_fields,
    parse_kubelet,
)
from nodeagent.config.model import (
    DEFAULT_FEATURE_GATES,
    KUBELET,
    KUBELET_API_VERSION,
    NODEAGENT,
    NODEAGENT_API_VERSION,
    APIServerConfig,
    Config,
    ControlPlaneConfig,
    KubeletConfig,
    NodeAgentConfig,
    NodeProfile,
    NumaNode,
    PluginSpec,
    PodResourcesConfig,
    Threshold,
)

__all__ = [
    "CPU_MANAGER_POLICIES",
    "DEFAULT_EVICTION_HARD",
    "DEFAULT_FEATURE_GATES",
    "ENFORCE_KEYS",
    "EVICTION_SIGNALS",
    "KUBELET",
    "KUBELET_API_VERSION",
    "NODEAGENT",
    "NODEAGENT_API_VERSION",
    "RESERVABLE",
    "TOPOLOGY_POLICIES",
    "APIServerConfig",
    "Config",
    "ControlPlaneConfig",
    "KubeletConfig",
    "NodeAgentConfig",
    "NodeProfile",
    "NumaNode",
    "PluginSpec",
    "PodResourcesConfig",
    "Threshold",
    "effective",
    "ignored_fields",
    "load",
    "parse_agent",
    "parse_cpuset",
    "parse_documents",
    "parse_duration",
    "parse_kubelet",
    "with_overrides",
]
