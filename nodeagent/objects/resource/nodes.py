"""Validation of the node-centred kinds the resource store admits beside DRA: a
PodSchedulingContext (classic DRA's selected, potential and unsuitable node lists) and a
Node (its capacity and allocatable quantities).

Why together: both are small, both are about node names and node resources rather than
devices, and neither shares rules with the claim or slice validators. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.objects import common as rc
from nodeagent.objects.common import JSON, join
from nodeagent.objects.resource.shared import NODE_LIST_MAX, Ctx
from nodeagent.store import validation as meta

# --- PodSchedulingContext ----------------------------------------------------------------------


def validate_pod_scheduling_context(doc: JSON, ctx: Ctx) -> None:
    spec = rc.as_obj(doc.get("spec") or {}, "spec")
    rc.fields(spec, "spec", ("selectedNode", "potentialNodes"))
    out: JSON = {}
    selected = rc.get_str(spec, "selectedNode", "spec")
    if selected:
        rc.check_node_name("spec.selectedNode", selected)
        out["selectedNode"] = selected
    potential = _node_list(spec, "potentialNodes", "spec")
    if potential:
        out["potentialNodes"] = potential
    doc["spec"] = out
    if doc.get("status") is None:
        return
    status = rc.as_obj(doc["status"], "status")
    rc.fields(status, "status", ("resourceClaims",))
    claims: list[JSON] = []
    seen: set[str] = set()
    for i, raw in enumerate(rc.get_list(status, "resourceClaims", "status")):
        cpath = f"status.resourceClaims[{i}]"
        entry = rc.as_obj(raw, cpath)
        rc.fields(entry, cpath, ("name", "unsuitableNodes"))
        name = rc.required_str(entry, "name", cpath)
        if name in seen:
            raise meta.duplicate(cpath, name)
        seen.add(name)
        item: JSON = {"name": name}
        unsuitable = _node_list(entry, "unsuitableNodes", cpath)
        if unsuitable:
            item["unsuitableNodes"] = unsuitable
        claims.append(item)
    doc["status"] = {"resourceClaims": claims} if claims else {}


def _node_list(obj: Mapping[str, Any], key: str, path: str) -> list[str]:
    nodes = rc.get_list(obj, key, path, NODE_LIST_MAX)
    for i, name in enumerate(nodes):
        if not isinstance(name, str):
            raise rc.type_error(f"{path}.{key}[{i}]", name, "string")
        rc.check_node_name(f"{path}.{key}[{i}]", name)
    rc.check_set(nodes, join(path, key))
    return list(nodes)


# --- Node --------------------------------------------------------------------------------------


def validate_node(doc: JSON, ctx: Ctx) -> None:
    if doc.get("spec") is not None:
        rc.as_obj(doc["spec"], "spec")
    if doc.get("status") is None:
        return
    status: JSON = dict(rc.as_obj(doc["status"], "status"))
    for key in ("capacity", "allocatable"):
        values = rc.get_obj(status, key, "status")
        if values is None:
            continue
        out: dict[str, str] = {}
        for name, raw in values.items():
            qpath = f"status.{key}[{name}]"
            text = rc.check_quantity(qpath, raw)
            if text.startswith("-"):
                raise meta.invalid(qpath, raw, "must be greater than or equal to 0")
            out[str(name)] = text
        status[key] = out
    doc["status"] = status
