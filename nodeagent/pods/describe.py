"""`kubectl describe pod` text for a pod, its status and its events.

Follows kubectl's describer: the same labels, order and levels, aligned the way Go's
text/tabwriter (padding 2) aligns kubectl's output, ages as duration.HumanDuration prints
them. Pure: the caller passes the time to measure ages against.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from nodeagent.objects.pod.model import Container, ContainerStatus, Pod, PodStatus
from nodeagent.pods.events import Event
from nodeagent.pods.qos import pod_qos
from nodeagent.util import quantity
from nodeagent.util.timefmt import human_duration

_PAD = 2


def tabwrite(lines: Sequence[str], padding: int = _PAD) -> str:
    """Align tab-separated cells like Go's text/tabwriter (minwidth 0, padding `padding`).

    A column block is a run of consecutive lines that all have a tab-terminated cell in that
    column; the last cell of a line never takes part in alignment.
    """
    rows = [line.split("\t") for line in lines]
    widths: list[list[int]] = [[0] * max(len(r) - 1, 0) for r in rows]

    def layout(first: int, last: int, col: int) -> None:
        i = first
        while i < last:
            if col >= len(rows[i]) - 1:
                i += 1
                continue
            j = i
            width = 0
            while j < last and col < len(rows[j]) - 1:
                width = max(width, len(rows[j][col]) + padding)
                j += 1
            for k in range(i, j):
                widths[k][col] = width
            layout(i, j, col + 1)
            i = j

    layout(0, len(rows), 0)
    out = []
    for row, row_widths in zip(rows, widths, strict=True):
        cells = [cell.ljust(w) for cell, w in zip(row[:-1], row_widths, strict=True)]
        out.append("".join(cells) + row[-1])
    return "\n".join(out) + "\n"


def rfc1123z(ts: float) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(ts))


def _multiline(title: str, items: Mapping[str, str], sep: str) -> list[str]:
    if not items:
        return [f"{title}:\t<none>"]
    lines = []
    for i, key in enumerate(sorted(items)):
        lines.append(f"{title + ':' if i == 0 else ''}\t{key}{sep}{items[key]}")
    return lines


def _state_lines(cs: ContainerStatus) -> list[str]:
    p = "    "
    if cs.state == "running":
        lines = [f"{p}State:\tRunning"]
        if cs.started_at is not None:
            lines.append(f"{p}  Started:\t{rfc1123z(cs.started_at)}")
        return lines
    if cs.state == "terminated":
        lines = [f"{p}State:\tTerminated"]
        if cs.reason:
            lines.append(f"{p}  Reason:\t{cs.reason}")
        lines.append(f"{p}  Exit Code:\t{cs.exit_code if cs.exit_code is not None else 0}")
        if cs.started_at is not None:
            lines.append(f"{p}  Started:\t{rfc1123z(cs.started_at)}")
        if cs.finished_at is not None:
            lines.append(f"{p}  Finished:\t{rfc1123z(cs.finished_at)}")
        return lines
    lines = [f"{p}State:\tWaiting"]
    if cs.reason:
        lines.append(f"{p}  Reason:\t{cs.reason}")
    return lines


def _container_lines(c: Container, cs: ContainerStatus | None) -> list[str]:
    p = "    "
    lines = [f"  {c.name}:", f"{p}Image:\t{c.image}"]
    if cs is not None:
        lines += _state_lines(cs)
        lines.append(f"{p}Ready:\t{'True' if cs.state == 'running' else 'False'}")
        lines.append(f"{p}Restart Count:\t0")
    for title, values in (("Limits", c.limits), ("Requests", c.requests)):
        if values:
            lines.append(f"{p}{title}:")
            lines += [f"{p}  {n}:\t{quantity.format_canonical(n, values[n])}" for n in sorted(values)]
    if cs is not None and cs.allocated_resources_status:
        lines.append(f"{p}Allocated Resources Status:")
        for rs in cs.allocated_resources_status:
            lines.append(f"{p}  {rs.name}:")
            lines += [f"{p}    {h.resource_id}:\t{h.health}" for h in rs.resources]
    return lines


def _event_lines(events: Sequence[Event], now: float) -> list[str]:
    if not events:
        return ["Events:\t<none>"]
    lines = ["Events:", "  Type\tReason\tAge\tFrom\tMessage", "  ----\t------\t----\t----\t-------"]
    for e in events:
        age = human_duration(now - e.last_timestamp)
        if e.count > 1:
            age = f"{age} (x{e.count} over {human_duration(now - e.first_timestamp)})"
        lines.append(f"  {e.type}\t{e.reason}\t{age}\t{e.source}\t{e.message}")
    return lines


def describe_pod(pod: Pod, status: PodStatus, events: Sequence[Event], *, now: float | None = None) -> str:
    now = time.time() if now is None else now
    lines = [
        f"Name:\t{pod.name}",
        f"Namespace:\t{pod.namespace}",
        f"Priority:\t{pod.priority}",
    ]
    if pod.priority_class_name:
        lines.append(f"Priority Class Name:\t{pod.priority_class_name}")
    lines.append(f"Node:\t{pod.node_name or '<none>'}")
    if status.start_time is not None:
        lines.append(f"Start Time:\t{rfc1123z(status.start_time)}")
    lines += _multiline("Labels", pod.labels, "=")
    lines += _multiline("Annotations", pod.annotations, ": ")
    lines.append(f"Status:\t{status.phase}")
    if status.reason:
        lines.append(f"Reason:\t{status.reason}")
    if status.message:
        lines.append(f"Message:\t{status.message}")
    if pod.source == "file":
        lines.append("Controlled By:\tNode/" + pod.node_name)
    init_statuses = {cs.name: cs for cs in status.init_container_statuses}
    statuses = {cs.name: cs for cs in status.container_statuses}
    if pod.init_containers:
        lines.append("Init Containers:")
        for c in pod.init_containers:
            lines += _container_lines(c, init_statuses.get(c.name))
    lines.append("Containers:")
    for c in pod.containers:
        lines += _container_lines(c, statuses.get(c.name))
    if status.conditions:
        lines += ["Conditions:", "  Type\tStatus"]
        lines += [f"  {cond.type} \t{cond.status} " for cond in status.conditions]
    if pod.resource_claims:
        lines.append("Resource Claims:")
        for rc in pod.resource_claims:
            lines.append(f"  {rc.name}:")
            if rc.resource_claim_name:
                lines.append(f"    ResourceClaimName:\t{rc.resource_claim_name}")
            else:
                lines.append(f"    ResourceClaimTemplateName:\t{rc.resource_claim_template_name}")
    lines.append(f"QoS Class:\t{status.qos_class or pod_qos(pod)}")
    lines += _event_lines(events, now)
    return tabwrite(lines)
