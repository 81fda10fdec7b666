"""What to write so one pool of this driver on this node is published: pure planning over slice dicts.

The publisher keeps an informer-like cache of the driver's ResourceSlices on the node; for
each pool `plan_pool` compares the cache with the wanted devices and returns the API calls
to make, the way k8s.io/dynamic-resource-allocation/resourceslice's controller does for a
node-local driver with one slice per pool:
- slices of an older pool generation than the newest are obsolete and deleted (with
  preconditions on uid and resourceVersion);
- one slice at the newest generation is the match (several: the one with the same device
  names; the rest are obsolete); it is updated when its pool, devices or node selection
  differ, and a new one is created (generateName "<node>-<driver>-", owned by the Node) when
  there is no match;
- the pool generation goes up by one whenever a slice is created or the device list changed
  (upstream keeps it for a single in-place update; nodeagent's drivers always bumped it on a
  device change, so a scheduler holding the old list sees it is stale).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SLICE_API_VERSION = "resource.k8s.io/v1"
SLICE_KIND = "ResourceSlice"
# Fields of a v1 ResourceSliceSpec that a node-local driver with one slice per pool never sets.
_UNSET_SPEC_FIELDS = ("nodeSelector", "allNodes", "sharedCounters", "perDeviceNodeSelection")


@dataclass(frozen=True)
class Create:
    obj: dict[str, Any]


@dataclass(frozen=True)
class Update:
    obj: dict[str, Any]


@dataclass(frozen=True)
class Delete:
    name: str
    uid: str
    resource_version: str


Action = Create | Update | Delete


def field_selector(driver: str, node: str) -> str:
    """This driver's slices on this node (the resourceslice controller's informer filter)."""
    return f"spec.driver={driver},spec.nodeName={node}"


def generate_name(node: str, driver: str) -> str:
    """metadata.generateName of a new slice: the owner's name, the driver, "-" (as upstream)."""
    return f"{node}-{driver}-"


def owner_reference(node: str, node_uid: str) -> dict[str, Any]:
    """The slices belong to the Node: deleting the Node deletes them."""
    return {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}


def devices_fingerprint(devices: Sequence[Mapping[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(list(devices), sort_keys=True).encode()).hexdigest()


def pool_of(obj: Mapping[str, Any]) -> str:
    return str(((obj.get("spec") or {}).get("pool") or {}).get("name", ""))


def generation_of(obj: Mapping[str, Any]) -> int:
    try:
        return int(((obj.get("spec") or {}).get("pool") or {}).get("generation") or 0)
    except (TypeError, ValueError):
        return 0


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _pool_spec(pool: str, generation: int) -> dict[str, Any]:
    return {"name": pool, "generation": generation, "resourceSliceCount": 1}


def new_slice(
    driver: str, node: str, node_uid: str, pool: str, devices: Sequence[Mapping[str, Any]], generation: int
) -> dict[str, Any]:
    """A resource.k8s.io/v1 ResourceSlice to create for one pool of one node."""
    return {
        "apiVersion": SLICE_API_VERSION,
        "kind": SLICE_KIND,
        "metadata": {"generateName": generate_name(node, driver), "ownerReferences": [owner_reference(node, node_uid)]},
        "spec": {
            "driver": driver,
            "pool": _pool_spec(pool, generation),
            "nodeName": node,
            "devices": [copy.deepcopy(dict(d)) for d in devices],
        },
    }


def _same_names(obj: Mapping[str, Any], devices: Sequence[Mapping[str, Any]]) -> bool:
    have = [str(d.get("name", "")) for d in (obj.get("spec") or {}).get("devices") or ()]
    want = [str(d.get("name", "")) for d in devices]
    return len(have) == len(want) and set(have) == set(want)


def _delete(obj: Mapping[str, Any]) -> Delete:
    meta = _meta(obj)
    return Delete(str(meta.get("name", "")), str(meta.get("uid", "")), str(meta.get("resourceVersion", "")))


def plan_pool(
    driver: str,
    node: str,
    node_uid: str,
    pool: str,
    devices: Sequence[Mapping[str, Any]] | None,
    current: Sequence[Mapping[str, Any]],
) -> list[Action]:
    """The calls that make `current` (this pool's slices) publish `devices`; None: the pool is gone."""
    if devices is None:
        return [_delete(s) for s in current]
    newest = max((generation_of(s) for s in current), default=0)
    obsolete = [s for s in current if generation_of(s) < newest]
    candidates = [s for s in current if generation_of(s) == newest]
    match: Mapping[str, Any] | None = None
    if len(candidates) == 1:
        match = candidates[0]
    else:
        for s in candidates:
            if match is None and _same_names(s, devices):
                match = s
            else:
                obsolete.append(s)
    want = [dict(d) for d in devices]
    actions: list[Action] = []
    if match is None:
        actions.append(Create(new_slice(driver, node, node_uid, pool, want, newest + 1)))
    else:
        spec = match.get("spec") or {}
        generation = newest + 1 if list(spec.get("devices") or []) != want else newest
        stale = (
            generation != newest
            or spec.get("pool") != _pool_spec(pool, generation)
            or any(spec.get(f) for f in _UNSET_SPEC_FIELDS)
        )
        if stale:
            obj = copy.deepcopy(dict(match))
            new_spec = {k: v for k, v in (obj.get("spec") or {}).items() if k not in _UNSET_SPEC_FIELDS}
            new_spec.update(driver=driver, nodeName=node, pool=_pool_spec(pool, generation),
                            devices=copy.deepcopy(want))
            obj["spec"] = new_spec
            actions.append(Update(obj))
    actions.extend(_delete(s) for s in obsolete)
    return actions


def newer(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether object a is at a later resourceVersion than b (integers, as the mutation cache compares)."""
    try:
        return int(_meta(a).get("resourceVersion") or 0) > int(_meta(b).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return True  # not comparable: the later arrival wins
