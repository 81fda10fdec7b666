"""A gated resource.k8s.io field survives an update while its gate is off when the stored object
already uses it (upstream's dropDisabled...Fields(new, old) with ...FeatureInUse(old), in
pkg/registry/resource/{resourceslice,resourceclaim,resourceclaimtemplate}/strategy.go and
pkg/api/resourceclaimspec at v1.37.2), and is still dropped on a create, or on an update of an
object that did not use it.

Each case stores an object under a configuration with the gate on, then reopens the same store
file with the gate off (what a daemon restart with another configuration does) and writes an
unrelated change: before, the slice lost the field and the claim's update failed with "field is
immutable" (the dropped spec differs from the stored one)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.resource.validation import DEFAULT_GATES
from tests.rpc import resource_objects as ro
from tests.unit.objects.stores import admission_store

ON = {**DEFAULT_GATES, "DRAListTypeAttributes": True, "DRAOptionalNodeOperations": True,
      "DRANodeAllocatableResources": True}

Obj = dict[str, Any]


def _dev(i: int) -> Callable[[Obj], Any]:
    return lambda o: o["spec"]["devices"][i]


def _slice_with_devices() -> Obj:
    """The every-field slice less the fields of gates nodeagent does not implement (the HTTP layer
    prunes them before the store sees them)."""
    out = ro.slice_with_devices()
    out["spec"].pop("partitionTypeAttribute")
    for consumption in out["spec"]["devices"][1]["consumesCounters"]:
        consumption.pop("compatibilityGroups")
    return out


SLICE_CASES = [
    ("DRANodeAllocatableResources", _slice_with_devices, lambda o: _dev(1)(o).get("nodeAllocatableResources")),
    ("DRADeviceTaints", _slice_with_devices, lambda o: _dev(1)(o).get("taints")),
    ("DRADeviceBindingConditions", _slice_with_devices, lambda o: _dev(1)(o).get("bindingConditions")),
    ("DRAConsumableCapacity", _slice_with_devices,
     lambda o: (_dev(0)(o).get("allowMultipleAllocations"), _dev(0)(o)["capacity"]["memory"].get("requestPolicy"))),
    ("DRAPartitionableDevices", ro.slice_per_device, lambda o: (o["spec"].get("perDeviceNodeSelection"),
                                                                  _dev(0)(o).get("nodeName"))),
    ("DRAListTypeAttributes", _slice_with_devices, lambda o: _dev(0)(o)["attributes"].get("lanes")),
    ("DRAOptionalNodeOperations", _slice_with_devices, lambda o: o["spec"].get("skipNodeOperations")),
]


def _relabel(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    out["metadata"].setdefault("labels", {})["touched"] = "yes"
    return out


@pytest.mark.parametrize(("gate", "make", "field"), SLICE_CASES, ids=[c[0] for c in SLICE_CASES])
def test_slice_update_keeps_a_field_in_use(tmp_path: Path, gate: str, make: Callable[[], Obj],
                                           field: Callable[[Obj], Any]) -> None:
    db = tmp_path / "objects.db"
    with admission_store(db, ON) as store:
        stored = store.create(make())
    kept = field(stored)
    assert kept not in (None, (None, None))
    off = {**ON, gate: False}
    with admission_store(db, off) as store:
        updated = store.update(_relabel(stored))
        assert field(updated) == kept
        if gate in ("DRAPartitionableDevices", "DRAListTypeAttributes"):
            return  # with their fields dropped these slices are invalid (as upstream's would be)
        # a create with the gate off still drops it, and so does an update of a slice without it
        fresh = make()
        fresh["metadata"]["name"] += "-new"
        created = store.create(fresh)
        assert field(created) in (None, (None, None), (False, None))
        assert field(store.update(_relabel(created))) in (None, (None, None), (False, None))


CLAIM_SPEC_CASES = [
    ("DRAPrioritizedList", lambda o: o["spec"]["devices"]["requests"][1].get("firstAvailable")),
    ("DRAConsumableCapacity", lambda o: o["spec"]["devices"]["requests"][0]["exactly"].get("capacity")),
    ("DRADeviceTaints", lambda o: o["spec"]["devices"]["requests"][0]["exactly"].get("tolerations")),
]


def _claim() -> Obj:
    claim = ro.claim()
    # derivedAttributes belong to a gate nodeagent does not implement (dropped on every write)
    for req in claim["spec"]["devices"]["requests"]:
        req.get("exactly", {}).pop("derivedAttributes", None)
        for sub in req.get("firstAvailable", ()):
            sub.pop("derivedAttributes", None)
    return claim


@pytest.mark.parametrize(("gate", "field"), CLAIM_SPEC_CASES, ids=[c[0] for c in CLAIM_SPEC_CASES])
def test_claim_metadata_update_keeps_a_spec_field_in_use(tmp_path: Path, gate: str,
                                                          field: Callable[[Obj], Any]) -> None:
    db = tmp_path / "objects.db"
    with admission_store(db, ON) as store:
        stored = store.create(_claim())
    assert field(stored)
    with admission_store(db, {**ON, gate: False}) as store:
        updated = store.update(_relabel(stored))
        assert updated["spec"] == stored["spec"]
        assert updated["metadata"]["labels"]["touched"] == "yes"


def test_claim_spec_change_is_still_immutable_with_the_gate_off(tmp_path: Path) -> None:
    db = tmp_path / "objects.db"
    with admission_store(db, ON) as store:
        stored = store.create(_claim())
    with admission_store(db, {**ON, "DRAConsumableCapacity": False}) as store:
        changed = _relabel(stored)
        changed["spec"]["devices"]["requests"][0]["exactly"]["count"] = 3
        with pytest.raises(ValidationError, match="field is immutable"):
            store.update(changed)


STATUS_CASES = [
    ("DRAConsumableCapacity", lambda s: (s["allocation"]["devices"]["results"][0].get("shareID"),
                                         s["allocation"]["devices"]["results"][0].get("consumedCapacity"),
                                         s["devices"][0].get("shareID"))),
    ("DRADeviceBindingConditions", lambda s: s["allocation"]["devices"]["results"][0].get("bindingConditions")),
    ("DRAOptionalNodeOperations", lambda s: s["allocation"]["devices"]["results"][0].get("skipNodeOperations")),
    ("DRAResourceClaimDeviceStatus", lambda s: s.get("devices")),
]


@pytest.mark.parametrize(("gate", "field"), STATUS_CASES, ids=[c[0] for c in STATUS_CASES])
def test_claim_status_update_keeps_a_field_in_use(tmp_path: Path, gate: str, field: Callable[[Obj], Any]) -> None:
    db = tmp_path / "objects.db"
    with admission_store(db, ON) as store:
        stored = store.create(_claim())
        stored["status"] = ro.claim_status()
        stored = store.update_status(stored)
    kept = field(stored["status"])
    assert kept and all(v is not None for v in (kept if isinstance(kept, tuple) else (kept,)))
    with admission_store(db, {**ON, gate: False}) as store:
        again = copy.deepcopy(stored)
        again["status"]["reservedFor"] = again["status"]["reservedFor"][:1]  # an unrelated status change
        updated = store.update_status(again)
        assert field(updated["status"]) == kept
        assert len(updated["status"]["reservedFor"]) == 1
