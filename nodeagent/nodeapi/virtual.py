"""Virtual nodes served by a node process: NodeAgentConfiguration.virtualNodes as API clients.

Exists so one process can hold hundreds of scheduling-only nodes against any Kubernetes API
(nodeagent's own in another process, or a real cluster), doing per node what a kubelet and a
DRA driver do through the API: register the Node (labels, taints, capacity, allocatable,
Ready), publish the node's ResourceSlices, renew its Lease in kube-node-lease, and run the
pods bound to it on paper with the same decisions as the control plane's in-process agent
(controlplane/controllers/virtual_nodes.VirtualPods): Running once every claim is allocated and reserved
for the pod, Succeeded/Failed after nodeagent.dev/finish-after-seconds, each written as the
kubelet's pod status patch.

Cheap at that count: one watch of the pods bound to any node (spec.nodeName!=, demultiplexed
here by node name) and one of the ResourceClaims for every node of the process, one LIST of
the process's Nodes per status interval (re-registering any deleted), Leases renewed without
a GET (nodeapi/lease.py) and spread over the renew interval. Everything the process writes
carries the label nodeagent.dev/virtual-host=<process node name>, so slices of nodes no
longer configured are removed and a control plane's own virtual nodes are left alone.
An API server that is not there yet, or goes away, is retried with a capped backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nodeagent.controlplane.controllers import virtual_nodes as vn
from nodeagent.errors import NodeAgentError, NotFound
from nodeagent.nodeapi.lease import LeaseRenewer
from nodeagent.nodeapi.ports import DELETED, SYNC, NodeAPI, PodEvent, PodWatch
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

NODE_STATUS_REPORT_FREQUENCY = 300.0
"""The kubelet's nodeStatusReportFrequency: an unchanged Node status is posted again after 5 min."""
WRITES_IN_FLIGHT = 32
"""Requests the process has open at once (registration, slices, pod status patches)."""
BACKOFF_START, BACKOFF_CAP = 0.5, 10.0

Key = tuple[str, str]


def _key(obj: Mapping[str, Any]) -> Key:
    md = obj.get("metadata") or {}
    return (str(md.get("namespace") or ""), str(md.get("name") or ""))


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


class _Cache:
    """The objects of one watch as last seen, keyed by (namespace, name)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.objects: dict[Key, Mapping[str, Any]] = {}

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((namespace, name))


class VirtualNodeHost:
    """The virtual nodes of this process, over the NodeAPI port. `start`, then `stop`."""

    def __init__(self, api: NodeAPI, clock: Clock, specs: Sequence[vn.VirtualNodeSpec], *, host: str,
                 lease_duration: int = 40, status_interval: float = 10.0, node_ips: Sequence[str] = (),
                 report_interval: float = NODE_STATUS_REPORT_FREQUENCY,
                 kubelet_version: str = vn.DEFAULT_KUBELET_VERSION,
                 gate: Callable[[str], bool] | None = None) -> None:
        """`gate`: the process's feature gates (its release's defaults), for the status fields the
        kubelet of that release writes (None: 1.37's)."""
        self.gate = gate
        self._parsed: vn.Parsed = {}  # pod parses for generated_status, by parse_key
        self.api = api
        self.kubelet_version = kubelet_version  # nodeInfo.kubeletVersion: the emulated release's
        self.clock = clock
        self.specs = {s.name: s for s in specs}
        self.host = host
        self.status_interval = status_interval
        self.report_interval = report_interval  # nodeStatusReportFrequency: an unchanged status again
        self.node_ips = tuple(node_ips)  # the InternalIPs of every virtual node: the daemon's
        self._pods = _Cache("Pod")
        self._claims = _Cache("ResourceClaim")
        self.core = vn.VirtualPods(clock, list(self.specs), self._pods.get, self._claims.get)
        self.leases = {name: LeaseRenewer(api, clock, name, lease_duration) for name in self.specs}
        self.registered: set[str] = set()
        self.slices_published = False
        self._reported: dict[str, float] = {}  # node -> monotonic time of its last status write
        self._statuses: dict[Key, tuple[str, dict[str, Any]]] = {}  # pod -> (uid, status) written, not yet seen
        self._gate = asyncio.Semaphore(WRITES_IN_FLIGHT)
        self._wake = asyncio.Event()
        self._watches: list[PodWatch] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.writes = 0  # pod statuses written (tests, logs)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Register the nodes and publish their slices once (failures are retried in the
        background), then watch pods and claims, renew the Leases and run the pods."""
        await self._maintain_once()
        pods, claims = self.api.watch_bound_pods(), self.api.watch_claims()
        self._watches = [pods, claims]
        spawn = asyncio.get_running_loop().create_task
        self._tasks = [spawn(self._pump(pods, self._pods), name="virtual nodes: pods"),
                       spawn(self._pump(claims, self._claims), name="virtual nodes: claims"),
                       spawn(self._run(), name="virtual nodes: pods run"),
                       spawn(self._maintain(), name="virtual nodes: registration")]
        count = max(len(self.leases), 1)
        for i, renewer in enumerate(self.leases.values()):  # spread over the renew interval
            self._tasks.append(spawn(renewer.run(first_delay=renewer.interval * i / count), name="virtual lease"))
        logger.info("virtual nodes started nodes=%d registered=%d slices=%s api=%s", len(self.specs),
                    len(self.registered), self.slices_published, self.api.description)

    async def stop(self) -> None:
        for watch in self._watches:
            watch.close()
        await cancel_and_wait(self._tasks, ignore_errors=True)
        self._tasks = []

    def ready(self) -> bool:
        """Every node registered and every slice published."""
        return self.slices_published and self.registered == set(self.specs)

    # ------------------------------------------------------------------ Nodes and slices

    async def _maintain(self) -> None:
        failures = 0
        backoff = Backoff(BACKOFF_START, BACKOFF_CAP)
        while True:
            if self.ready() and failures == 0:
                await self.clock.sleep(self.status_interval)
            else:
                await self.clock.sleep(backoff.delay(failures))
            failures = 0 if await self._maintain_once() else failures + 1

    async def _maintain_once(self) -> bool:
        """Register missing Nodes, report stale statuses, publish the slices; False on an API error."""
        try:
            await self._register()
            if not self.slices_published:
                await self._publish_slices()
                self.slices_published = True
            return True
        except NodeAgentError as err:
            logger.warning("virtual nodes not registered yet registered=%d/%d api=%s err=%s", len(self.registered),
                           len(self.specs), self.api.description, err)
            return False

    def node_object(self, spec: vn.VirtualNodeSpec) -> dict[str, Any]:
        node = vn.node_object(spec)
        node["metadata"]["labels"][vn.LABEL_HOST] = self.host
        return node

    async def _register(self) -> None:
        present = {str((n.get("metadata") or {}).get("name")): n
                   for n in await self.api.list_nodes(f"{vn.LABEL_HOST}={self.host}")}
        now = self.clock.monotonic()

        async def one(spec: vn.VirtualNodeSpec) -> None:
            async with self._gate:
                status = vn.node_status(spec, self.clock.now(), self.node_ips, self.kubelet_version)
                current = present.get(spec.name) or await self.api.get_node(spec.name)
                if current is None:
                    await self.api.create_node({**self.node_object(spec), "status": status})
                    if spec.name in self.registered:
                        logger.info("virtual node registered again (the Node object was deleted) node=%s", spec.name)
                else:
                    want = _labels(self.node_object(spec))
                    patch = {k: v for k, v in want.items() if _labels(current).get(k) != v}
                    if patch:
                        await self.api.patch_node_labels(spec.name, patch)
                    if spec.name in self._reported and not patch and \
                            now - self._reported[spec.name] < self.report_interval:
                        return
                    await self.api.update_node_status(spec.name, status)
                self.registered.add(spec.name)
                self._reported[spec.name] = now

        missing = [s for s in self.specs.values() if s.name not in present or s.name not in self._reported
                   or now - self._reported[s.name] >= self.report_interval]
        results = await asyncio.gather(*(one(s) for s in missing), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for err in errors:
            if not isinstance(err, NodeAgentError):
                raise err
        if errors:
            raise errors[0]

    async def _publish_slices(self) -> None:
        """Create or replace the slices of every node (unchanged ones are not written), delete the
        slices this process published for nodes no longer configured."""
        have = {str((s.get("metadata") or {}).get("name")): s
                for s in await self.api.list_slices(f"{vn.LABEL_HOST}={self.host}")}
        wanted: dict[str, dict[str, Any]] = {}
        for spec in self.specs.values():
            for s in vn.slice_objects(spec):
                s["metadata"]["labels"][vn.LABEL_HOST] = self.host
                wanted[s["metadata"]["name"]] = s

        async def put(s: dict[str, Any]) -> None:
            old = have.get(s["metadata"]["name"])
            if old is not None:
                s["spec"]["pool"]["generation"] = vn.slice_generation(old, s)
                if old.get("spec") == s["spec"] and _labels(old) == s["metadata"]["labels"]:
                    return
                s["metadata"]["resourceVersion"] = (old.get("metadata") or {}).get("resourceVersion")
            async with self._gate:
                await self.api.put_slice(s, vn.SLICE_MANAGER)

        async def delete(name: str) -> None:
            async with self._gate:
                with contextlib.suppress(NotFound):
                    await self.api.delete_slice(name)

        results = await asyncio.gather(*(put(s) for s in wanted.values()),
                                       *(delete(n) for n in have if n not in wanted), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r

    # ------------------------------------------------------------------ pods

    async def _pump(self, watch: PodWatch, cache: _Cache) -> None:
        """Feed one watch into its cache and the pod decisions; wake the run loop per burst."""
        while True:
            try:
                event = await watch.next()
            except NodeAgentError:
                return  # closed
            self._apply(event, cache)
            while (more := watch.get_nowait()) is not None:
                self._apply(more, cache)
            self._wake.set()

    def _apply(self, event: PodEvent, cache: _Cache) -> None:
        if event.type == SYNC:
            fresh = {}
            for obj in event.items:
                if self._keep(obj, cache):
                    fresh[_key(obj)] = obj
            for key, old in cache.objects.items():
                if key not in fresh:
                    self.core.handle(DELETED, old)
            if cache is self._pods:
                self._statuses = {k: v for k, v in self._statuses.items() if k in fresh}
                fresh = {k: self._as_written(k, obj) for k, obj in fresh.items()}
            cache.objects = fresh
            for obj in fresh.values():
                self.core.handle("ADDED", obj)
            return
        obj = event.object if event.object.get("kind") else {"kind": cache.kind, **event.object}
        if event.type == DELETED:
            cache.objects.pop(_key(obj), None)
            if cache is self._pods:
                self._statuses.pop(_key(obj), None)
        elif self._keep(obj, cache):
            if cache is self._pods:
                obj = self._as_written(_key(obj), obj)
            cache.objects[_key(obj)] = obj
        else:
            return
        self.core.handle(event.type, obj)

    def _as_written(self, key: Key, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """The pod as this node sees it (the kubelet's status manager cache): a status this process
        wrote and the watch has not brought back yet stays this node's view, so an event of another
        writer in between (the control plane's resourceClaimStatuses, a label) does not make the
        node write the same status again. Once the API shows the written phase, or the pod is
        another one (uid), the API's object is the view again."""
        mine = self._statuses.get(key)
        if mine is None:
            return obj
        uid, status = mine
        md = obj.get("metadata") or {}
        if str(md.get("uid") or "") != uid or (obj.get("status") or {}).get("phase") == status.get("phase"):
            del self._statuses[key]
            return obj
        return {**obj, "status": status}

    def _keep(self, obj: Mapping[str, Any], cache: _Cache) -> bool:
        """Pods of this process's nodes only (the watch carries every bound pod); every claim."""
        return cache is self._claims or str((obj.get("spec") or {}).get("nodeName") or "") in self.specs

    async def _run(self) -> None:
        while True:
            writes = self.core.plan()
            if writes:
                await asyncio.gather(*(self._write(w) for w in writes))
                continue
            self._wake.clear()
            deadline = self.core.next_deadline()
            if deadline is None:
                await self._wake.wait()
                continue
            if deadline > self.clock.monotonic():
                waiter = asyncio.ensure_future(self._wake.wait())
                sleeper = asyncio.ensure_future(self._sleep_until(deadline))
                try:
                    await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for f in (waiter, sleeper):
                        f.cancel()

    async def _sleep_until(self, deadline: float) -> None:
        await self.clock.sleep(deadline - self.clock.monotonic())  # from when the task runs, not when made

    async def _write(self, w: vn.Write) -> None:
        """The kubelet's status patch of one pod; on success the pod as written is this node's view
        of it until the watch brings the API's (so the next pass does not write it again)."""
        patch = vn.status_patch(vn.generated_status(w.pod, w.status, self.node_ips, self.gate, self.clock,
                                                      self._parsed))
        conditions = vn.RUNNING_CONDITIONS if w.start else vn.FINISHED_CONDITIONS
        try:
            async with self._gate:
                await self.api.patch_pod_status(w.key[0], w.key[1], w.uid, patch, vn.STATUS_FIELDS,
                                                frozenset(conditions))
                if w.delete:  # the status manager's final delete of a pod deleted with a grace period
                    await self.api.delete_pod(w.key[0], w.key[1], w.uid, grace_period=0)
        except NotFound as err:
            logger.info("virtual node pod gone before its status was written pod=%s/%s err=%s", *w.key, err)
            return
        except NodeAgentError as err:
            self.core.failed(w, err)
            await self.clock.sleep(BACKOFF_START)
            self._wake.set()
            return
        self.writes += 1
        if w.uid:
            self._statuses[w.key] = (w.uid, w.status)
        if self._pods.objects.get(w.key) is w.pod:
            self._pods.objects[w.key] = {**w.pod, "status": w.status}
        self.core.written(w)
