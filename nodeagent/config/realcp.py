"""NodeAgentConfiguration.controlPlane.kubernetes: a real control plane started from binaries the user names.

Only parsing and rendering: the check that a program exists and runs is the daemon's (a bare name is
looked up on PATH when it starts, as a plugin's command is), so check-config gives the same verdict on a
machine without the binaries as on the one that will run them. Relative program paths resolve against
the config file's folder, as every path of the file does.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nodeagent.config.fields import as_int, as_str, check_keys, expect, map_path, parse_duration
from nodeagent.config.model import KUBERNETES_ROLES, KubernetesConfig
from nodeagent.errors import ConfigError

_KEYS = frozenset({"binary", "binaries", "etcdClientPort", "etcdPeerPort", "schedulerPort", "controllerManagerPort",
                   "serviceClusterIPRange", "extraArgs", "nodeCredentials", "readyTimeout", "stopTimeout"})
_DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _program(value: object, path: str, base: Path | None) -> str:
    text = as_str(value, path)
    if not text:
        raise ConfigError(f"{path}: Required value: a program (an absolute path, a path relative to the "
                          "config file, or a name looked up on PATH)")
    if "/" in text and not text.startswith("/"):
        if base is None:
            raise ConfigError(f'{path}: must be an absolute path or a bare name, got "{text}"')
        return str((base / text).resolve())
    return text


def _port(doc: Mapping[str, Any], key: str, path: str, default: int) -> int:
    port = as_int(doc.get(key, default), f"{path}.{key}", minimum=1)
    if port > 65535:
        raise ConfigError(f"{path}.{key}: Invalid value: {port}: must be between 1 and 65535, inclusive")
    return port


def _service_range(value: object, path: str) -> str:
    text = as_str(value, path)
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as err:
        raise ConfigError(f'{path}: Invalid value: "{text}": {err}') from None
    if net.num_addresses < 4:
        raise ConfigError(f'{path}: Invalid value: "{text}": too small: the first address is the kubernetes '
                          "Service's, and a Service range needs room for others")
    return text


def parse_kubernetes(value: object, path: str, base: Path | None) -> KubernetesConfig:
    """controlPlane.kubernetes: exactly one of `binary` (multi-role) and `binaries` (one per role, all four)."""
    doc = expect(value, dict, path, "object")
    check_keys(doc, _KEYS, path)
    binary = _program(doc["binary"], f"{path}.binary", base) if doc.get("binary") is not None else ""
    binaries: dict[str, str] = {}
    if doc.get("binaries") is not None:
        b_path = f"{path}.binaries"
        given = expect(doc["binaries"], dict, b_path, "object")
        for role, program in given.items():
            if role not in KUBERNETES_ROLES:
                raise ConfigError(f'{map_path(b_path, role)}: Unsupported value: "{role}": supported values: '
                                  + ", ".join(f'"{r}"' for r in KUBERNETES_ROLES))
            binaries[str(role)] = _program(program, map_path(b_path, role), base)
        missing = [r for r in KUBERNETES_ROLES if r not in binaries]
        if missing and not binary:
            raise ConfigError(f"{b_path}: Required value: a program for every role, missing "
                              + ", ".join(missing))
    if binary and binaries:
        raise ConfigError(f"{path}.binaries: Forbidden: may not be set with {path}.binary (one multi-role "
                          "binary or one binary per role)")
    if not binary and not binaries:
        raise ConfigError(f"{path}.binary: Required value: one multi-role binary ({path}.binary) or one "
                          f"binary per role ({path}.binaries)")
    extra: dict[str, tuple[str, ...]] = {}
    if doc.get("extraArgs") is not None:
        e_path = f"{path}.extraArgs"
        for role, args in expect(doc["extraArgs"], dict, e_path, "object").items():
            r_path = map_path(e_path, role)
            if role not in KUBERNETES_ROLES:
                raise ConfigError(f'{r_path}: Unsupported value: "{role}": supported values: '
                                  + ", ".join(f'"{r}"' for r in KUBERNETES_ROLES))
            extra[str(role)] = tuple(as_str(a, f"{r_path}[{i}]")
                                     for i, a in enumerate(expect(args, list, r_path, "array of strings")))
    ports = {key: _port(doc, key, path, default) for key, default in (
        ("etcdClientPort", 2379), ("etcdPeerPort", 2380), ("schedulerPort", 10259), ("controllerManagerPort", 10257))}
    if len(set(ports.values())) != len(ports):
        raise ConfigError(f"{path}: Invalid value: the ports {', '.join(f'{k}={v}' for k, v in ports.items())} "
                          "must differ")
    names: list[str] = []
    n_path = f"{path}.nodeCredentials"
    for i, raw in enumerate(expect(doc.get("nodeCredentials") or [], list, n_path, "array of strings")):
        name = as_str(raw, f"{n_path}[{i}]")
        if not _DNS1123.fullmatch(name) or len(name) > 253:
            raise ConfigError(f'{n_path}[{i}]: Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist '
                              "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                              "alphanumeric character")
        if name in names:
            raise ConfigError(f'{n_path}[{i}]: Duplicate value: "{name}"')
        names.append(name)
    ready = parse_duration(doc.get("readyTimeout", 120.0), f"{path}.readyTimeout")
    stop = parse_duration(doc.get("stopTimeout", 5.0), f"{path}.stopTimeout")
    for key, seconds in (("readyTimeout", ready), ("stopTimeout", stop)):
        if seconds <= 0:
            raise ConfigError(f"{path}.{key}: must be positive")
    return KubernetesConfig(
        binary=binary, binaries=binaries,
        etcd_client_port=ports["etcdClientPort"], etcd_peer_port=ports["etcdPeerPort"],
        scheduler_port=ports["schedulerPort"], controller_manager_port=ports["controllerManagerPort"],
        service_cluster_ip_range=_service_range(doc.get("serviceClusterIPRange", "10.96.0.0/12"),
                                                f"{path}.serviceClusterIPRange"),
        extra_args=extra, node_credentials=tuple(names), ready_timeout=ready, stop_timeout=stop)


def render_kubernetes(k: KubernetesConfig) -> dict[str, Any]:
    """controlPlane.kubernetes as /configz and check-config show it (parses back to the same settings)."""
    out: dict[str, Any] = {"binary": k.binary} if k.binary else {"binaries": dict(k.binaries)}
    out.update({
        "etcdClientPort": k.etcd_client_port, "etcdPeerPort": k.etcd_peer_port,
        "schedulerPort": k.scheduler_port, "controllerManagerPort": k.controller_manager_port,
        "serviceClusterIPRange": k.service_cluster_ip_range,
        "extraArgs": {role: list(args) for role, args in k.extra_args.items()},
        "nodeCredentials": list(k.node_credentials),
        "readyTimeout": f"{k.ready_timeout:g}s", "stopTimeout": f"{k.stop_timeout:g}s",
    })
    return out
