"""Strategies of the kinds that carry device taints (KEP-5055): ResourceSlice and DeviceTaintRule.

Why: a taint's timeAdded is set by the API server, as upstream's PrepareForCreate /
PrepareForUpdate do: a taint without one gets the current time, and in a DeviceTaintRule an
update that changes the effect but keeps the stored timeAdded gets the current time (the
eviction delay of tolerationSeconds counts from it). The store's hooks validate; these only
stamp. Pure: the clock is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.strategies import Obj, Prepared, Strategy
from nodeagent.objects.resource.device_taints import stamp_taints
from nodeagent.objects.resource.taint_rule import stamp_time_added
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock


def _slice_taints(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    out: list[dict[str, Any]] = []
    for device in spec.get("devices") or ():
        if not isinstance(device, Mapping):
            continue
        holder = device.get("basic") if isinstance(device.get("basic"), Mapping) else device  # v1beta1
        taints = holder.get("taints") if isinstance(holder, Mapping) else None
        if isinstance(taints, list):
            out.extend(t for t in taints if isinstance(t, dict))
    return out


@dataclass(frozen=True)
class SliceStrategy(Strategy):
    """ResourceSlice: device taints get timeAdded on create and update when they have none."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> Prepared | None:
        prepared = super().prepare_for_create(obj, clock)
        stamp_taints(_slice_taints(obj), rfc3339(clock.now()))
        return prepared

    def validate_update(self, new: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        stamp_taints(_slice_taints(new), rfc3339(clock.now()))


@dataclass(frozen=True)
class TaintRuleStrategy(Strategy):
    """DeviceTaintRule: status reset on create; timeAdded as upstream's strategy sets it."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> Prepared | None:
        prepared = super().prepare_for_create(obj, clock)
        stamp_time_added(obj, None, rfc3339(clock.now()))
        return prepared

    def validate_update(self, new: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        stamp_time_added(new, old, rfc3339(clock.now()))
