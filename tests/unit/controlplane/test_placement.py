"""Node constraints of pods (pure): tolerations against taints as the API's ToleratesTaint,
node selector and required node affinity, cordons, preferred affinity weights."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.controlplane.scheduler.placement import (
    AFFINITY_MISMATCH,
    CORDONED,
    NONE,
    Taint,
    Toleration,
    placement_of,
)

GPU_TAINT = Taint("gpu", "true", "NoSchedule")


@pytest.mark.parametrize(("toleration", "taint", "tolerated"), [
    (Toleration("gpu", "Equal", "true", "NoSchedule"), GPU_TAINT, True),
    (Toleration("gpu", "Equal", "false", "NoSchedule"), GPU_TAINT, False),
    (Toleration("gpu", "Exists", "", ""), GPU_TAINT, True),  # any effect
    (Toleration("gpu", "Exists", "", "NoExecute"), GPU_TAINT, False),
    (Toleration("", "Exists", "", ""), GPU_TAINT, True),  # everything
    (Toleration("other", "Exists", "", ""), GPU_TAINT, False),
    (Toleration("gpu", "", "true", ""), GPU_TAINT, True),  # empty operator is Equal
])
def test_toleration_matches_like_the_api(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


def spec(**fields: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c"}], **fields}}


ZONE_A = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}


def test_unconstrained_pods_share_one_placement() -> None:
    assert placement_of(spec()) is NONE
    assert NONE.reason("n", {}, (), cordoned=False) is None


def test_filters_in_the_schedulers_order() -> None:
    p = placement_of(spec(nodeSelector={"disk": "ssd"},
                          affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ZONE_A}}))
    labels = {"disk": "ssd", "zone": "a"}
    assert p.reason("n", labels, (), cordoned=False) is None
    assert p.reason("n", labels, (), cordoned=True) == CORDONED
    assert p.reason("n", labels, (GPU_TAINT,), cordoned=False) == "node(s) had untolerated taint(s)"
    assert p.reason("n", labels, (Taint("soft", "", "PreferNoSchedule"),), cordoned=False) is None
    assert p.reason("n", {"disk": "ssd", "zone": "b"}, (), cordoned=False) == AFFINITY_MISMATCH
    assert p.reason("n", {"zone": "a"}, (), cordoned=False) == AFFINITY_MISMATCH


def test_tolerations_open_taints_and_cordons() -> None:
    p = placement_of(spec(tolerations=[{"key": "gpu", "operator": "Exists"},
                                       {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                                        "operator": "Exists"}]))
    assert p.reason("n", {}, (GPU_TAINT,), cordoned=True) is None
    assert p.reason("n", {}, (Taint("other", "x", "NoExecute"),), cordoned=False) == (
        "node(s) had untolerated taint(s)")


def test_match_fields_and_preferred_weights() -> None:
    by_name = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}
    p = placement_of(spec(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": by_name,
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
            {"weight": 5, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}},
        ]}}))
    assert p.reason("n1", {}, (), cordoned=False) == AFFINITY_MISMATCH
    assert p.reason("n2", {}, (), cordoned=False) is None
    assert p.preference("n2", {"zone": "a", "disk": "ssd"}) == 15
    assert p.preference("n2", {"zone": "b"}) == 0


def test_equal_constraints_have_equal_keys() -> None:
    a = placement_of(spec(nodeSelector={"b": "2", "a": "1"}, tolerations=[{"key": "gpu", "operator": "Exists"}]))
    b = placement_of(spec(nodeSelector={"a": "1", "b": "2"}, tolerations=[{"key": "gpu", "operator": "Exists"}]))
    c = placement_of(spec(nodeSelector={"a": "1", "b": "2"}))
    assert a.key == b.key != c.key
