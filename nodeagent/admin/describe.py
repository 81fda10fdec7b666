"""Text blocks of the admin API's `describe`: a pod's device allocations, the node's device
plugins, and any stored object as `kubectl describe` lays it out (metadata, spec and status as
YAML, then its events). Pure: objects and node views in, text out; kept apart from the backend,
which decides what to describe."""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from nodeagent.devices.model import ResourceAllocation, ResourceSummary
from nodeagent.pods.describe import tabwrite
from nodeagent.util.timefmt import human_duration


def describe_device_allocations(allocations: Mapping[str, Mapping[str, ResourceAllocation]]) -> str:
    """The "Device Allocations:" block of `describe pod`: per container and resource, the device
    ids and what the plugin's Allocate returned (envs, mounts, device specs, annotations, CDI
    devices). Empty text when the pod holds no device."""
    if not any(allocations.values()):
        return ""
    lines = ["Device Allocations:"]
    for container in sorted(allocations):
        per_resource = allocations[container]
        if not per_resource:
            continue
        lines.append(f"  {container}:")
        for resource in sorted(per_resource):
            alloc = per_resource[resource]
            resp = alloc.response
            p = "      "
            lines.append(f"    {resource}:")
            lines.append(f"{p}Devices:\t{', '.join(alloc.device_ids)}")
            numa = [f"{i}={','.join(str(n) for n in alloc.numa[i])}" for i in alloc.device_ids if alloc.numa.get(i)]
            if numa:
                lines.append(f"{p}NUMA Nodes:\t{' '.join(numa)}")
            lines += _block(f"{p}Environment", [f"{k}:\t{resp.envs[k]}" for k in sorted(resp.envs)])
            lines += _block(f"{p}Mounts", [
                f"{m.container_path} from {m.host_path} ({'ro' if m.read_only else 'rw'})" for m in resp.mounts
            ])
            lines += _block(f"{p}Device Specs", [
                f"{d.container_path} -> {d.host_path}" + (f" ({d.permissions})" if d.permissions else "")
                for d in resp.devices
            ])
            lines += _block(f"{p}Annotations", [f"{k}:\t{resp.annotations[k]}" for k in sorted(resp.annotations)])
            lines += _block(f"{p}CDI Devices", list(resp.cdi_devices))
    return tabwrite(lines)


def _block(title: str, items: list[str]) -> list[str]:
    if not items:
        return [f"{title}:\t<none>"]
    indent = " " * (len(title) - len(title.lstrip()) + 2)
    return [f"{title}:", *(indent + item for item in items)]


def insert_before_events(text: str, block: str) -> str:
    if not block:
        return text
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("Events:"):
            return "".join(lines[:i]) + block + "".join(lines[i:])
    return text + block


def device_plugin_lines(summaries: Sequence[ResourceSummary]) -> list[str]:
    if not summaries:
        return []
    lines = ["Device Plugins:", "  Resource\tRegistered\tHealthy\tUnhealthy\tAllocated\tEndpoint"]
    lines += [
        f"  {s.resource}\t{'True' if s.registered else 'False'}\t{s.healthy}\t{s.unhealthy}\t{s.allocated}\t"
        f"{s.endpoint or '<none>'}"
        for s in summaries
    ]
    return lines


def _last_seen(event: Mapping[str, Any]) -> float:
    """When an event was last seen: its series' lastObservedTime, lastTimestamp, or (events.k8s.io's
    events carry neither) its eventTime, as kubectl describe reads them."""
    series = event.get("series")
    if isinstance(series, Mapping) and series.get("lastObservedTime"):
        return _timestamp(series["lastObservedTime"])
    return _timestamp(event.get("lastTimestamp") or event.get("eventTime"))


def _timestamp(text: object) -> float:
    if not isinstance(text, str):
        return 0.0
    try:
        return float(calendar.timegm(time.strptime(text[:19] + "Z", "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return 0.0


def describe_object(obj: Mapping[str, Any], events: Sequence[Mapping[str, Any]], *, now: float) -> str:
    """`kubectl describe` for any kind: metadata, spec and status as YAML, then the events."""
    meta = obj.get("metadata") or {}
    lines = [f"Name:\t{meta.get('name', '')}"]
    if meta.get("namespace"):
        lines.append(f"Namespace:\t{meta['namespace']}")
    lines.append(f"Kind:\t{obj.get('kind', '')}")
    lines.append(f"API Version:\t{obj.get('apiVersion', '')}")
    for title, key in (("Labels", "labels"), ("Annotations", "annotations")):
        items = meta.get(key) or {}
        lines.append(f"{title}:\t" + (", ".join(f"{k}={v}" for k, v in sorted(items.items())) or "<none>"))
    if meta.get("ownerReferences"):
        owner = meta["ownerReferences"][0]
        lines.append(f"Controlled By:\t{owner.get('kind')}/{owner.get('name')}")
    text = tabwrite(lines)
    for section in ("spec", "status"):
        if obj.get(section):
            body = yaml.safe_dump(obj[section], sort_keys=False).rstrip("\n")
            text += f"{section.capitalize()}:\n" + "\n".join("  " + ln for ln in body.splitlines()) + "\n"
    conditions = (obj.get("status") or {}).get("conditions") or []
    for c in conditions:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            text += f"Scheduling:\t{c.get('reason', '')}: {c.get('message', '')}\n"
    if not events:
        return text + "Events:\t<none>\n"
    rows = ["  Type\tReason\tAge\tFrom\tMessage", "  ----\t------\t----\t----\t-------"]
    for e in events:
        age = human_duration(max(0.0, now - _last_seen(e)))
        source = (e.get("source") or {}).get("component", "") if isinstance(e.get("source"), dict) else ""
        source = source or str(e.get("reportingComponent") or "")  # events.k8s.io's have no source (kubectl)
        rows.append(f"  {e.get('type', '')}\t{e.get('reason', '')}\t{age}\t{source}\t{e.get('message', '')}")
    return text + "Events:\n" + tabwrite(rows)
