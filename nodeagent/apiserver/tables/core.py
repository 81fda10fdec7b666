"""Server-side printers of the core and coordination kinds: Pod, Node, Namespace, Event,
ResourceQuota, ConfigMap, ServiceAccount, Lease.

Why one printer per kind, written out: `kubectl get` shows exactly the columns and cells the API
server computes (k8s.io/kubernetes pkg/printers/internalversion/printers.go), and clients such
as kubectl compare on those strings (a pod's Status "CrashLoopBackOff", a node's
"Ready,SchedulingDisabled"), so the logic follows upstream's branch by branch. Pure: no I/O;
`now` is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.apiserver.tables.common import (
    AGE_COLUMN,
    NAME_COLUMN,
    Cells,
    Printer,
    age,
    column,
    get,
    items,
    name_of,
    parse_time,
    since,
    text,
)
from nodeagent.util.timefmt import human_duration

# --- Pod -----------------------------------------------------------------------------------------

_POD_COLUMNS = (
    NAME_COLUMN,
    column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    column("Status", "The aggregate status of the containers in this pod."),
    column("Restarts", "The number of times the containers in this pod have been restarted and when the last "
           "container in this pod has restarted."),
    AGE_COLUMN,
    column("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet "
           "allocated.", priority=1),
    column("Node", "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the "
           "scheduler simply schedules this pod onto that node, assuming that it fits resource requirements.",
           priority=1),
    column("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but it "
           "cannot be scheduled right away as preemption victims receive their graceful termination periods. This "
           "field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the "
           "pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on "
           "this node to a higher priority pod that is created after preemption. As a result, this field may be "
           "different than PodSpec.nodeName when the pod is scheduled.", priority=1),
    column("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready "
           "when all its containers are ready AND all conditions specified in the readiness gates have status equal "
           'to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates',
           priority=1),
)


def _condition_true(conditions: Any, kind: str) -> bool:
    return any(get(c, "type") == kind and get(c, "status") == "True" for c in conditions or ())


def _restartable(container: Any) -> bool:
    """A sidecar: an init container with restartPolicy Always (KEP-753)."""
    return text(container, "restartPolicy") == "Always"


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def _later(current: float | None, status: Any) -> float | None:
    finished = parse_time(get(status, "lastState", "terminated", "finishedAt"))
    if finished is not None and (current is None or finished > current):
        return finished
    return current


def _terminated_reason(terminated: Mapping[str, Any], prefix: str) -> str:
    if terminated.get("reason"):
        return prefix + str(terminated["reason"])
    signal = _int(terminated.get("signal"))
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{_int(terminated.get('exitCode'))}"


def _containers(statuses: Sequence[Any], restarts: int, last: float | None) -> tuple[str, int, int, float | None]:
    """printPod's walk of the regular containers' statuses, last to first: (the reason of the first
    container waiting with one or terminated, "" if none; running and ready containers; restarts and
    last restart time added to those given).

    Written out per container with one lookup a field: a pod has up to thousands of containers and
    its Table is printed on the event loop at each `kubectl get` (issue 25: 20-60 ms a GET for 7,400
    containers with common.get's generic walk; 2.5-2.7 ms so, alone). A status that is no object
    counts for nothing, as common.get reads it."""
    reason = ""
    running = 0
    for cs in reversed(statuses):
        if type(cs) is not dict and not isinstance(cs, Mapping):  # the exact type first: the ABC check is slow
            continue
        count = cs.get("restartCount")
        if type(count) is int:
            restarts += count
        elif count is not None:
            restarts += _int(count)
        if cs.get("lastState"):  # empty or unset: no finishedAt to read
            last = _later(last, cs)
        state = cs.get("state")
        if type(state) is not dict and not isinstance(state, Mapping):
            continue
        waiting, terminated = state.get("waiting"), state.get("terminated")
        waiting_reason = None
        if waiting is not None and (type(waiting) is dict or isinstance(waiting, Mapping)):
            waiting_reason = waiting.get("reason")
        if isinstance(waiting_reason, str) and waiting_reason:
            reason = waiting_reason
        elif terminated is not None and (type(terminated) is dict or isinstance(terminated, Mapping)):
            reason = _terminated_reason(terminated, "")
        elif cs.get("ready") is True:
            run = state.get("running")
            if type(run) is dict or isinstance(run, Mapping):
                running += 1
    return reason, running, restarts, last


def pod_status_reason(pod: Mapping[str, Any]) -> tuple[str, int, int, int, float | None]:
    """(Status cell, ready containers, total containers, restarts, last restart time) as upstream's printPod."""
    spec, status = get(pod, "spec") or {}, get(pod, "status") or {}
    init_specs = {text(c, "name"): c for c in items(spec, "initContainers")}
    total = len(items(spec, "containers")) + sum(1 for c in init_specs.values() if _restartable(c))
    ready = restarts = sidecar_restarts = 0
    last: float | None = None
    sidecar_last: float | None = None
    phase = text(status, "phase")
    reason = text(status, "reason") or phase
    for cond in items(status, "conditions"):
        if get(cond, "type") == "PodScheduled" and get(cond, "reason") == "SchedulingGated":
            reason = "SchedulingGated"

    initializing = False
    for i, cs in enumerate(items(status, "initContainerStatuses")):
        restarts += _int(get(cs, "restartCount"))
        last = _later(last, cs)
        sidecar = _restartable(init_specs.get(text(cs, "name")))
        if sidecar:
            sidecar_restarts += _int(get(cs, "restartCount"))
            sidecar_last = _later(sidecar_last, cs)
        terminated, waiting = get(cs, "state", "terminated"), get(cs, "state", "waiting")
        if isinstance(terminated, Mapping) and _int(terminated.get("exitCode")) == 0:
            continue
        if sidecar and get(cs, "started") is True:
            ready += 1 if get(cs, "ready") is True else 0
            continue
        if isinstance(terminated, Mapping):
            reason = _terminated_reason(terminated, "Init:")
        elif text(waiting, "reason") and text(waiting, "reason") != "PodInitializing":
            reason = "Init:" + text(waiting, "reason")
        else:
            reason = f"Init:{i}/{len(items(spec, 'initContainers'))}"
        initializing = True
        break

    if not initializing or _condition_true(items(status, "conditions"), "Initialized"):
        found, running, restarts, last = _containers(items(status, "containerStatuses"), sidecar_restarts,
                                                     sidecar_last)
        reason, ready, has_running = found or reason, ready + running, running > 0
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(items(status, "conditions"), "Ready") else "NotReady"

    if get(pod, "metadata", "deletionTimestamp"):
        if text(status, "reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Failed", "Succeeded"):
            reason = "Terminating"
    return reason, ready, total, restarts, last


def _pod_cells(pod: Mapping[str, Any], now: float) -> Cells:
    reason, ready, total, restarts, last = pod_status_reason(pod)
    restarts_cell = str(restarts)
    if restarts and last is not None:
        restarts_cell = f"{restarts} ({human_duration(now - last)} ago)"
    status = get(pod, "status") or {}
    ips = [text(ip, "ip") for ip in items(status, "podIPs")]
    # The v1 -> internal conversion fills podIPs from podIP when only the latter is set.
    pod_ip = (ips[0] if ips else text(status, "podIP")) or "<none>"
    gates = items(pod, "spec", "readinessGates")
    gates_cell = "<none>"
    if gates:
        conditions = {text(c, "type"): text(c, "status") for c in reversed(items(status, "conditions"))}
        passed = sum(1 for g in gates if conditions.get(text(g, "conditionType")) == "True")
        gates_cell = f"{passed}/{len(gates)}"
    return [
        name_of(pod), f"{ready}/{total}", reason, restarts_cell, age(pod, now), pod_ip,
        text(pod, "spec", "nodeName") or "<none>", text(status, "nominatedNodeName") or "<none>", gates_cell,
    ]


def _pod_conditions(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    phase = text(pod, "status", "phase")
    if phase == "Succeeded":
        return [{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed "
                 "successfully."}]
    if phase == "Failed":
        return [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]
    return []


# --- Node ----------------------------------------------------------------------------------------

_ADDRESSES_DOC = (
    "List of addresses reachable to the node. Queried from cloud provider, if available. More info: "
    "https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, "
    "but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers "
    "should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should "
    "assume that addresses can change during the lifetime of a Node. However, there are some exceptions where "
    "this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the "
    "downward API (status.hostIP)."
)
_NODE_COLUMNS = (
    NAME_COLUMN,
    column("Status", "The status of the node"),
    column("Roles", "The roles of the node"),
    AGE_COLUMN,
    column("Version", "Kubelet Version reported by the node."),
    column("Internal-IP", _ADDRESSES_DOC, priority=1),
    column("External-IP", _ADDRESSES_DOC, priority=1),
    column("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
           priority=1),
    column("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
           priority=1),
    column("Container-Runtime", "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
           "containerd://1.4.2).", priority=1),
)
_ROLE_PREFIX = "node-role.kubernetes.io/"


def _node_cells(node: Mapping[str, Any], now: float) -> Cells:
    ready = [c for c in items(node, "status", "conditions") if get(c, "type") == "Ready"]
    status = [("Ready" if get(ready[-1], "status") == "True" else "NotReady")] if ready else ["Unknown"]
    if get(node, "spec", "unschedulable") is True:
        status.append("SchedulingDisabled")
    roles: set[str] = set()
    for key, value in (get(node, "metadata", "labels") or {}).items():
        if key.startswith(_ROLE_PREFIX) and key[len(_ROLE_PREFIX):]:
            roles.add(key[len(_ROLE_PREFIX):])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    info = get(node, "status", "nodeInfo") or {}

    def address(kind: str) -> str:
        found = [text(a, "address") for a in items(node, "status", "addresses") if get(a, "type") == kind]
        return found[0] if found else "<none>"

    return [
        name_of(node), ",".join(status), ",".join(sorted(roles)) or "<none>", age(node, now),
        text(info, "kubeletVersion"), address("InternalIP"), address("ExternalIP"),
        text(info, "osImage") or "<unknown>", text(info, "kernelVersion") or "<unknown>",
        text(info, "containerRuntimeVersion") or "<unknown>",
    ]


# --- Event ---------------------------------------------------------------------------------------

_EVENT_COLUMNS = (
    column("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    column("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    column("Reason", "This should be a short, machine understandable string that gives the reason for the "
           "transition into the object's current status."),
    column("Object", "The object that this event is about."),
    column("Subobject", "If referring to a piece of an object instead of an entire object, this string should "
           "contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For "
           "example, if the object reference is to a container within a pod, this would take on a value like: "
           '"spec.containers{name}" (where "name" refers to the name of the container that triggered the event) '
           'or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This '
           "syntax is chosen only to have some well-defined way of referencing a part of an object.", priority=1),
    column("Source", "The component reporting this event. Should be a short machine understandable string.",
           priority=1),
    column("Message", "A human-readable description of the status of this operation."),
    column("First Seen", "The time at which the event was first recorded. (Time of server receipt is in "
           "TypeMeta.)", priority=1),
    column("Count", "The number of times this event has occurred.", priority=1),
    column("Name", NAME_COLUMN["description"], format_="name", priority=1),
)


def _event_cells(event: Mapping[str, Any], now: float) -> Cells:
    """A core v1 Event (events.k8s.io ones are converted to it first, as upstream prints the internal type)."""
    first = since(get(event, "firstTimestamp"), now)
    if parse_time(get(event, "firstTimestamp")) is None:
        first = since(get(event, "eventTime"), now)
    last = since(get(event, "lastTimestamp"), now)
    if parse_time(get(event, "lastTimestamp")) is None:
        last = first
    count = _int(get(event, "count"))
    series = get(event, "series")
    if isinstance(series, Mapping):
        last = since(series.get("lastObservedTime"), now)
        count = _int(series.get("count"))
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    kind, name = text(event, "involvedObject", "kind").lower(), text(event, "involvedObject", "name")
    component = text(event, "source", "component") or text(event, "reportingComponent")
    instance = text(event, "source", "host") or text(event, "reportingInstance")
    return [
        last, text(event, "type"), text(event, "reason"), f"{kind}/{name}" if name else kind,
        text(event, "involvedObject", "fieldPath"), f"{component}, {instance}" if instance else component,
        text(event, "message").strip(), first, count, name_of(event),
    ]


# --- small kinds ---------------------------------------------------------------------------------

_NAMESPACE_COLUMNS = (NAME_COLUMN, column("Status", "The status of the namespace"), AGE_COLUMN)

_QUOTA_COLUMNS = (
    NAME_COLUMN,
    AGE_COLUMN,
    column("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
    column("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of "
           "contention on the node."),
)


def _quota_cells(quota: Mapping[str, Any], now: float) -> Cells:
    hard = get(quota, "status", "hard") or {}
    used = get(quota, "status", "used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        pieces = resource.split(".")
        target = limits if len(pieces) > 1 and pieces[0] == "limits" else requests
        target.append(f"{resource}: {_quantity(used.get(resource))}/{_quantity(hard.get(resource))}")
    return [name_of(quota), age(quota, now), ", ".join(requests), ", ".join(limits)]


def _quantity(value: Any) -> str:
    if value is None or value == "":
        return "0"
    return str(value)


_CONFIGMAP_COLUMNS = (
    NAME_COLUMN,
    column("Data", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', "
           "'_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data "
           "must not overlap with the keys in the BinaryData field, this is enforced during validation process."),
    AGE_COLUMN,
)

_SERVICEACCOUNT_COLUMNS = (
    NAME_COLUMN,
    column("Secrets", "Secrets is a list of the secrets in the same namespace that pods running using this "
           "ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a "
           '"kubernetes.io/enforce-mountable-secrets" annotation set to "true". The '
           '"kubernetes.io/enforce-mountable-secrets" annotation is deprecated since v1.32. Prefer separate '
           "namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated "
           "service account token secrets for use outside of pods. Instead, tokens can be requested directly using "
           "the TokenRequest API, or service account token secrets can be manually created. More info: "
           "https://kubernetes.io/docs/concepts/configuration/secret"),
    AGE_COLUMN,
)

_LEASE_COLUMNS = (
    NAME_COLUMN,
    column("Holder", "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader "
           "Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field."),
    AGE_COLUMN,
)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (Mapping, list)) else 0


PRINTERS: dict[str, Printer] = {
    "pod": Printer(_POD_COLUMNS, _pod_cells, _pod_conditions),
    "node": Printer(_NODE_COLUMNS, _node_cells),
    "namespace": Printer(
        _NAMESPACE_COLUMNS, lambda o, now: [name_of(o), text(o, "status", "phase"), age(o, now)]
    ),
    "event": Printer(_EVENT_COLUMNS, _event_cells),
    "resourcequota": Printer(_QUOTA_COLUMNS, _quota_cells),
    "configmap": Printer(
        _CONFIGMAP_COLUMNS,
        lambda o, now: [name_of(o), _size(get(o, "data")) + _size(get(o, "binaryData")), age(o, now)],
    ),
    "serviceaccount": Printer(
        _SERVICEACCOUNT_COLUMNS, lambda o, now: [name_of(o), _size(get(o, "secrets")), age(o, now)]
    ),
    "lease": Printer(
        _LEASE_COLUMNS, lambda o, now: [name_of(o), text(o, "spec", "holderIdentity"), age(o, now)]
    ),
}
"""By the key a kind's declaration names (nodeagent/kinds: `printer`)."""
