"""Virtual nodes: extra Nodes (and their ResourceSlices) declared in NodeAgentConfiguration, and the
tiny node agent that runs their pods on paper.

One responsibility: let one process simulate a cluster for scheduling. The specs come parsed
from the configuration (nodeagent/config/virtualnodes.py, at load, so `check-config` refuses
what `run` would); `parse` is re-exported here for the callers that build specs from a profile.
Two parts:
- `node_object` / `slice_objects` / `publish`: the Node (capacity, allocatable = capacity minus
  reservations, Ready, labels) and one ResourceSlice per driver, generated from the device
  profile, written into the store; virtual nodes no longer configured are removed.
- `VirtualPods` (no I/O) decides: pods bound to a virtual node go Running once every claim is
  allocated and reserved for them (the node waits for the control plane, as a kubelet would);
  with the annotation nodeagent.dev/finish-after-seconds they end (Succeeded, or Failed when
  nodeagent.dev/exit-code is not 0) after that time. The claim controller then releases their
  claims; the scheduler's node accounting drops them. `VirtualNodeAgent` writes its decisions
  into the store of this process (the control plane's virtual nodes); nodeapi/virtual.py
  writes them through the Kubernetes API (the virtual nodes of a node process).

"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nodeagent.config.model import DeviceGroup as DeviceGroup
from nodeagent.config.model import VirtualNodeSpec as VirtualNodeSpec
from nodeagent.config.versions import DEFAULT_VERSION, release_version
from nodeagent.config.virtualnodes import parse as parse
from nodeagent.config.virtualnodes import subst as _subst
from nodeagent.controlplane.convert import basic as convert
from nodeagent.errors import NodeAgentError
from nodeagent.host.address import node_addresses
from nodeagent.objects.pod.manifest import parse_key, pod_from_manifest
from nodeagent.objects.pod.model import ANNOTATION_EXIT_CODE, ANNOTATION_FINISH_AFTER, Pod, PodStatus
from nodeagent.objects.pod.output import (
    DISRUPTION_TARGET,
    NODE_CONDITIONS,
    NODE_STATUS_FIELDS,
    merged_status,
    status_to_json,
)
from nodeagent.objects.pod.status_resources import (
    GATE_CONTAINER_RESOURCES,
    GATE_POD_RESOURCES,
    add_generated,
    host_ips,
)
from nodeagent.pods import status as st
from nodeagent.pods.qos import pod_qos
from nodeagent.pods.resources import pod_limits, pod_requests
from nodeagent.store import ObjectStore, Transaction
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

# nodeInfo.kubeletVersion of virtual nodes when the caller does not name the emulated release
DEFAULT_KUBELET_VERSION = release_version(DEFAULT_VERSION)
LABEL_VIRTUAL = "nodeagent.dev/virtual"
LABEL_SLICE_NODE = "nodeagent.dev/virtual-node"
LABEL_HOST = "nodeagent.dev/virtual-host"
"""On the Nodes and slices of virtual nodes served by a node process: that process's node name."""


# --- objects ------------------------------------------------------------------------------------


def node_object(spec: VirtualNodeSpec) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux", LABEL_VIRTUAL: "true",
              **spec.labels}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels},
        "spec": {"taints": [dict(t) for t in spec.taints]} if spec.taints else {},
    }


def node_status(spec: VirtualNodeSpec, now: float, node_ips: Sequence[str] = (),
                kubelet_version: str = DEFAULT_KUBELET_VERSION) -> dict[str, Any]:
    """The virtual node's status; `node_ips`: its InternalIPs (the daemon's: it runs on this host).
    nodeInfo.kubeletVersion is the emulated release's (v1.37.2), as on the process's own node:
    clients parse it as a version, and a virtual node stands for a kubelet of that release. The
    machine identity (machineID, bootID, osImage...) is left out: a virtual node is on paper, it
    runs on no machine, and its Ready message says so."""
    stamp = rfc3339(now)
    return {
        "addresses": node_addresses(node_ips, spec.name),
        "capacity": dict(spec.capacity),
        "allocatable": dict(spec.allocatable),
        "conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "virtual node simulated by nodeagent", "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
        }],
        "nodeInfo": {"kubeletVersion": kubelet_version, "operatingSystem": "linux", "architecture": "amd64"},
    }


SLICE_MANAGER = "nodeagent"
"""The field manager of the virtual nodes' ResourceSlices. Upstream a DRA driver's kubelet plugin
publishes them (k8s.io/dynamic-resource-allocation's resourceslice controller: Create and Update
through client-go without a fieldManager), so kube-apiserver records an Update by the first part of
its User-Agent, the plugin binary's name. The emulated drivers of the virtual nodes run in the
daemon, whose binary is `nodeagent` (not the kubelet, which publishes no slices)."""


def slice_objects(spec: VirtualNodeSpec) -> list[dict[str, Any]]:
    by_pool: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for g in spec.devices:
        devices = by_pool.setdefault((g.driver, g.pool or spec.name), [])
        for i in range(g.count):
            attrs = {
                k: {t: _subst(v, i, spec.name) if isinstance(v, str) else v for t, v in typed.items()}
                for k, typed in g.attributes.items()
            }
            dev: dict[str, Any] = {"name": _subst(g.name, i, spec.name)}
            if attrs:
                dev["attributes"] = attrs
            if g.capacity:
                dev["capacity"] = {k: {"value": v} for k, v in g.capacity.items()}
            devices.append(dev)
    out = []
    for (driver, pool), devices in by_pool.items():
        suffix = driver if pool == spec.name else f"{driver}-{pool}"
        out.append({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{spec.name}-{suffix}"[:253].rstrip(".-"),
                         "labels": {LABEL_SLICE_NODE: spec.name}},
            "spec": {
                "driver": driver,
                "nodeName": spec.name,
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        })
    return out


def publish(store: ObjectStore, specs: Sequence[VirtualNodeSpec], now: float, node_ips: Sequence[str] = (),
            kubelet_version: str = DEFAULT_KUBELET_VERSION) -> None:
    """Write the Nodes and ResourceSlices; remove virtual nodes and slices no longer configured."""
    wanted = {s.name for s in specs}
    with store.transaction(manager="kubelet") as tx:
        for old in tx.list("Node", selector={LABEL_VIRTUAL: "true"}):
            if old["metadata"]["name"] not in wanted and not _hosted(old):
                tx.delete("Node", "", old["metadata"]["name"])
        for spec in specs:
            tx.apply(node_object(spec))
            cur = tx.get("Node", "", spec.name)
            cur["status"] = node_status(spec, now, node_ips, kubelet_version)
            tx.update_status(cur)
    # after the Nodes, as a DRA driver's kubelet plugin publishes once its node is there
    with store.transaction(manager=SLICE_MANAGER) as tx:
        wanted_slices: set[str] = set()
        for spec in specs:
            for s in slice_objects(spec):
                name = s["metadata"]["name"]
                wanted_slices.add(name)
                old_slice = tx.try_get("ResourceSlice", "", name)
                if old_slice is not None:
                    s["spec"]["pool"]["generation"] = slice_generation(old_slice, s)
                tx.apply(s)
        for old in tx.list("ResourceSlice", selector=LABEL_SLICE_NODE):
            if old["metadata"]["name"] not in wanted_slices and not _hosted(old):
                tx.delete("ResourceSlice", "", old["metadata"]["name"])


def slice_generation(old: Mapping[str, Any], new: Mapping[str, Any]) -> int:
    """The pool generation `new` is published with over `old`: the same while the devices are."""
    old_spec = old.get("spec") or {}
    gen = int((old_spec.get("pool") or {}).get("generation") or 1)
    same = old_spec.get("devices") == new["spec"]["devices"] and old_spec.get("driver") == new["spec"]["driver"]
    return gen if same else gen + 1


def _hosted(obj: Mapping[str, Any]) -> bool:
    """Published by a node process's virtual nodes (nodeapi/virtual.py), not by this control plane."""
    return LABEL_HOST in ((obj.get("metadata") or {}).get("labels") or {})


# --- the virtual node agent ---------------------------------------------------------------------

RUNNING = "Running"
KINDS = ("Pod", "ResourceClaim")
# The node's part of a pod status, as the process's own node writes it (objects/pod/output.py): the same
# fields and condition types, running or finished.
RUNNING_CONDITIONS = FINISHED_CONDITIONS = tuple(sorted(NODE_CONDITIONS))
STATUS_FIELDS = frozenset(NODE_STATUS_FIELDS)
"""The pod status fields a virtual node writes (its part of the kubelet's status patch)."""

PodKey = tuple[str, str]
Lookup = Callable[[str, str], Mapping[str, Any] | None]


# A virtual node's pod statuses are the process's own node's, by the same code: the pod parsed into the
# node's model, its status made by pods/status.py (running_status, finished_status, killed_status) and
# rendered by objects/pod/output.py, laid over the API's status as the node's status manager patches it.
# A pod the node's parser refuses (nothing to derive containers from) gets the few fields below instead.

Parsed = dict[bytes, tuple[Pod, dict[str, int], dict[str, int]]]
"""Pod models with their requests and limits by objects/pod/manifest.parse_key (a writer's own memo)."""
MAX_PARSED = 1024


def _parse(pod: Mapping[str, Any], clock: Clock,
           parsed: Parsed | None) -> tuple[Pod, dict[str, int], dict[str, int]] | None:
    """The pod's model with its requests and limits (None: the node's parser refuses it), from
    `parsed` when an equal pod was parsed (the statuses below read the containers, their images and
    resources, never the names): the replicas of a workload are parsed once, not once per start,
    finish and generated status; bounded.

    The model is parsed from the pod without its status and managedFields (the parser reads neither)
    and without spec.nodeName (the statuses never read the model's node): the model keeps its
    manifest, a copy of what it was given, and with them an entry held ~32 KB for a bench pod
    instead of ~15, and the key (which has the spec) made one entry per node: 16 MiB at 500 nodes
    in bench/scheduler_peer.py for what is one parse."""
    md, spec = pod.get("metadata"), pod.get("spec")
    doc = {**pod, "apiVersion": "v1", "kind": "Pod"}
    doc.pop("status", None)
    if type(md) is dict and "managedFields" in md:
        doc["metadata"] = {k: v for k, v in md.items() if k != "managedFields"}
    if type(spec) is dict and "nodeName" in spec:
        doc["spec"] = {k: v for k, v in spec.items() if k != "nodeName"}
    key = parse_key(doc) if parsed is not None else None
    hit = parsed.get(key) if parsed is not None and key is not None else None
    if hit is None:
        try:
            model = pod_from_manifest(doc, clock=clock)
        except NodeAgentError:
            return None
        hit = (model, pod_requests(model), pod_limits(model))
        if parsed is not None and key is not None:
            if len(parsed) >= MAX_PARSED:
                parsed.clear()
            parsed[key] = hit
    return hit


def _node_model(pod: Mapping[str, Any], clock: Clock, parsed: Parsed | None) -> Pod | None:
    hit = _parse(pod, clock, parsed)
    return None if hit is None else hit[0]


def _started(pod: Mapping[str, Any], now: float) -> float:
    """When the pod started (its status.startTime), else `now`."""
    text = (pod.get("status") or {}).get("startTime")
    if not text:
        return now
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return now


def _written(pod: Mapping[str, Any], model: Pod, status: PodStatus) -> dict[str, Any]:
    return merged_status(pod.get("status") or {}, status_to_json(model, status))


def _running(pod: Mapping[str, Any], model: Pod, now: float) -> PodStatus:
    started = _started(pod, now)
    return dataclasses.replace(st.running_status(model, pod_qos(model), started), start_time=started)


def running_status(pod: Mapping[str, Any], now: float, clock: Clock,
                   parsed: Parsed | None = None) -> dict[str, Any]:
    """The pod's status once a virtual node runs it: Running, ready, every container started, init
    containers completed (sidecars running), as the node's running_status."""
    model = _node_model(pod, clock, parsed)
    if model is None:
        return _plain_running(pod, str(rfc3339(now)))
    return _written(pod, model, _running(pod, model, now))


def exit_code(pod: Mapping[str, Any]) -> int:
    """nodeagent.dev/exit-code (0 when absent, 1 when not a number)."""
    try:
        return int((pod["metadata"].get("annotations") or {}).get(ANNOTATION_EXIT_CODE, "0"))
    except ValueError:
        return 1


def finished_status(pod: Mapping[str, Any], now: float, clock: Clock, code: int | None = None,
                    parsed: Parsed | None = None) -> dict[str, Any]:
    """The pod's status once its finish-after time is over: Succeeded, or Failed with its exit code
    (`code`, else the pod's nodeagent.dev/exit-code), as the node's finished_status."""
    code = exit_code(pod) if code is None else code
    model = _node_model(pod, clock, parsed)
    if model is None:
        return _plain_finished(pod, str(rfc3339(now)), code)
    return _written(pod, model, st.finished_status(_running(pod, model, now), code, now))


def killed_status(pod: Mapping[str, Any], now: float, clock: Clock,
                  parsed: Parsed | None = None) -> dict[str, Any]:
    """The status of a pod deleted with a grace period, once its virtual node stopped it: a
    running pod's containers exit on SIGTERM (0, Completed: Succeeded), as on a nodeagent node;
    a pod that never started ends Failed; a terminal pod keeps its status."""
    if convert.is_terminal(pod):
        return dict(pod.get("status") or {})
    if (pod.get("status") or {}).get("phase") == RUNNING:
        model = _node_model(pod, clock, parsed)
        if model is None:
            return _plain_finished(pod, str(rfc3339(now)), 0)
        return _written(pod, model, st.killed_status(model, _running(pod, model, now), now))
    new = dict(pod.get("status") or {})
    new["phase"] = convert.FAILED
    return new


def _plain_running(pod: Mapping[str, Any], stamp: str) -> dict[str, Any]:
    new = dict(pod.get("status") or {})
    new["phase"] = RUNNING
    new["startTime"] = new.get("startTime") or stamp
    for ctype in ("Initialized", "ContainersReady", "Ready"):
        convert.set_condition(new, {"type": ctype, "status": "True", "lastTransitionTime": stamp})
    new["containerStatuses"] = [
        {"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "", "ready": True, "restartCount": 0,
         "started": True, "state": {"running": {"startedAt": stamp}}}
        for c in (pod.get("spec") or {}).get("containers") or ()
    ]
    return new


def _plain_finished(pod: Mapping[str, Any], stamp: str, code: int) -> dict[str, Any]:
    new = dict(pod.get("status") or {})
    new["phase"] = convert.SUCCEEDED if code == 0 else convert.FAILED
    for ctype in ("ContainersReady", "Ready"):
        convert.set_condition(new, {"type": ctype, "status": "False", "reason": "PodCompleted",
                                    "lastTransitionTime": stamp})
    new["containerStatuses"] = [
        {**cs, "ready": False, "started": False, "state": {"terminated": {
            "exitCode": code, "reason": "Completed" if code == 0 else "Error", "finishedAt": stamp}}}
        for cs in new.get("containerStatuses") or ()
    ]
    return new


def generated_status(pod: Mapping[str, Any], status: dict[str, Any], node_ips: Sequence[str],
                     gate: Callable[[str], bool] | None, clock: Clock, parsed: Parsed | None = None) -> dict[str, Any]:
    """`status` with what the kubelet's generateAPIPodStatus adds to every pod status, by the code the
    process's own node writes it with (status_resources.add_generated): hostIP/hostIPs (the node's
    InternalIP) and the pod's and each started container's resources and allocatedResources, gated by
    `gate` (the release's feature gates; None: 1.37's). A pod the node's parser refuses keeps the
    status as decided (nothing to derive them from).

    `parsed`: the caller's memo of parses (add_generated reads the containers and resources, not the
    names), so the replicas of a workload are parsed once, not once per pod start; bounded."""
    hit = _parse(pod, clock, parsed)
    if hit is None:
        return status
    model, requests, limits = hit
    on = gate if gate is not None else (lambda name: True)
    return add_generated(dict(status), model, requests=requests, limits=limits,
                         node_ips=host_ips([{"type": "InternalIP", "address": ip} for ip in node_ips]),
                         container_resources=on(GATE_CONTAINER_RESOURCES), pod_level=on(GATE_POD_RESOURCES))


def status_patch(status: Mapping[str, Any]) -> dict[str, Any]:
    """The virtual node's part of `status` (STATUS_FIELDS), as the kubelet's status patch sends it:
    only the conditions it sets (never DisruptionTarget: the one its status carries is the API's, which the
    patch's merge keeps)."""
    mine = NODE_CONDITIONS - {DISRUPTION_TARGET}
    out = {k: v for k, v in status.items() if k in STATUS_FIELDS and k != "conditions"}
    out["conditions"] = [c for c in status.get("conditions") or () if c.get("type") in mine]
    return out


@dataclass(frozen=True)
class Write:
    """One pod status a virtual node writes: `pod` as read when deciding, `status` its new status."""

    key: PodKey
    uid: str
    pod: Mapping[str, Any]
    status: dict[str, Any]
    start: bool  # True: the pod starts (Running); False: it finishes
    delete: bool = False  # then deleted with period 0 (a graceful deletion the node completes)


class VirtualPods:
    """What a virtual node does with its pods, and when; no I/O (reads through `get_pod`/`get_claim`).

    Exists so the same decisions drive the control plane's in-process agent (one store
    transaction per pass, VirtualNodeAgent) and a node process's virtual nodes over the
    Kubernetes API (nodeapi/virtual.py): `handle` every Pod and ResourceClaim event, `plan` the
    writes due now, then `written`/`failed` for each."""

    def __init__(self, clock: Clock, nodes: Sequence[str], get_pod: Lookup, get_claim: Lookup) -> None:
        self.clock = clock
        self.nodes = frozenset(nodes)
        self._get_pod = get_pod
        self._get_claim = get_claim
        self._work: set[PodKey] = set()
        self._finish_at: dict[PodKey, tuple[float, str]] = {}  # pod key -> (monotonic, uid)
        self._by_claim: dict[PodKey, set[PodKey]] = {}
        self._deleting: dict[PodKey, str] = {}  # pods deleted with a grace period -> uid
        self.parsed: Parsed = {}
        """Parses of the pods' statuses (_parse); the agent's generated status shares it."""

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        if not self.nodes:
            return
        if obj.get("kind") == "Pod":
            key = convert.pod_key(obj)
            if event_type == "DELETED":
                self._finish_at.pop(key, None)
                self._work.discard(key)
                self._deleting.pop(key, None)
                return
            if convert.is_deleting(obj) and convert.node_name_of(obj) in self.nodes:
                # the kubelet's graceful termination: stop it, write its status, delete it
                self._finish_at.pop(key, None)
                self._work.discard(key)
                self._deleting[key] = convert.pod_uid(obj)
                return
            if convert.node_name_of(obj) in self.nodes and not convert.is_terminal(obj):
                self._work.add(key)
                for _, cname in convert.pod_claim_names(obj):
                    if cname:
                        self._by_claim.setdefault((key[0], cname), set()).add(key)
        elif obj.get("kind") == "ResourceClaim":
            md = obj["metadata"]
            ckey = (md.get("namespace") or "default", md["name"])
            waiting = self._by_claim.pop(ckey, None) if event_type == "DELETED" else self._by_claim.get(ckey)
            if waiting:
                self._work.update(waiting)

    def pending(self) -> int:
        return len(self._work) + len(self._deleting)

    def next_deadline(self) -> float | None:
        return min((t for t, _ in self._finish_at.values()), default=None)

    def plan(self) -> list[Write]:
        """The pods deleted with a grace period (stopped, then deleted), the pods to finish (due
        now), then the pods to start (claims ready), sorted by key."""
        now = self.clock.monotonic()
        due = [(key, uid) for key, (at, uid) in self._finish_at.items() if at <= now]
        work, self._work = self._work, set()
        deleting, self._deleting = self._deleting, {}
        if not due and not work and not deleting:
            return []
        now_wall = self.clock.now()
        out: list[Write] = []
        for key, uid in sorted(deleting.items()):
            pod = self._get_pod(*key)
            if pod is not None and convert.pod_uid(pod) == uid:
                status = killed_status(pod, now_wall, self.clock, parsed=self.parsed)
                out.append(Write(key, uid, pod, status, start=False, delete=True))
        for key, uid in due:
            del self._finish_at[key]
            pod = self._get_pod(*key)
            if pod is not None and convert.pod_uid(pod) == uid and not convert.is_terminal(pod):
                status = finished_status(pod, now_wall, self.clock, parsed=self.parsed)
                out.append(Write(key, uid, pod, status, start=False))
        for key in sorted(work):
            pod = self._get_pod(*key)
            if pod is None or convert.node_name_of(pod) not in self.nodes or convert.is_terminal(pod):
                continue
            if (pod.get("status") or {}).get("phase") == RUNNING:
                self._arm(key, pod)
                continue
            if self._claims_ready(pod):
                out.append(Write(key, convert.pod_uid(pod), pod, running_status(pod, now_wall, self.clock, self.parsed),
                                 start=True))
        return out

    def written(self, write: Write) -> None:
        if write.start:
            self._arm(write.key, write.pod)

    def failed(self, write: Write, err: Exception) -> None:
        """A write that did not happen: a start or a deletion is tried again at the next pass."""
        what = "delete" if write.delete else "start" if write.start else "finish"
        logger.warning("virtual node could not %s pod=%s/%s err=%s", what, write.key[0], write.key[1], err)
        if write.start:
            self._work.add(write.key)
        if write.delete:
            self._deleting[write.key] = write.uid

    def _claims_ready(self, pod: Mapping[str, Any]) -> bool:
        ns = pod["metadata"].get("namespace") or "default"
        uid = convert.pod_uid(pod)
        for _, cname in convert.pod_claim_names(pod):
            if cname is None:
                return False
            claim = self._get_claim(ns, cname)
            if claim is None or not convert.is_reserved_for(claim, uid):
                return False
        return True

    def _arm(self, key: PodKey, pod: Mapping[str, Any]) -> None:
        raw = (pod["metadata"].get("annotations") or {}).get(ANNOTATION_FINISH_AFTER)
        if raw is None or key in self._finish_at:
            return
        try:
            seconds = float(raw)
        except ValueError:
            return
        self._finish_at[key] = (self.clock.monotonic() + max(0.0, seconds), convert.pod_uid(pod))


class VirtualNodeAgent:
    """Runs (on paper) the pods bound to the control plane's virtual nodes, over the store of this
    process: VirtualPods' writes, one store transaction per pass. Synchronous; loop.py drives it."""

    def __init__(self, store: ObjectStore, clock: Clock, nodes: Sequence[str],
                 gate: Callable[[str], bool] | None = None) -> None:
        """`gate`: the release's feature gates, for the status fields its kubelet writes (None: 1.37's)."""
        self.gate = gate
        self.store = store
        self.clock = clock
        self.pods = VirtualPods(clock, nodes, lambda ns, name: store.peek("Pod", ns, name),
                                lambda ns, name: store.peek("ResourceClaim", ns, name))
        self.nodes = self.pods.nodes

    def handle(self, event_type: str, obj: Mapping[str, Any]) -> None:
        self.pods.handle(event_type, obj)

    def pending(self) -> int:
        return self.pods.pending()

    def next_deadline(self) -> float | None:
        return self.pods.next_deadline()

    def sync(self) -> int:
        """Start ready pods, finish due ones, in one store transaction; the number of pods written."""
        writes = self.pods.plan()
        if not writes:
            return 0
        done: list[Write] = []
        with self.store.transaction(savepoints=False, manager="kubelet") as tx:  # a failing pod fails before it writes
            for w in writes:
                try:
                    # read, not copied (the status write copies only the status it takes)
                    stored = tx.peek("Pod", *w.key)
                    cur = dict(stored) if stored is not None else tx.get("Pod", *w.key)  # get: its NotFound
                    if convert.pod_uid(cur) != w.uid:
                        continue
                    node = tx.peek("Node", "", str((cur.get("spec") or {}).get("nodeName") or "")) or {}
                    ips = [str(a.get("address")) for a in (node.get("status") or {}).get("addresses") or ()
                           if a.get("type") == "InternalIP" and a.get("address")]
                    cur["status"] = generated_status(cur, dict(w.status), ips, self.gate, self.clock,
                                                     self.pods.parsed)
                    tx.update_status(cur, copy=False)
                    if w.delete:
                        _delete_now(tx, cur)
                    done.append(w)
                except NodeAgentError as err:
                    self.pods.failed(w, err)
        for w in done:
            self.pods.written(w)
        return len(done)


def _delete_now(tx: Transaction, pod: Mapping[str, Any]) -> None:
    """The status manager's final delete (period 0) of a pod in its grace period: marked with no
    grace left, then deleted, as kube-apiserver writes it (watchers see both)."""
    md = pod["metadata"]
    pending = int(md.get("deletionGracePeriodSeconds") or 0)
    stamp = datetime.fromisoformat(str(md["deletionTimestamp"]).replace("Z", "+00:00")).timestamp()
    namespace = md.get("namespace") or "default"
    if pending:
        tx.mark_deleting("Pod", namespace, md["name"], deletion_timestamp=rfc3339(stamp - pending), grace_period=0)
    tx.delete("Pod", namespace, md["name"])
