"""DeviceTaintRule (KEP-5055): validation with upstream's messages (pkg/apis/resource/validation
ValidateDeviceTaintRule, cases of validation_devicetaintrule_test.go), the timeAdded rule of its
strategy, the scheduler merging a rule's taint into the selected devices, and the eviction
controller evicting for a NoExecute rule and reporting EvictionInProgress as upstream's
devicetainteviction controller does. Fake clock, no sleeps."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.controllers.devicetainteviction import EvictionController
from nodeagent.errors import ValidationError
from nodeagent.objects.resource import validation as r
from nodeagent.objects.resource.taint_rule import stamp_time_added
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import FakeClock
from tests.unit.controlplane.test_scheduler_support import (
    GPU,
    Cluster,
    claim,
    claim_spec,
    device,
    device_class,
    exact,
    node,
    pod,
    resource_slice,
)


def rule(name: str = "r", selector: dict[str, Any] | None = None, effect: str = "NoExecute",
         **taint: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": {"key": "example.com/maintenance", "effect": effect, **taint}}
    if selector is not None:
        spec["deviceSelector"] = selector
    return {"apiVersion": "resource.k8s.io/v1beta2", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": spec}


# --- validation -------------------------------------------------------------------------------


def test_valid_rule_is_stored_in_v1() -> None:
    out = r.validate("DeviceTaintRule", rule(selector={"driver": GPU, "pool": "n1", "device": "g0"},
                                             value="now"))
    assert out["apiVersion"] == "resource.k8s.io/v1"
    assert out["spec"] == {"deviceSelector": {"driver": GPU, "pool": "n1", "device": "g0"},
                           "taint": {"key": "example.com/maintenance", "value": "now", "effect": "NoExecute"}}


@pytest.mark.parametrize(("obj", "path", "text"), [
    (rule(selector={"driver": "-bad-"}), "spec.deviceSelector.driver", "Invalid value"),
    (rule(selector={"pool": ""}), "spec.deviceSelector.pool", "Required value"),
    (rule(selector={"device": "Not_A_Label"}), "spec.deviceSelector.device", "Invalid value"),
    (rule(selector={"deviceClassName": "gpu"}), "spec.deviceSelector.deviceClassName", 'unknown field'),
    (rule(effect="PreferNoSchedule"), "spec.taint.effect",
     'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"'),
    (rule(effect=""), "spec.taint.effect", "Required value"),
    ({**rule(), "spec": {"deviceSelector": {}}}, "spec.taint.key", "Required value"),
    (rule(value="a b"), "spec.taint.value", 'Invalid value: "a b"'),
    ({**rule(), "metadata": {"name": "r", "namespace": "x"}}, "metadata.namespace", "Forbidden"),
])
def test_invalid_rule(obj: dict[str, Any], path: str, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        r.validate("DeviceTaintRule", obj)
    assert err.value.path == path
    assert text in str(err.value)


def test_rule_needs_its_feature_gate() -> None:
    with pytest.raises(ValidationError) as err:
        r.validate("DeviceTaintRule", rule(), gates={"DRADeviceTaintRules": False})
    assert "requires the DRADeviceTaints and DRADeviceTaintRules feature gates" in str(err.value)


def test_status_conditions_at_most_eight() -> None:
    cond = {"status": "True", "reason": "R", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    obj = {**rule(), "status": {"conditions": [{**cond, "type": f"T{i}"} for i in range(9)]}}
    with pytest.raises(ValidationError) as err:
        r.validate("DeviceTaintRule", obj)
    assert str(err.value) == "status.conditions: Too many: 9: must have at most 8 items"


def test_time_added_rules() -> None:
    new = rule()
    stamp_time_added(new, None, "T1")
    assert new["spec"]["taint"]["timeAdded"] == "T1"
    changed = rule(effect="None", timeAdded="T1")
    stamp_time_added(changed, new, "T2")  # effect changed, stamp kept as before: replaced
    assert changed["spec"]["taint"]["timeAdded"] == "T2"
    same = rule(timeAdded="T1", value="v")
    stamp_time_added(same, new, "T3")  # key/value changes keep it
    assert same["spec"]["taint"]["timeAdded"] == "T1"


# --- scheduler ----------------------------------------------------------------------------------


def _gpu_cluster(*devices: str) -> Cluster:
    c = Cluster(gates={"DRAPrioritizedList": True})
    c.add(node("n1"), device_class("gpu", f'device.driver == "{GPU}"'),
          resource_slice("n1", GPU, [device(d) for d in devices]))
    return c


def _allocated(c: Cluster, name: str) -> list[str]:
    status = c.get("ResourceClaim", name).get("status") or {}
    return [x["device"] for x in ((status.get("allocation") or {}).get("devices") or {}).get("results") or ()]


async def test_no_schedule_rule_keeps_new_claims_off_the_device_until_deleted() -> None:
    c = _gpu_cluster("g0")
    c.add(rule("drain", {"driver": GPU, "device": "g0"}, "NoSchedule"))
    c.add(claim("c1", claim_spec(exact("gpu", "gpu"))), pod("p1", claims={"gpu": "c1"}))
    c.run()
    assert _allocated(c, "c1") == []
    assert not c.get("Pod", "p1")["spec"].get("nodeName")
    c.delete("DeviceTaintRule", "drain", "")
    c.run()
    assert _allocated(c, "c1") == ["g0"]


async def test_rule_selects_by_every_field_set() -> None:
    c = _gpu_cluster("g0", "g1")
    c.add(rule("other-pool", {"pool": "elsewhere"}, "NoSchedule"), rule("no-selector", None, "NoSchedule"),
          rule("g0", {"device": "g0"}, "NoSchedule"))
    c.add(claim("c1", claim_spec(exact("gpu", "gpu"))), pod("p1", claims={"gpu": "c1"}))
    c.run()
    assert _allocated(c, "c1") == ["g1"]


async def test_tolerated_rule_taint_is_allocatable() -> None:
    c = _gpu_cluster("g0")
    c.add(rule("drain", {}, "NoSchedule"))
    request = exact("gpu", "gpu")
    request["exactly"]["tolerations"] = [{"key": "example.com/maintenance", "operator": "Exists"}]
    c.add(claim("c1", claim_spec(request)), pod("p1", claims={"gpu": "c1"}))
    c.run()
    assert _allocated(c, "c1") == ["g0"]


# --- eviction ------------------------------------------------------------------------------------


def _running(tolerations: list[dict[str, Any]] | None = None) -> tuple[Cluster, EvictionController]:
    c = _gpu_cluster("g0")
    request = exact("gpu", "gpu")
    if tolerations:
        request["exactly"]["tolerations"] = tolerations
    c.add(claim("c", claim_spec(request)), pod("p", claims={"gpu": "c"}))
    c.run()
    assert c.get("Pod", "p")["spec"]["nodeName"] == "n1"
    ctl = EvictionController(c.store, c.clock)
    ctl.load([*c.store.list("ResourceSlice"), *c.store.list("ResourceClaim"), *c.store.list("Pod"),
              *c.store.list("DeviceTaintRule")])
    ctl.work(10)
    return c, ctl


def _condition(c: Cluster, name: str = "r") -> dict[str, Any]:
    (cond,) = c.get("DeviceTaintRule", name, "")["status"]["conditions"]
    return dict(cond)


def _add_rule(c: Cluster, ctl: EvictionController, obj: dict[str, Any]) -> None:
    obj["spec"]["taint"].setdefault("timeAdded", rfc3339(c.clock.now()))  # the API server's stamp
    ctl.handle("ADDED", c.store.create(obj))


async def test_no_execute_rule_evicts_and_reports_progress() -> None:
    c, ctl = _running()
    _add_rule(c, ctl, rule("r", {"driver": GPU}))
    assert ctl.work(10) == 1
    assert c.store.try_get("Pod", "default", "p") is None
    cond = _condition(c)
    assert cond["type"] == "EvictionInProgress" and cond["status"] == "True"
    assert cond["reason"] == "PodsPendingEviction"
    assert cond["message"] == "1 pod needs to be evicted in 1 namespace."
    assert cond["observedGeneration"] == 1
    ctl.handle("MODIFIED", c.get("DeviceTaintRule", "r", ""))
    due = ctl.deadline()
    assert due == c.clock.monotonic() + 10  # ruleStatusPeriod
    c.clock.advance(10)
    ctl.work(10)
    cond = _condition(c)
    assert (cond["status"], cond["reason"]) == ("False", "Completed")
    assert cond["message"] == "1 pod evicted since starting the controller."


async def test_toleration_seconds_count_from_the_rule_time_added() -> None:
    c, ctl = _running([{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute",
                        "tolerationSeconds": 30}])
    _add_rule(c, ctl, rule("r", {"device": "g0"}, timeAdded=rfc3339(c.clock.now() - 20)))
    assert ctl.work(10) == 0
    assert ctl.deadline() == c.clock.monotonic() + 10
    c.clock.advance(10)
    assert ctl.work(10) == 1


async def test_none_effect_previews_what_no_execute_would_do() -> None:
    c, ctl = _running()
    _add_rule(c, ctl, rule("r", {}, "None"))
    assert ctl.work(10) == 0
    assert c.store.try_get("Pod", "default", "p") is not None
    cond = _condition(c)
    assert (cond["status"], cond["reason"]) == ("False", "NoEffect")
    assert cond["message"] == (
        "1 published device selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if "
        "the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to "
        "trigger an update.")


async def test_no_schedule_rule_reports_other_effect() -> None:
    c, ctl = _running()
    _add_rule(c, ctl, rule("r", {}, "NoSchedule"))
    assert ctl.work(10) == 0
    cond = _condition(c)
    assert (cond["reason"], cond["message"]) == ("OtherEffect", "Eviction only happens for the NoExecute effect.")


async def test_rules_are_ignored_without_their_gate() -> None:
    c, _ = _running()
    ctl = EvictionController(c.store, c.clock, rules=False)
    ctl.load([*c.store.list("ResourceClaim"), *c.store.list("Pod")])
    obj = rule("r", {})
    obj["spec"]["taint"]["timeAdded"] = rfc3339(c.clock.now())
    ctl.handle("ADDED", c.store.create(obj))
    assert ctl.work(10) == 0
    assert c.store.try_get("Pod", "default", "p") is not None


class _TickingClock(FakeClock):
    """Every monotonic reading is a little later than the one before, as a real clock's."""

    def monotonic(self) -> float:
        self.advance_mono = getattr(self, "advance_mono", 0.0) + 1e-6
        return super().monotonic() + self.advance_mono


async def test_an_overdue_taint_evicts_with_a_moving_clock() -> None:
    """Regression: the eviction time of an old taint is compared with the pass's own reading of
    the clock, so it is due now rather than an instant later forever (a busy loop)."""
    c, _ = _running()
    clock = _TickingClock()
    ctl = EvictionController(c.store, clock)
    ctl.load([*c.store.list("ResourceClaim"), *c.store.list("Pod")])
    obj = rule("r", {}, timeAdded=rfc3339(clock.now() - 100))
    ctl.handle("ADDED", c.store.create(obj))
    assert ctl.work(10) == 1
