"""The built-in classic DRA driver: network-attached accelerators in pools (KEP-3063's CXL story).

Each configured pool (config.py) is a set of devices reachable only from some nodes (node
names or a node selector). A claim gets, for each request, devices from pools reachable from
the node the scheduler selected, matching the request's DeviceClass selectors and its own CEL
selectors; firstAvailable alternatives are tried in order. The allocation's nodeSelector is
where every pool it used is reachable, so the claim stays usable from any of those nodes.

State: which device is allocated to which claim is read from the claims' status.allocation
(through the ClusterReader), never kept here, so it survives restarts and a deallocation
needs no bookkeeping. Pure: no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.cel import selectors as cel
from nodeagent.config.model import ClassicControllerConfig, DeviceConfig, PoolConfig
from nodeagent.controlplane.classic.common import allocation, controller_of, uid_of
from nodeagent.controlplane.classic.driver import AllocationError, ClusterReader
from nodeagent.objects.common import node_selector_matches
from nodeagent.objects.resource.validation import ALL
from nodeagent.objects.resource.views import ExactRequest, claim_requests, class_selectors

DeviceKey = tuple[str, str]  # (pool, device)


class CxlController:
    """DriverController for pools of network-attached devices."""

    def __init__(self, config: ClassicControllerConfig, reader: ClusterReader) -> None:
        self.config = config
        self._reader = reader
        self._views: dict[DeviceKey, cel.DeviceView] = {}

    @property
    def name(self) -> str:
        return self.config.controller_name

    # --- DriverController ---

    def unsuitable_nodes(self, claim: Mapping[str, Any], nodes: Sequence[str]) -> set[str]:
        used = self._in_use(exclude=uid_of(claim))
        out: set[str] = set()
        for node in nodes:
            plan = self._plan(claim, node, used)
            if isinstance(plan, str):
                out.add(node)
        return out

    def allocate(self, claim: Mapping[str, Any], node: str) -> dict[str, Any]:
        plan = self._plan(claim, node, self._in_use(exclude=uid_of(claim)))
        if isinstance(plan, str):
            raise AllocationError(f"cannot allocate on node {node}: {plan}", reason="AllocationFailed")
        results = [
            {"request": ref, "driver": self.name, "pool": pool.name, "device": dev.name} for ref, pool, dev in plan
        ]
        out: dict[str, Any] = {"devices": {"results": results}}
        selector = _intersect([p.selector for p in _unique_pools(pool for _, pool, _ in plan)])
        if selector is not None:
            out["nodeSelector"] = selector
        return out

    def deallocate(self, claim: Mapping[str, Any]) -> None:
        """Nothing to release: the devices are free once status.allocation is cleared."""

    # --- decisions ---

    def _in_use(self, exclude: str) -> set[DeviceKey]:
        used: set[DeviceKey] = set()
        for claim in self._reader.claims():
            if controller_of(claim) != self.name or uid_of(claim) == exclude:
                continue
            alloc = allocation(claim)
            if alloc is None:
                continue
            for res in (alloc.get("devices") or {}).get("results") or ():
                if res.get("driver") == self.name:
                    used.add((str(res.get("pool")), str(res.get("device"))))
        return used

    def _plan(
        self, claim: Mapping[str, Any], node: str, used: set[DeviceKey]
    ) -> list[tuple[str, PoolConfig, DeviceConfig]] | str:
        """The devices the claim would get on the node, or why it cannot."""
        labels = self._reader.node_labels(node)
        pools = [p for p in self.config.pools if node_selector_matches(p.selector, node, labels)]
        if not pools:
            return f"no pool of {self.name} is reachable from node {node}"
        taken = set(used)
        plan: list[tuple[str, PoolConfig, DeviceConfig]] = []
        for request in claim_requests(claim):
            reasons: list[str] = []
            for alt in request.alternatives:
                picked = self._pick(alt, node, labels, pools, taken)
                if isinstance(picked, str):
                    reasons.append(f"{alt.ref}: {picked}" if request.first_available else picked)
                    continue
                for pool, dev in picked:
                    taken.add((pool.name, dev.name))
                    plan.append((alt.ref, pool, dev))
                break
            else:
                return f"request {request.name}: " + "; ".join(reasons)
        return plan

    def _pick(
        self,
        alt: ExactRequest,
        node: str,
        labels: Mapping[str, str],
        pools: Sequence[PoolConfig],
        taken: set[DeviceKey],
    ) -> list[tuple[PoolConfig, DeviceConfig]] | str:
        device_class = self._reader.device_class(alt.device_class_name)
        if device_class is None:
            return f'device class "{alt.device_class_name}" not found'
        suitable = (device_class.get("spec") or {}).get("suitableNodes")
        if suitable and not node_selector_matches(suitable, node, labels):
            return f"device class {alt.device_class_name} is not suitable for node {node}"
        selectors = [cel.compile_selector(e) for e in (*class_selectors(device_class), *alt.selectors)]
        matching = [
            (pool, dev)
            for pool in pools
            for dev in pool.devices
            if all(s.evaluate(self._view(pool, dev)) is True for s in selectors)
        ]
        free = [(p, d) for p, d in matching if (p.name, d.name) not in taken]
        if alt.allocation_mode == ALL:
            if not matching:
                return "no matching device in a reachable pool"
            if len(free) != len(matching):
                return f"{len(matching) - len(free)} of {len(matching)} matching devices are in use"
            return free
        if len(free) < alt.count:
            return f"{len(free)} of {alt.count} devices free in reachable pools"
        return free[: alt.count]

    def _view(self, pool: PoolConfig, dev: DeviceConfig) -> cel.DeviceView:
        key = (pool.name, dev.name)
        view = self._views.get(key)
        if view is None:
            attrs = {name: next(iter(v.values())) for name, v in dev.attributes.items()}
            capacity = {name: cel.quantity_value(q) for name, q in dev.capacity.items()}
            view = cel.DeviceView(self.name, attrs, capacity)
            self._views[key] = view
        return view


def _unique_pools(pools: Any) -> list[PoolConfig]:
    seen: dict[str, PoolConfig] = {}
    for pool in pools:
        seen.setdefault(pool.name, pool)
    return list(seen.values())


def _intersect(selectors: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """AND of core NodeSelectors (terms are ORed): the cross product of their terms, dropping
    terms that name two different nodes."""
    if not selectors:
        return None
    if len(selectors) == 1:
        return dict(selectors[0])
    terms: list[dict[str, Any]] = []
    for combo in itertools.product(*(s.get("nodeSelectorTerms") or () for s in selectors)):
        exprs: list[Any] = []
        fields: list[Any] = []
        for term in combo:
            exprs += [e for e in term.get("matchExpressions") or () if e not in exprs]
            fields += [f for f in term.get("matchFields") or () if f not in fields]
        names = {f["values"][0] for f in fields if f.get("operator") == "In"}
        if len(names) > 1:
            continue
        term_out: dict[str, Any] = {}
        if exprs:
            term_out["matchExpressions"] = exprs
        if fields:
            term_out["matchFields"] = fields
        if term_out and term_out not in terms:
            terms.append(term_out)
    if not terms:  # the pools share no node: a selector that matches nothing
        terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["-"]}]}]
    return {"nodeSelectorTerms": terms}
