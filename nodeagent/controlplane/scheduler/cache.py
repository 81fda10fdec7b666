"""The scheduler's view of the cluster, kept from the store's watch (an informer cache).

One responsibility: hold what scheduling reads, indexed for it, and keep it current from
watch events and from the scheduler's own writes (applied at once, so the next decision
sees them before their events arrive; an event older than what is held is ignored).

- nodes with their allocatable, readiness and labels, and per node the summed requests of the
  non-terminal pods bound to it (the NodeInfo of the upstream scheduler);
- pods and their effective requests (parsed once per pod generation);
- claims, and which claim holds each allocated device;
- device classes and slices as allocator models, and one allocator Inventory per node, rebuilt
  only when that node's slices or labels change;
- a per-node "device state" version, bumped whenever anything the allocator would read for that
  node changes, so allocation outcomes can be memoized per (node, claim shapes).

Pure: no I/O, no asyncio; objects are the store's shared committed dicts and are never mutated.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from nodeagent.controlplane import allocator as model
from nodeagent.controlplane import taint_rules
from nodeagent.controlplane.convert import basic as convert
from nodeagent.controlplane.convert import sharing as convert_sharing
from nodeagent.controlplane.scheduler import extended, nodealloc, placement
from nodeagent.errors import ValidationError
from nodeagent.objects.pod.manifest import parse_key, pod_from_manifest
from nodeagent.objects.pod.model import Container, Pod
from nodeagent.pods.admission import pod_requests
from nodeagent.util import quantity
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

PODS = "pods"
CHANGE_LOG_MAX = 65536
KINDS = ("Node", "Pod", "ResourceClaim", "DeviceClass", "ResourceSlice", taint_rules.KIND)
ClaimKey = tuple[str, str]


MAX_SPEC_MODELS = 1024
ParsedRequests = tuple[dict[str, int], str, tuple[extended.ContainerAsk, ...], tuple[int, int]]
DEFAULT_MILLI_CPU = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest


@dataclass
class NodeEntry:
    obj: Mapping[str, Any]
    node: model.Node
    ready: bool
    allocatable: dict[str, int]
    requested: dict[str, int] = field(default_factory=dict)
    pods: int = 0
    inventory: model.Inventory | None = None
    device_version: int = 0
    memo: dict[Any, model.AllocationOutcome] = field(default_factory=dict)
    version: int = 0
    """Bumped on any change that can alter a filter or score result on this node."""
    results: dict[Any, tuple[int, str | None, Any, Any]] = field(default_factory=dict)
    """(version, reason, failed outcome or feasible candidate, the candidate's rank) per pod
    shape: the scheduler's equivalence cache."""
    taints: tuple[placement.Taint, ...] = ()
    cordoned: bool = False  # spec.unschedulable
    used_ports: dict[placement.HostPort, int] = field(default_factory=dict)
    """The host ports of the pods counted here, each with the number of pods holding it (NodeInfo.UsedPorts)."""
    nonzero: tuple[int, int] = (0, 0)
    """cpu (millicores) and memory the pods here request, a container without a request counting
    the scheduler's defaults (NodeInfo.NonZeroRequested: NodeResourcesFit's LeastAllocated score)."""
    images: frozenset[str] = frozenset()  # status.images[].names (ImageLocality)


@dataclass
class PodEntry:
    obj: Mapping[str, Any]
    uid: str
    node: str
    requests: dict[str, int]
    active: bool  # counts on its node: bound, not terminal
    error: str = ""  # the pod spec could not be parsed
    placement: placement.Placement = placement.NONE
    dra: dict[str, int] = field(default_factory=dict)
    """What status.nodeAllocatableResourceClaimStatuses adds to `requests` on its node (KEP-5517,
    with DRANodeAllocatableResources on): `requests` alone is what the pod asks (NodeResourcesFit's
    PreFilter), requests + dra what it holds (the NodeInfo)."""
    nonzero: tuple[int, int] = (0, 0)  # cpu and memory with the defaults for missing requests




def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def allocatable_of(node_obj: Mapping[str, Any]) -> dict[str, int]:
    status = node_obj.get("status") or {}
    raw = status.get("allocatable") or status.get("capacity") or {}
    out: dict[str, int] = {}
    for name, text in raw.items():
        try:
            out[name] = quantity.canonical(name, text)
        except quantity.QuantityError:
            continue
    return out


class ClusterCache:
    def __init__(self, clock: Clock, *, optional_node_operations: bool = False,
                 node_allocatable: bool = False) -> None:
        self.clock = clock
        self.node_allocatable = node_allocatable  # DRANodeAllocatableResources (alpha in 1.37)
        # DRAOptionalNodeOperations off: devices of a slice that skips node operations are not
        # allocatable (KEP-5945), so a node would never be asked to skip what it cannot.
        self.optional_node_operations = optional_node_operations
        self.nodes: dict[str, NodeEntry] = {}
        self.pods: dict[ClaimKey, PodEntry] = {}
        self.claims: dict[ClaimKey, Mapping[str, Any]] = {}
        self.device_owner: dict[model.DeviceId, ClaimKey] = {}
        self.consumed: dict[model.DeviceId, dict[str, model.Num]] = {}
        """Capacity all claims together consume of each shared device (KEP-5075), kept incrementally."""
        self.classes: dict[str, model.DeviceClass] = {}
        self.slices: dict[str, model.ResourceSlice] = {}
        """Slices as the allocator sees them: with the taints of the DeviceTaintRules that select
        their devices (KEP-5055); `_base_slices` holds them as published."""
        self._base_slices: dict[str, model.ResourceSlice] = {}
        self.taint_rules = taint_rules.RuleSet()
        self._slice_rv: dict[str, int] = {}
        self._class_rv: dict[str, int] = {}
        self._node_slices: dict[str, set[str]] = {}
        self._shared_slices: set[str] = set()
        self._pool_node: dict[tuple[str, str], str | None] = {}
        self._pool_slices: dict[tuple[str, str], set[str]] = {}
        """Every slice name of a pool: completeness counts slices published for other nodes too."""
        self.global_version = 0
        self._claim_models: dict[str, tuple[int, model.Claim]] = {}
        self._spec_models: dict[bytes, model.Claim] = {}
        self._parsed: dict[bytes, tuple[dict[str, int], tuple[extended.ContainerAsk, ...], tuple[int, int]]] = {}
        """Requests of valid pods by what they were computed from (objects/pod/manifest.parse_key): the replicas of
        a workload are parsed once."""
        self._requests: dict[str, tuple[int, dict[str, int], str]] = {}
        self._asks: dict[str, tuple[extended.ContainerAsk, ...]] = {}
        self.class_infos: dict[str, extended.ClassInfo] = {}
        self._extended_mapping: dict[str, str] | None = None
        self._placements: dict[str, tuple[int, placement.Placement]] = {}
        self.anti_pods: dict[ClaimKey, PodEntry] = {}
        """The pods counted on a node that have required pod anti-affinity terms (InterPodAffinity
        checks each pod against them: HavePodsWithRequiredAntiAffinityList)."""
        self.affinity_pods: dict[ClaimKey, PodEntry] = {}
        """The pods counted on a node with terms InterPodAffinity's score reads for every pod
        (required affinity, preferred affinity or anti-affinity: HavePodsWithAffinityList)."""
        self.prefer_no_schedule: set[str] = set()
        """Nodes with a PreferNoSchedule taint (TaintToleration's score is constant without any)."""
        self.images: dict[str, tuple[int, set[str]]] = {}
        """Image name -> (size, the nodes listing it): the scheduler cache's imageStates."""
        self._nonzero: dict[str, tuple[int, int]] = {}
        self.listeners: list[Callable[[str, str, Mapping[str, Any] | None, Mapping[str, Any] | None], None]] = []
        self._changed: list[str] = []
        self._changed_base = 0  # the sequence number of _changed[0]

    # --- feeding ---

    def reset(self) -> None:
        self.__init__(self.clock, optional_node_operations=self.optional_node_operations,  # type: ignore[misc]
                      node_allocatable=self.node_allocatable)

    def load(self, objs: Iterable[Mapping[str, Any]]) -> None:
        for obj in objs:
            self.apply("ADDED", obj)

    def apply(self, event: str, obj: Mapping[str, Any]) -> bool:
        """Apply a watch event or a written object; False when it was stale (ignored)."""
        kind = obj.get("kind")
        deleted = event == "DELETED"
        if kind == "Pod":
            return self._pod(obj, deleted)
        if kind == "ResourceClaim":
            return self._claim(obj, deleted)
        if kind == "Node":
            return self._node(obj, deleted)
        if kind == "ResourceSlice":
            return self._slice(obj, deleted)
        if kind == "DeviceClass":
            return self._class(obj, deleted)
        if kind == taint_rules.KIND:
            return self._taint_rule(obj, deleted)
        return False

    # --- node versions ---

    def _bump(self, entry: NodeEntry) -> None:
        """A change on this node that can alter a filter or score result: a new version, and an
        entry in the change log (the scheduler's per-shape skip sets are cleared from it)."""
        entry.version += 1
        self._changed.append(entry.node.name)
        if len(self._changed) > CHANGE_LOG_MAX:
            drop = len(self._changed) // 2
            del self._changed[:drop]
            self._changed_base += drop

    @property
    def change_seq(self) -> int:
        """How many node changes there were; a position in the change log."""
        return self._changed_base + len(self._changed)

    def changes_since(self, seq: int) -> list[str] | None:
        """Nodes changed after position `seq` (repeats possible), or None when the log no longer
        reaches back that far (the caller forgets what it derived from node versions)."""
        if not self._changed_base <= seq <= self.change_seq:
            return None
        return self._changed[seq - self._changed_base:]

    def _notify(self, kind: str, name: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        for fn in self.listeners:
            fn(kind, name, old, new)

    # --- pods ---

    def pod_placement(self, obj: Mapping[str, Any]) -> placement.Placement:
        """Parsed once per pod generation (tolerations may be added to a running pod)."""
        uid = convert.pod_uid(obj)
        gen = int(obj["metadata"].get("generation") or 0)
        hit = self._placements.get(uid)
        if hit is not None and hit[0] == gen:
            return hit[1]
        found = placement.placement_of(obj)
        self._placements[uid] = (gen, found)
        return found

    def needs_parse(self, obj: Mapping[str, Any]) -> bool:
        """Whether pod_requests would parse the pod (not known by its uid)."""
        return convert.pod_uid(obj) not in self._requests

    def parse_requests(self, obj: Mapping[str, Any]) -> ParsedRequests:
        """The pod's requests, error and extended asks, parsed: pure (a worker thread may run it)."""
        try:
            pod = pod_from_manifest(obj, uid=convert.pod_uid(obj), clock=self.clock)
            return pod_requests(pod), "", extended.container_asks(pod), nonzero_requests(pod)
        except ValidationError as e:
            return {}, f"invalid pod: {e}", (), (0, 0)

    def pod_requests(self, obj: Mapping[str, Any],
                     parsed: ParsedRequests | None = None) -> tuple[dict[str, int], str]:
        """The pod's requests (and its parse error), parsed once per pod; `parsed`: parse_requests'
        answer for it, made beforehand (off the event loop for a big pod)."""
        uid = convert.pod_uid(obj)
        gen = 0  # a pod's container resources are immutable: one parse per pod
        hit = self._requests.get(uid)
        if hit is not None:
            return hit[1], hit[2]
        key = parse_key(obj)
        known = self._parsed.get(key) if key is not None else None
        if known is not None:
            reqs, asks, nonzero = known
            err = ""
        else:
            reqs, err, asks, nonzero = parsed if parsed is not None else self.parse_requests(obj)
            if key is not None and not err:
                if len(self._parsed) >= MAX_SPEC_MODELS:
                    self._parsed.clear()
                self._parsed[key] = (reqs, asks, nonzero)
        self._requests[uid] = (gen, reqs, err)
        if nonzero != (0, 0):
            self._nonzero[uid] = nonzero
        if asks:
            self._asks[uid] = asks
        return reqs, err

    def pod_nonzero(self, obj: Mapping[str, Any]) -> tuple[int, int]:
        """The pod's cpu and memory requests with the scheduler's defaults for a container without
        one (parsed with its requests)."""
        self.pod_requests(obj)
        return self._nonzero.get(convert.pod_uid(obj), (0, 0))

    def extended_asks(self, obj: Mapping[str, Any]) -> tuple[extended.ContainerAsk, ...]:
        """The pod's containers that request extended resources (parsed with its requests)."""
        self.pod_requests(obj)
        return self._asks.get(convert.pod_uid(obj), ())

    def extended_mapping(self) -> Mapping[str, str]:
        """Extended resource name -> the DeviceClass that serves it (KEP-5004)."""
        if self._extended_mapping is None:
            self._extended_mapping = extended.class_mapping(self.class_infos.values())
        return self._extended_mapping

    def _pod(self, obj: Mapping[str, Any], deleted: bool) -> bool:
        key = convert.pod_key(obj)
        old = self.pods.get(key)
        if old is not None and not deleted and _rv(obj) <= _rv(old.obj) and old.uid == convert.pod_uid(obj):
            return False
        if deleted:
            if old is not None:
                self._account(old, -1)
            if old is not None and old.uid == convert.pod_uid(obj):
                del self.pods[key]
                self.anti_pods.pop(key, None)
                self.affinity_pods.pop(key, None)
                self._requests.pop(old.uid, None)
                self._nonzero.pop(old.uid, None)
                self._asks.pop(old.uid, None)
                self._placements.pop(old.uid, None)
            elif old is not None:
                self._account(old, +1)  # a delete event of an older pod with that name
                return False
            self._notify("Pod", key[1], old.obj if old else None, None)
            return True
        reqs, err = self.pod_requests(obj)
        node = convert.node_name_of(obj)
        entry = PodEntry(obj, convert.pod_uid(obj), node, reqs, bool(node) and not convert.is_terminal(obj), err,
                         self.pod_placement(obj), self._dra_requests(obj) if self.node_allocatable else {},
                         self._nonzero.get(convert.pod_uid(obj), (0, 0)))
        self.pods[key] = entry
        terms = entry.placement.pod_terms
        if entry.active and terms is not None and terms.anti:
            self.anti_pods[key] = entry
        else:
            self.anti_pods.pop(key, None)
        if entry.active and terms is not None and (terms.affinity or terms.preferred or terms.preferred_anti):
            self.affinity_pods[key] = entry
        else:
            self.affinity_pods.pop(key, None)
        # A change that leaves the node, activity and requests as they were (a status update) keeps
        # the node's accounting and version: its cached filter and score results stay valid.
        if old is None or (old.uid, old.node, old.active, old.requests, old.dra, old.nonzero) != (
                entry.uid, entry.node, entry.active, entry.requests, entry.dra, entry.nonzero):
            if old is not None:
                self._account(old, -1)
            self._account(entry, +1)
        self._notify("Pod", key[1], old.obj if old else None, obj)
        return True

    def _account(self, entry: PodEntry, sign: int) -> None:
        if not entry.active:
            return
        node = self.nodes.get(entry.node)
        if node is None:
            node = self.nodes[entry.node] = NodeEntry({}, model.Node(entry.node), False, {})
        node.pods += sign
        node.nonzero = (node.nonzero[0] + sign * entry.nonzero[0], node.nonzero[1] + sign * entry.nonzero[1])
        self._bump(node)
        for port in entry.placement.host_ports:
            holders = node.used_ports.get(port, 0) + sign
            if holders > 0:
                node.used_ports[port] = holders
            else:
                node.used_ports.pop(port, None)
        for held in (entry.requests, entry.dra):
            for name, value in held.items():
                left = node.requested.get(name, 0) + sign * value
                if left:
                    node.requested[name] = left
                else:
                    node.requested.pop(name, None)

    @staticmethod
    def _dra_requests(obj: Mapping[str, Any]) -> dict[str, int]:
        """What the pod's nodeAllocatableResourceClaimStatuses add to its requests."""
        statuses = (obj.get("status") or {}).get(nodealloc.FIELD)
        if not statuses:
            return {}
        return nodealloc.demand({}, statuses, nodealloc.pod_level_resources(obj))

    def device_node_allocatable(self, node: str | None) -> nodealloc.DeviceLookup:
        """getDeviceFromSlices over the slices `node` sees (every slice for None): a device's
        nodeAllocatableResources, None when it has none, MISSING when no slice has it."""
        entry = self.nodes.get(node) if node is not None else None
        target = entry.node if entry is not None else None

        def lookup(driver: str, pool: str, device: str) -> Any:
            for sl in self._base_slices.values():
                if sl.driver != driver or sl.pool != pool:
                    continue
                if target is not None and not sl.per_device_node_selection and not sl.visible_to(target):
                    continue
                for d in sl.devices:
                    if d.name == device:
                        return d.node_allocatable
            return nodealloc.MISSING

        return lookup

    # --- claims ---

    def claim_model(self, obj: Mapping[str, Any]) -> model.Claim:
        uid = str(obj["metadata"].get("uid") or "")
        gen = int(obj["metadata"].get("generation") or 0)
        hit = self._claim_models.get(uid)
        if hit is not None and hit[0] == gen:
            return hit[1]
        m = self._claim_by_spec(obj)
        self._claim_models[uid] = (gen, m)
        return m

    def _claim_by_spec(self, obj: Mapping[str, Any]) -> model.Claim:
        """The model of a claim whose spec equals an earlier one's is that one's with this claim's
        names: claims generated from one template are converted once (the model's requests,
        constraints and config are a function of the spec)."""
        try:
            key = orjson.dumps(obj.get("spec") or {}, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # not plain JSON
            return convert.claim(obj)
        base = self._spec_models.get(key)
        if base is None:
            if len(self._spec_models) >= MAX_SPEC_MODELS:
                self._spec_models.clear()
            base = self._spec_models[key] = convert.claim(obj)
            return base
        md = obj["metadata"]
        return dataclasses.replace(base, namespace=md.get("namespace", ""), name=md["name"], uid=md.get("uid", ""))

    def _claim(self, obj: Mapping[str, Any], deleted: bool) -> bool:
        md = obj["metadata"]
        key = (md.get("namespace") or "default", md["name"])
        old = self.claims.get(key)
        if old is not None and not deleted and _rv(obj) <= _rv(old):
            return False
        old_devices = convert.allocated_devices(old) if old is not None else []
        new_devices = [] if deleted else convert.allocated_devices(obj)
        if old_devices != new_devices:
            for d in old_devices:
                if self.device_owner.get(d) == key:
                    del self.device_owner[d]
                self._touch_device(d)
            for d in new_devices:
                self.device_owner[d] = key
                self._touch_device(d)
        old_shares = convert_sharing.shared_consumption(old) if old is not None else []
        new_shares = [] if deleted else convert_sharing.shared_consumption(obj)
        if old_shares != new_shares:
            self._share(old_shares, -1)
            self._share(new_shares, 1)
        if deleted:
            self.claims.pop(key, None)
            if old is not None:
                self._claim_models.pop(str(old["metadata"].get("uid") or ""), None)
        else:
            self.claims[key] = obj
        self._notify("ResourceClaim", key[1], old, None if deleted else obj)
        return True

    def _share(self, shares: list[tuple[model.DeviceId, dict[str, model.Num]]], sign: int) -> None:
        for d, amounts in shares:
            total = self.consumed.setdefault(d, {})
            for name, amount in amounts.items():
                total[name] = total.get(name, 0) + sign * amount
            refs = total.get("\0refs", 0) + sign
            if refs:
                total["\0refs"] = refs
            else:
                del self.consumed[d]
            self._touch_device(d)

    def _touch_device(self, device: model.DeviceId) -> None:
        owner = self._pool_node.get((device[0], device[1]), None)
        if owner is None:
            self.global_version += 1
            return
        entry = self.nodes.get(owner)
        if entry is not None:
            entry.device_version += 1
            self._bump(entry)
            entry.memo.clear()

    # --- nodes ---

    def _node(self, obj: Mapping[str, Any], deleted: bool) -> bool:
        name = obj["metadata"]["name"]
        entry = self.nodes.get(name)
        if entry is not None and entry.obj and not deleted and _rv(obj) <= _rv(entry.obj):
            return False
        old = entry.obj if entry is not None and entry.obj else None
        if deleted:
            if entry is not None:
                self._index_node(name, entry, (), ())
                if entry.pods:  # pods still bound: keep their accounting, forget the node itself
                    entry.obj, entry.ready, entry.allocatable = {}, False, {}
                else:
                    del self.nodes[name]
            self._notify("Node", name, old, None)
            return True
        labels = dict(obj["metadata"].get("labels") or {})
        if entry is None:
            entry = self.nodes[name] = NodeEntry(obj, model.Node(name, labels), False, {})
        if entry.node.labels != labels:
            entry.node = model.Node(name, labels)
            self._invalidate(name)
        entry.obj = obj
        self._index_node(name, entry, placement.taints_of(obj), _images(obj))
        entry.taints = placement.taints_of(obj)
        entry.cordoned = placement.cordoned(obj)
        entry.ready = convert.node_ready(obj)
        entry.allocatable = allocatable_of(obj)
        self._bump(entry)
        self._notify("Node", name, old, obj)
        return True

    def _index_node(self, name: str, entry: NodeEntry, taints: tuple[placement.Taint, ...],
                    images: tuple[tuple[str, int], ...]) -> None:
        """The node's PreferNoSchedule taints and images in the cluster-wide indexes."""
        if any(t.effect == placement.PREFER_NO_SCHEDULE for t in taints):
            self.prefer_no_schedule.add(name)
        else:
            self.prefer_no_schedule.discard(name)
        names = frozenset(n for n, _ in images)
        if names == entry.images:
            return
        for image in entry.images - names:
            state = self.images.get(image)
            if state is not None:
                state[1].discard(name)
                if not state[1]:
                    del self.images[image]
        for image, size in images:
            state = self.images.get(image)
            if state is None:
                self.images[image] = (size, {name})
            else:
                state[1].add(name)
        entry.images = names

    def _invalidate(self, node: str) -> None:
        entry = self.nodes.get(node)
        if entry is not None:
            entry.inventory = None
            entry.device_version += 1
            self._bump(entry)
            entry.memo.clear()

    def inventory(self, entry: NodeEntry) -> model.Inventory:
        if entry.inventory is None:
            names = sorted(self._node_slices.get(entry.node.name, set()) | self._shared_slices)
            mine = [self.slices[n] for n in names]
            here = (None, entry.node.name)
            others = [self.slices[n] for key in {(s.driver, s.pool) for s in mine}
                      for n in self._pool_slices.get(key, ()) if self.slices[n].node_name not in here]
            entry.inventory = model.Inventory(entry.node, mine, others)
        return entry.inventory

    # --- slices and classes ---

    def _slice(self, obj: Mapping[str, Any], deleted: bool) -> bool:
        name = obj["metadata"]["name"]
        if not deleted and _rv(obj) <= self._slice_rv.get(name, 0):
            return False
        old = self.slices.pop(name, None)
        self._slice_rv.pop(name, None)
        self._base_slices.pop(name, None)
        if old is not None:
            self._unindex_slice(old)
        if not deleted:
            s = convert.resource_slice(obj)
            if s.skip_node_operations and not self.optional_node_operations:
                s = dataclasses.replace(s, devices=())
            self._base_slices[name] = s
            self._slice_rv[name] = _rv(obj)
            self._index_slice(name, self.taint_rules.apply(s))
        self._notify("ResourceSlice", name, None, None if deleted else obj)
        return True

    def _index_slice(self, name: str, s: model.ResourceSlice) -> None:
        self.slices[name] = s
        self._index_pool(s)
        if s.node_name is not None:
            self._node_slices.setdefault(s.node_name, set()).add(name)
            self._pool_node[(s.driver, s.pool)] = s.node_name
            self._invalidate(s.node_name)
        else:
            self._shared_slices.add(name)
            self._pool_node[(s.driver, s.pool)] = None
            self._invalidate_all()

    def _taint_rule(self, obj: Mapping[str, Any], deleted: bool) -> bool:
        """A DeviceTaintRule changed: re-derive the slices whose devices' taints change."""
        if not self.taint_rules.handle("DELETED" if deleted else "MODIFIED", obj):
            return False
        for name, base in self._base_slices.items():
            derived, current = self.taint_rules.apply(base), self.slices[name]
            if [d.taints for d in derived.devices] != [d.taints for d in current.devices]:
                self._unindex_slice(current)
                self._index_slice(name, derived)
        self._notify(taint_rules.KIND, obj["metadata"]["name"], None, None if deleted else obj)
        return True

    def _index_pool(self, s: model.ResourceSlice) -> None:
        members = self._pool_slices.setdefault((s.driver, s.pool), set())
        members.add(s.name)
        self._invalidate_pool(members)

    def _invalidate_pool(self, members: set[str]) -> None:
        """A pool spanning nodes: each of its nodes sees the pool's completeness change."""
        if len(members) > 1:
            for n in members:
                node = self.slices[n].node_name if n in self.slices else None
                if node is not None:
                    self._invalidate(node)

    def _unindex_slice(self, s: model.ResourceSlice) -> None:
        members = self._pool_slices.get((s.driver, s.pool))
        if members is not None:
            members.discard(s.name)
            self._invalidate_pool(members)
            if not members:
                del self._pool_slices[(s.driver, s.pool)]
        if s.node_name is not None:
            self._node_slices.get(s.node_name, set()).discard(s.name)
            self._invalidate(s.node_name)
        else:
            self._shared_slices.discard(s.name)
            self._invalidate_all()

    def _invalidate_all(self) -> None:
        self.global_version += 1
        for name in self.nodes:
            self._invalidate(name)

    def _class(self, obj: Mapping[str, Any], deleted: bool) -> bool:
        name = obj["metadata"]["name"]
        if not deleted and _rv(obj) <= self._class_rv.get(name, 0):
            return False
        if deleted:
            self.classes.pop(name, None)
            self._class_rv.pop(name, None)
            self.class_infos.pop(name, None)
        else:
            self.classes[name] = convert.device_class(obj)
            self._class_rv[name] = _rv(obj)
            self.class_infos[name] = extended.ClassInfo(
                name, str((obj.get("spec") or {}).get("extendedResourceName") or ""),
                str(obj["metadata"].get("creationTimestamp") or ""))
        self._extended_mapping = None
        self.global_version += 1
        for entry in self.nodes.values():
            entry.memo.clear()
        self._notify("DeviceClass", name, None, None if deleted else obj)
        return True

    # --- reads ---

    def claim_counts(self) -> dict[str, int]:
        out = {"pending": 0, "allocated": 0, "reserved": 0}
        for c in self.claims.values():
            status = c.get("status") or {}
            if status.get("reservedFor"):
                out["reserved"] += 1
            elif status.get("allocation"):
                out["allocated"] += 1
            else:
                out["pending"] += 1
        return out


def _images(node: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """(name, sizeBytes) for each name of each image in node.status.images."""
    out: list[tuple[str, int]] = []
    for image in (node.get("status") or {}).get("images") or ():
        if not isinstance(image, Mapping):
            continue
        size = image.get("sizeBytes")
        size = size if isinstance(size, int) and not isinstance(size, bool) else 0
        out.extend((str(n), size) for n in image.get("names") or () if isinstance(n, str))
    return tuple(out)


def nonzero_requests(pod: Pod) -> tuple[int, int]:
    """resourcehelper.PodRequests with NonMissingContainerRequests (100m cpu, 200Mi memory for a
    container, init containers too, that does not name the resource): (cpu, memory)."""

    def filled(containers: tuple[Container, ...]) -> tuple[Container, ...]:
        return tuple(dataclasses.replace(c, requests={quantity.CPU: DEFAULT_MILLI_CPU, "memory": DEFAULT_MEMORY,
                                                      **c.requests}) for c in containers)

    reqs = pod_requests(dataclasses.replace(pod, containers=filled(pod.containers),
                                            init_containers=filled(pod.init_containers)))
    return reqs.get(quantity.CPU, 0), reqs.get("memory", 0)
