"""NodeAgentConfiguration.nodes: full virtual nodes, each an independent kubelet with its own sockets.

Exists apart from `virtualNodes` (scheduling-only Node objects without sockets, cheap) because
these nodes are real towards their plugins: each gets its own root dir (device-plugins/kubelet.sock,
pod-resources/kubelet.sock, plugins_registry, the Pods API socket), its own state database, its
own Node and Lease, and its own plugin processes spawned from a template. Two parts, both pure:
`parse` validates the section (every error names its field path) and `expand` turns it into one
Config per node, derived from the daemon's own, which wiring/full_nodes.py starts.

Config shape (one entry; `count` > 1 expands `{index}`):

    nodes:
    - name: node-{index}
      count: 100
      rootDir: /run/nodeagent/nodes/{node}     # default <rootDir>/nodes/{node}
      stateDir: /var/lib/nodeagent/nodes/{node} # default <stateDir>/nodes/{node}
      kubeconfig: /etc/nodeagent/nodes/{node}.kubeconfig  # cluster mode: each node its own credentials
      plugins:                                  # spawned once per node; {node} {index} {rootDir}
      - name: gpu
        command: [nodeagent-fake-device-plugin, --resource, example.com/gpu]
        env: {FAKE_NODE: "{node}"}
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nodeagent.config.fields import as_int, as_str, check_keys, expect
from nodeagent.config.model import ClusterConfig, Config, NodeGroup, PluginSpec
from nodeagent.errors import ConfigError

_KEYS = {"name", "count", "rootDir", "stateDir", "plugins", "kubeconfig"}
_DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_PLACEHOLDER = re.compile(r"\{([A-Za-z]*)\}")
MAX_NODES = 5000  # one process; beyond this a second node process is the answer


def parse(value: object, path: str, parse_plugins: Callable[[object, str], tuple[PluginSpec, ...]]) -> tuple[
        NodeGroup, ...]:
    """The `nodes` array; each name, rootDir and stateDir template checked by expanding it once."""
    out: list[NodeGroup] = []
    total = 0
    for i, item in enumerate(expect(value, list, path, "array")):
        p = f"{path}[{i}]"
        doc = expect(item, dict, p, "object")
        check_keys(doc, _KEYS, p)
        name = as_str(doc.get("name", ""), f"{p}.name")
        if not name:
            raise ConfigError(f"{p}.name: required")
        count = as_int(doc.get("count", 1), f"{p}.count", minimum=1)
        total += count
        if total > MAX_NODES:
            raise ConfigError(f"{p}.count: Invalid value: {count}: at most {MAX_NODES} nodes in one process")
        if count > 1 and "{index}" not in name:
            raise ConfigError(f'{p}.name: Invalid value: "{name}": with count {count} the name needs "{{index}}"')
        dirs = {key: _per_node_path(doc, key, p, count, "directory") for key in ("rootDir", "stateDir")}
        kubeconfig = _per_node_path(doc, "kubeconfig", p, count,
                                    "credentials (or leave it out: all share cluster.kubeconfig)")
        _check_placeholders(name, f"{p}.name", ("index",))
        plugins = parse_plugins(doc.get("plugins") or [], f"{p}.plugins")
        for j, plugin in enumerate(plugins):
            for k, arg in enumerate(plugin.command):
                _check_placeholders(arg, f"{p}.plugins[{j}].command[{k}]", ("index", "node", "rootDir"))
            for key, v in plugin.env.items():
                _check_placeholders(v, f'{p}.plugins[{j}].env["{key}"]', ("index", "node", "rootDir"))
        group = NodeGroup(name=name, count=count, root_dir=dirs["rootDir"], state_dir=dirs["stateDir"],
                          plugins=plugins, kubeconfig=kubeconfig)
        for n in (0, count - 1):
            node = node_name(group, n)
            if not _DNS1123.fullmatch(node) or len(node) > 63:
                raise ConfigError(
                    f'{p}.name: Invalid value: "{node}": a node name must be a lowercase RFC 1123 label of at most '
                    "63 characters: lower case alphanumeric characters or '-', starting and ending with one")
        out.append(group)
    return tuple(out)


def _per_node_path(doc: Mapping[str, Any], key: str, p: str, count: int, what: str) -> str:
    """A path template of one node ("" when absent): absolute, and naming the node when count > 1."""
    text = as_str(doc.get(key, ""), f"{p}.{key}")
    if text:
        _check_placeholders(text, f"{p}.{key}", ("index", "node"))
        if not Path(text).is_absolute():
            raise ConfigError(f'{p}.{key}: must be an absolute path, got "{text}"')
        if count > 1 and "{node}" not in text and "{index}" not in text:
            raise ConfigError(f'{p}.{key}: Invalid value: "{text}": with count {count} every node '
                              f'needs its own {what}: use "{{node}}" or "{{index}}"')
    return text


def _check_placeholders(text: str, path: str, allowed: tuple[str, ...]) -> None:
    for word in _PLACEHOLDER.findall(text):
        if word not in allowed:
            raise ConfigError(f'{path}: unknown placeholder "{{{word}}}" (allowed: '
                              + ", ".join(f"{{{a}}}" for a in allowed) + ")")


def node_name(group: NodeGroup, index: int) -> str:
    return group.name.replace("{index}", str(index))


def _fill(text: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def expand(cfg: Config) -> list[Config]:
    """One Config per full virtual node: the daemon's own with the node's name, dirs and plugins.

    What exists once per process is left out of each node's config (virtualNodes, examples, faults,
    static pods, metrics address); the plugins get the daemon's kubeconfig. Raises ConfigError for
    a name used twice (also against nodeName), two nodes sharing a root or state dir, or a node
    kubeconfig (cluster mode only) that does not exist.
    """
    agent = cfg.agent
    kubeconfig = cfg.kubeconfig_path
    out: list[Config] = []
    seen: dict[str, str] = {agent.node_name: "NodeAgentConfiguration.nodeName"}
    dirs: dict[Path, str] = {agent.root_dir: "NodeAgentConfiguration.rootDir",
                             agent.state_dir: "NodeAgentConfiguration.stateDir"}
    # The same for every node, and frozen: one copy shared (not a KubeletConfig per node of a thousand).
    control_plane = dataclasses.replace(
        agent.control_plane, api_server=dataclasses.replace(agent.control_plane.api_server, kubeconfig=kubeconfig))
    kubelet = dataclasses.replace(cfg.kubelet, static_pod_path="")
    for i, group in enumerate(agent.nodes):
        p = f"NodeAgentConfiguration.nodes[{i}]"
        for index in range(group.count):
            name = node_name(group, index)
            if name in seen:
                raise ConfigError(f'{p}.name: Duplicate value: "{name}" (also {seen[name]})')
            seen[name] = f"{p}.name"
            values = {"index": str(index), "node": name}
            root = Path(_fill(group.root_dir, values)) if group.root_dir else agent.root_dir / "nodes" / name
            state = Path(_fill(group.state_dir, values)) if group.state_dir else agent.state_dir / "nodes" / name
            for key, d in (("rootDir", root), ("stateDir", state)):
                if d in dirs:
                    raise ConfigError(f'{p}.{key}: Duplicate value: "{d}" for node "{name}" (also {dirs[d]})')
                dirs[d] = f"{p}.{key}"
            cluster = _node_cluster(agent.cluster, group, values, f"{p}.kubeconfig")
            values["rootDir"] = str(root)
            plugins = tuple(
                PluginSpec(name=f"{spec.name}@{name}", command=tuple(_fill(c, values) for c in spec.command),
                           env={k: _fill(v, values) for k, v in spec.env.items()}, restart=spec.restart)
                for spec in group.plugins
            )
            node_agent = dataclasses.replace(
                agent, node_name=name, root_dir=root, state_dir=state, admin_socket=root / "nodeagent.sock",
                metrics_bind_address="", plugins=plugins, examples_dir="", virtual_nodes=(), nodes=(), faults=(),
                control_plane=control_plane, cluster=cluster, sysfs_dir=None, raw={})
            out.append(Config(kubelet=kubelet, agent=node_agent))
    return out


def _node_cluster(cluster: ClusterConfig, group: NodeGroup, values: Mapping[str, str], path: str) -> ClusterConfig:
    """The node's `cluster`: the daemon's, with the node's own kubeconfig when the group names one."""
    if not group.kubeconfig:
        return cluster
    if cluster.kubeconfig is None:
        raise ConfigError(f"{path}: a node's own kubeconfig is for a node that joins a cluster: set "
                          "NodeAgentConfiguration.cluster.kubeconfig (in process every node uses the store)")
    own = Path(_fill(group.kubeconfig, values))
    if not own.is_file():
        raise ConfigError(f'{path}: Invalid value: "{own}": no such file (the kubeconfig of node "{values["node"]}")')
    return dataclasses.replace(cluster, kubeconfig=own)


def render(groups: tuple[NodeGroup, ...], redacted: str) -> list[dict[str, Any]]:
    """The section as /configz shows it (plugin env values redacted)."""
    return [
        {"name": g.name, "count": g.count, "rootDir": g.root_dir, "stateDir": g.state_dir, "kubeconfig": g.kubeconfig,
         "plugins": [{"name": s.name, "command": list(s.command), "env": dict.fromkeys(s.env, redacted),
                      "restart": s.restart} for s in g.plugins]}
        for g in groups
    ]
