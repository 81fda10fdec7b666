"""The config file as a whole: load and split its two documents, apply CLI overrides, render it.

This is the only module that reads a file (the one it is asked to load); it reads no
environment. It dispatches each YAML document by kind to the kubelet or agent parser,
layers --root-dir/--state-dir/--node-name/--admin-socket on top, and assembles the
effective configuration that check-config prints and /configz serves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from nodeagent.config import gatelist, versions
from nodeagent.config.agent import parse_agent, render_agent
from nodeagent.config.fields import Collector, type_name
from nodeagent.config.kubelet import parse_kubelet, render_kubelet
from nodeagent.config.model import DEFAULT_FEATURE_GATES, KUBELET, NODEAGENT, Config, KubeletConfig, NodeAgentConfig
from nodeagent.config.nodeip import parse_node_ips
from nodeagent.errors import ConfigError


def parse_documents(docs: list[object], base: Path | None = None) -> Config:
    kubelet_doc: Mapping[str, Any] | None = None
    agent_doc: Mapping[str, Any] | None = None
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ConfigError(f"document {i}: expected a mapping, got {type_name(doc)}")
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
    errors = Collector()
    kubelet = errors.run(lambda: parse_kubelet(kubelet_doc or {}))
    agent = errors.run(lambda: parse_agent(agent_doc or {}, base))
    # the emulated release's gate defaults, under the gates the document sets (checked as the release would)
    raw_gates = (kubelet_doc or {}).get("featureGates")
    explicit = {str(k): v for k, v in raw_gates.items() if isinstance(v, bool)} if isinstance(raw_gates, dict) else {}
    version = agent.kubernetes_version if agent is not None else _version_of(agent_doc)
    gates = errors.run(lambda: versions.feature_gates(version, explicit, DEFAULT_FEATURE_GATES))
    errors.raise_all()
    assert kubelet is not None and agent is not None and gates is not None
    gates.update({gate: agent.classic_dra for gate in gatelist.NODEAGENT_GATES})
    return Config(kubelet=dataclasses.replace(kubelet, feature_gates=gates), agent=_heartbeat(agent, kubelet))


def _version_of(agent_doc: Mapping[str, Any] | None) -> str:
    """The emulated release to check gates against when the agent document has other errors."""
    version = (agent_doc or {}).get("kubernetesVersion")
    return version if isinstance(version, str) and version in versions.SUPPORTED else versions.DEFAULT_VERSION


_HEARTBEAT = (("leaseDurationSeconds", "lease_duration_seconds", "node_lease_duration_seconds"),
              ("statusUpdateFrequency", "status_update_frequency", "node_status_update_frequency"),
              ("statusReportFrequency", "status_report_frequency", "node_status_report_frequency"))


def _heartbeat(agent: NodeAgentConfig, kubelet: KubeletConfig) -> NodeAgentConfig:
    """The node's effective heartbeat settings: the KubeletConfiguration's nodeLeaseDurationSeconds,
    nodeStatusUpdateFrequency and nodeStatusReportFrequency, unless NodeAgentConfiguration.node sets
    its own (leaseDurationSeconds, statusUpdateFrequency, statusReportFrequency: overrides)."""
    given = agent.raw.get("node")
    given = given if isinstance(given, Mapping) else {}
    changes = {attr: getattr(kubelet, kubelet_attr) for key, attr, kubelet_attr in _HEARTBEAT if key not in given}
    if not changes:
        return agent
    return dataclasses.replace(agent, node=dataclasses.replace(agent.node, **changes))


def load(path: Path) -> Config:
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read configuration: {err.strerror}") from None
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: invalid YAML: {err}") from None
    if not any(doc is not None for doc in docs):
        # an empty file (or only comments) is far more likely a mistake than a wish for every default
        raise ConfigError(f"{path}: the configuration file is empty: want a {KUBELET} and/or a {NODEAGENT} "
                          "document (configs/nodeagent.yaml documents every field)")
    return parse_documents(docs, base=path.resolve().parent)


def with_overrides(
    cfg: Config,
    *,
    root_dir: Path | None = None,
    state_dir: Path | None = None,
    node_name: str | None = None,
    admin_socket: Path | None = None,
    node_ip: str | None = None,
) -> Config:
    """Apply command-line overrides (--root-dir, --state-dir, --node-name, --admin-socket, --node-ip);
    a bad --node-ip raises ConfigError naming the flag."""
    changes: dict[str, object] = {}
    for attr, value in (("root_dir", root_dir), ("state_dir", state_dir), ("admin_socket", admin_socket)):
        if value is not None:
            if not value.is_absolute():
                value = value.resolve()
            changes[attr] = value
    if node_name:
        changes["node_name"] = node_name
        for spec in cfg.agent.virtual_nodes:  # the check parse_agent made against nodeName
            if spec.name == node_name:
                raise ConfigError(f'--node-name: duplicate node name "{node_name}" (also a virtual node of '
                                  f"NodeAgentConfiguration.virtualNodes)")
    if node_ip is not None:
        changes["node_ips"] = parse_node_ips(node_ip, "--node-ip")
    return dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, **changes))  # type: ignore[arg-type]


def effective(cfg: Config) -> dict[str, Any]:
    """The effective configuration as /configz serves it (kubelet field names where they exist)."""
    return {
        "kubeletconfig": render_kubelet(cfg.kubelet, cfg.agent.kubernetes_version),
        "nodeagentconfig": render_agent(cfg.agent),
    }
