"""Normalising what two nodes show and comparing it against the divergence register.

Each observation (the Node, a pod's status, its events, pod-resources answers, the calls to a plugin,
checkpoint files) is turned into a flat map `path -> value` after the normalisation every comparison
needs (names of the node and namespace replaced by placeholders, ids sorted, timestamps and uids
dropped, lists of named things keyed by their name). Two maps differ where a path has two values; a
difference is ignored only when a register entry matches its path (`*` matches any text), and, when the
entry names scenarios, only in those. Everything else fails the scenario.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REGISTER = Path(__file__).resolve().parent / "DIVERGENCES.yaml"

# fields that only say when or which instance: dropped everywhere before comparing
_VOLATILE = {"lastTransitionTime", "lastProbeTime", "lastHeartbeatTime", "startedAt", "finishedAt", "startTime",
             "uid", "resourceVersion", "creationTimestamp", "containerID", "imageID", "observedGeneration",
             "firstTimestamp", "lastTimestamp", "eventTime", "last_updated_time"}
# lists whose items are identified by one field: turned into maps so a diff names the item
_KEYED = {"conditions": "type", "containerStatuses": "name", "initContainerStatuses": "name",
          "ephemeralContainerStatuses": "name", "addresses": "type", "allocatedResourcesStatus": "name",
          "resourceClaimStatuses": "name", "volumeMounts": "mountPath"}


@dataclass(frozen=True)
class Entry:
    path: str
    reason: str
    scenarios: tuple[str, ...] = ()
    being_fixed_by: str = ""

    def matches(self, path: str, scenario: str) -> bool:
        """`*` matches anything (also dots and list indexes); everything else literally."""
        pattern = "^" + ".*".join(re.escape(part) for part in self.path.split("*")) + "$"
        return re.match(pattern, path) is not None and (not self.scenarios or scenario in self.scenarios)


def load_register(path: Path = REGISTER) -> list[Entry]:
    doc = yaml.safe_load(path.read_text())
    entries = []
    for i, item in enumerate(doc["divergences"]):
        if not item.get("reason"):
            raise AssertionError(f"{path}: divergences[{i}] ({item.get('path')}) has no reason")
        entries.append(Entry(item["path"], item["reason"], tuple(item.get("scenarios", ())),
                             item.get("beingFixedBy", "")))
    return entries


class Names:
    """Replaces the names that differ by construction (node names, namespaces, addresses) by placeholders,
    and the names and uids each node's objects got by chance (a claim generated from a template, its uid,
    a pod's uid) by a placeholder that says their role (the pod and its pod claim), so that what the two
    nodes did with the same object is compared, not dropped."""

    def __init__(self, replacements: Mapping[str, str]) -> None:
        self._map: dict[str, str] = {}
        self._pairs: list[tuple[str, str]] = []
        self.add(replacements)

    def add(self, replacements: Mapping[str, str]) -> None:
        """More names (learned while the scenario runs: generated claim names, claim and pod uids);
        a name once learned stays, so what is compared after a deletion is still mapped."""
        self._map.update(replacements)
        # longest first, so "kt-nodeagent" is not half-replaced by a shorter name
        self._pairs = sorted(self._map.items(), key=lambda kv: -len(kv[0]))

    def text(self, value: str) -> str:
        for old, new in self._pairs:
            value = value.replace(old, new)
        return value

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {self.text(str(k)): self(v) for k, v in value.items()}
        return value


POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def roles(pods: Iterable[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """What one node's objects got by chance -> their role, the same on both nodes: a pod's uid ->
    POD_UID(pod); a claim generated from a template (pod-claim-xxxxx) -> CLAIM(pod/podClaim), from its
    controlling pod and the pod-claim-name annotation (the pod's resourceClaimStatuses name it too); a
    claim's uid (in CDI ids, the DRA checkpoint, the driver calls) -> CLAIM_UID(pod/podClaim), or
    CLAIM_UID(name) for a claim made by name."""
    out: dict[str, str] = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        out[pod["metadata"]["uid"]] = f"POD_UID({name})"
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("resourceClaimName"):
                out[status["resourceClaimName"]] = f"CLAIM({name}/{status['name']})"
    for claim in claims:
        meta = claim["metadata"]
        role = meta["name"]
        pod_claim = (meta.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
        owners = [o["name"] for o in meta.get("ownerReferences") or []
                  if o.get("kind") == "Pod" and o.get("controller")]
        if pod_claim and owners:
            role = f"{owners[0]}/{pod_claim}"
            out[meta["name"]] = f"CLAIM({role})"
        out[meta["uid"]] = f"CLAIM_UID({role})"
    return out


def _keyed(key: str, items: list[Any]) -> Any:
    field = _KEYED.get(key)
    if field and all(isinstance(i, dict) and field in i for i in items):
        return {str(i[field]): {k: v for k, v in i.items() if k != field} for i in items}
    return items


def flatten(value: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """`{"a": {"b": [1, 2]}}` -> {"a.b[0]": 1, "a.b[1]": 2}; named lists keyed (conditions.Ready.status)."""
    out = {} if out is None else out
    if isinstance(value, dict):
        if not value:
            out[prefix] = {}
        for k, v in value.items():
            if k in _VOLATILE:
                continue
            key = str(k)
            if isinstance(v, list):
                v = _keyed(key, v)
            flatten(v, f"{prefix}.{key}" if prefix else key, out)
    elif isinstance(value, list):
        if not value:
            out[prefix] = []
        for i, v in enumerate(value):
            flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = value
    return out


@dataclass(frozen=True)
class Difference:
    path: str
    kubelet: Any
    nodeagent: Any

    def __str__(self) -> str:
        return f"{self.path}: kubelet={json.dumps(self.kubelet)} nodeagent={json.dumps(self.nodeagent)}"


_MISSING = "<absent>"


def diff(kubelet: Mapping[str, Any], nodeagent: Mapping[str, Any], prefix: str) -> list[Difference]:
    a, b = flatten(kubelet), flatten(nodeagent)
    out = []
    for path in sorted(set(a) | set(b)):
        va, vb = a.get(path, _MISSING), b.get(path, _MISSING)
        if va != vb:
            out.append(Difference(f"{prefix}.{path}" if path else prefix, va, vb))
    return out


def unregistered(diffs: Iterable[Difference], register: Sequence[Entry], scenario: str) -> list[Difference]:
    return [d for d in diffs if not any(e.matches(d.path, scenario) for e in register)]


def registered(diffs: Iterable[Difference], register: Sequence[Entry], scenario: str) -> list[tuple[Difference, Entry]]:
    out = []
    for d in diffs:
        for e in register:
            if e.matches(d.path, scenario):
                out.append((d, e))
                break
    return out


def _sorted_ids(value: Any) -> Any:
    """Sort every list of scalars named *ids* (device ids, cpu ids) in a pod-resources answer, and the lists
    of devices and memory blocks by content (the order of a Go map iteration on the kubelet's side)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(v, list) and k.lower().endswith("ids") and all(not isinstance(x, dict) for x in v):
                out[k] = sorted(v)
            elif isinstance(v, list) and k in ("devices", "memory", "dynamic_resources", "claim_resources",
                                               "cdi_devices"):
                out[k] = sorted((_sorted_ids(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
            else:
                out[k] = _sorted_ids(v)
        return out
    if isinstance(value, list):
        return [_sorted_ids(v) for v in value]
    return value


def stable(value: Any) -> Any:
    """`value` without the fields that only say when or which instance (_VOLATILE), at any depth."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def health_sorted(status: Mapping[str, Any]) -> dict[str, Any]:
    """A pod status with each allocatedResourcesStatus entry's resources sorted by resourceID: the kubelet
    lists them in Go map order (devicemanager UpdateAllocatedResourcesStatus ranges over the container's
    device map), so their order means nothing and changes from sync to sync."""
    out = dict(status)
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        if not isinstance(out.get(key), list):
            continue
        containers = []
        for c in out[key]:
            if isinstance(c, dict) and isinstance(c.get("allocatedResourcesStatus"), list):
                c = {**c, "allocatedResourcesStatus": [
                    {**e, "resources": sorted(e["resources"], key=lambda r: str(r.get("resourceID")))}
                    if isinstance(e, dict) and isinstance(e.get("resources"), list) else e
                    for e in c["allocatedResourcesStatus"]]}
            containers.append(c)
        out[key] = containers
    return out


def podresources(answer: Mapping[str, Any], namespaces: Iterable[str]) -> dict[str, Any]:
    """A List answer restricted to the scenario's namespaces, pods keyed by name, ids sorted."""
    keep = set(namespaces)
    pods = {}
    for pod in answer.get("pod_resources", []):
        if pod.get("namespace") in keep:
            containers = {c["name"]: _sorted_ids({k: v for k, v in c.items() if k != "name"})
                          for c in pod.get("containers", [])}
            pods[pod["name"]] = containers
    return pods


def events(items: Iterable[Mapping[str, Any]], names: Names) -> dict[str, Any]:
    """Events as a sorted multiset of (object, type, reason, message, fieldPath) with their counts."""
    counted: dict[str, int] = {}
    for ev in items:
        obj = ev.get("involvedObject", {})
        key = " | ".join(names.text(str(x)) for x in (
            f"{obj.get('kind')}/{obj.get('name')}", ev.get("type"), ev.get("reason"),
            re.sub(r"\s+", " ", ev.get("message", "")), obj.get("fieldPath", "")))
        counted[key] = counted.get(key, 0) + max(1, int(ev.get("count") or 1))
    return {k: ("seen" if v >= 1 else v) for k, v in sorted(counted.items())}
