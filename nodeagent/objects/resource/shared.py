"""The vocabulary every resource.k8s.io validator shares: API group and versions, feature
gates, the API server's limits, allocation modes, the validation context and the
labels/annotations check.

Why a module of its own: the per-kind validators (device_class, claim,
claim_status, slice, nodes) and the entry points in
objects/resource/validation.py all need these names; keeping them here lets the per-kind modules stay
below validation.py without an import cycle. objects/resource/validation.py re-exports the public names,
which is where callers import them from. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from nodeagent.errors import ValidationError
from nodeagent.kinds.resource import GROUP as GROUP  # the group and versions as the kinds' declarations name them
from nodeagent.kinds.resource import V1 as V1
from nodeagent.kinds.resource import V1ALPHA3 as V1ALPHA3
from nodeagent.kinds.resource import V1BETA1 as V1BETA1
from nodeagent.kinds.resource import V1BETA2 as V1BETA2
from nodeagent.objects import common as rc
from nodeagent.store import validation as meta

GATE_PRIORITIZED_LIST = "DRAPrioritizedList"
GATE_CONTROL_PLANE_CONTROLLER = "DRAControlPlaneController"
GATE_OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"  # alpha in 1.37, off by default
GATE_ADMIN_ACCESS = "DRAAdminAccess"  # GA in 1.36 (objects/resource/admin_access.py)
DEFAULT_GATES: Mapping[str, bool] = {
    GATE_ADMIN_ACCESS: True,
    GATE_PRIORITIZED_LIST: True,
    GATE_CONTROL_PLANE_CONTROLLER: False,
    GATE_OPTIONAL_NODE_OPERATIONS: False,
    "DRAPartitionableDevices": True,  # beta in 1.36 (objects/resource/slice_features.py)
    "DRAConsumableCapacity": True,  # beta in 1.36 (objects/resource/slice_features.py)
    "DRADeviceTaints": True,  # GA in 1.37 (objects/resource/device_taints.py)
    "DRADeviceTaintRules": True,  # GA in 1.37 (objects/resource/taint_rule.py)
    "DRADeviceBindingConditions": True,  # beta in 1.36 (objects/resource/device_taints.py)
    "DRAResourceClaimDeviceStatus": True,  # GA in 1.37 (objects/resource/device_taints.py)
}

# resource.k8s.io/v1 SkipNodeOperation values (ResourceSlice spec and allocation results).
SKIP_PREPARE = "NodePrepareResources"
SKIP_UNPREPARE = "NodeUnprepareResources"
SKIP_ALL = "*"
SKIP_NODE_OPERATIONS = (SKIP_ALL, SKIP_PREPARE, SKIP_UNPREPARE)

# Limits of pkg/apis/resource (types.go constants).
FIRST_AVAILABLE_MAX = 8
SELECTORS_MAX = 32
REQUESTS_MAX = 32
CONSTRAINTS_MAX = 32
CONFIG_MAX = 32
ALLOCATION_RESULTS_MAX = 32
SLICE_DEVICES_MAX = 128
ATTRIBUTES_AND_CAPACITIES_MAX = 32
NODE_LIST_MAX = 128
RESERVED_FOR_MAX = 256
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024

EXACT_COUNT = "ExactCount"
ALL = "All"
ALLOCATION_MODES = (ALL, EXACT_COUNT)
FROM_CLAIM = "FromClaim"
FROM_CLASS = "FromClass"

NOT_SUPPORTED = "not supported by nodeagent"

Gates = Mapping[str, bool]


def gate(gates: Gates, name: str) -> bool:
    return bool(gates.get(name, DEFAULT_GATES.get(name, False)))


def immutable(path: str) -> ValidationError:
    return meta.invalid(path, "<value omitted>", "field is immutable")


class SpecMemo:
    """Valid ResourceClaim specs already normalised, by content: the claim controller writes one
    claim per pod from the same template, and checking the same spec again was a fifth of the
    cost of a claim's create. Keys and values are JSON bytes, so a hit hands out a private copy
    (and a spec orjson cannot encode, or an invalid one, is simply not remembered). Owned by one
    store's hooks (the gates are fixed there)."""

    MAX = 1024

    def __init__(self) -> None:
        self._known: dict[bytes, bytes] = {}

    @staticmethod
    def key(raw: object, beta: bool) -> bytes | None:
        try:
            return (b"b" if beta else b"v") + orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # orjson.JSONEncodeError: not plain JSON
            return None

    def get(self, key: bytes) -> Any:
        found = self._known.get(key)
        return None if found is None else orjson.loads(found)

    def put(self, key: bytes, spec: Any) -> Any:
        """Remember `spec`; returns it as a hit will (JSON types), so that every answer for an
        equal spec is equal, tuples included."""
        try:
            value = orjson.dumps(spec)
        except TypeError:
            return spec
        if len(self._known) >= self.MAX:
            self._known.clear()
        self._known[key] = value
        return orjson.loads(value)


@dataclass(frozen=True)
class Ctx:
    gates: Gates
    beta: bool  # the object came as resource.k8s.io/v1beta1 (messages of that version)
    specs: SpecMemo | None = None  # remembers valid claim specs (the store's hooks pass one)


def labels_annotations(md: Mapping[str, Any], path: str) -> None:
    for key in ("labels", "annotations"):
        raw = rc.get_obj(md, key, path) or {}
        for k, v in raw.items():
            if not isinstance(v, str):
                raise rc.type_error(f"{path}.{key}[{k}]", v, "string")
        if key == "labels":
            meta.check_labels(f"{path}.labels", raw)
        else:
            meta.check_annotations(f"{path}.annotations", raw)


def skip_node_operations(obj: Mapping[str, Any], path: str, gates: Gates) -> list[str] | None:
    """`skipNodeOperations` of a slice spec or an allocation result: None when unset or when the
    DRAOptionalNodeOperations gate is off (the API server drops a disabled field on write); else a
    set of SkipNodeOperation values where NodePrepareResources needs NodeUnprepareResources or "*"
    beside it (a skipped prepare with a required unprepare would leave the pod stuck terminating)."""
    raw = obj.get("skipNodeOperations")
    if raw is None or not gate(gates, GATE_OPTIONAL_NODE_OPERATIONS):
        return None
    fpath = f"{path}.skipNodeOperations" if path else "skipNodeOperations"
    values = rc.get_list(obj, "skipNodeOperations", path)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise rc.type_error(f"{fpath}[{i}]", value, "string")
        if value not in SKIP_NODE_OPERATIONS:
            raise meta.not_supported(f"{fpath}[{i}]", value, SKIP_NODE_OPERATIONS)
    rc.check_set(values, fpath)
    if SKIP_PREPARE in values and SKIP_UNPREPARE not in values and SKIP_ALL not in values:
        raise meta.invalid(fpath, SKIP_PREPARE,
                           f'may only be listed together with "{SKIP_UNPREPARE}" or "{SKIP_ALL}"')
    return list(values) or None


def raise_all(errors: Sequence[ValidationError]) -> None:
    """Report every error, as the API server does: one alone as it is, several as
    `[path: detail, path: detail]` (the text of upstream's aggregated field.ErrorList), each kept
    (ManyErrors: the API server lists each as a cause, as upstream's Status details do)."""
    flat = [one for err in errors for one in (getattr(err, "errors", None) or [err])]
    if len(flat) == 1:
        raise flat[0]
    if flat:
        raise rc.ManyErrors(flat)
