"""Node Allocatable arithmetic (the design's formula), table-driven."""

from __future__ import annotations

import pytest

from nodeagent.cm import allocatable as alloc
from nodeagent.config import Threshold
from nodeagent.config.kubelet import parse_kubelet

Gi = 1 << 30
Mi = 1 << 20


def test_design_example_32gi_exact() -> None:
    capacity = {"memory": 32 * Gi}
    result = alloc.allocatable(
        capacity,
        kube_reserved={"memory": 2 * Gi},
        system_reserved={"memory": 1 * Gi},
        eviction_hard={"memory.available": Threshold("memory.available", quantity=100 * Mi)},
    )
    assert result["memory"] == 31033655296


HARD = {
    "memory.available": Threshold("memory.available", quantity=100 * Mi),
    "nodefs.available": Threshold("nodefs.available", percentage=0.10),
}


@pytest.mark.parametrize(
    ("name", "capacity", "kube", "system", "ignore", "expected"),
    [
        ("cpu has no eviction part", {"cpu": 4000}, {"cpu": 500}, {"cpu": 250}, False, {"cpu": 3250}),
        # 10% is a float32 in the kubelet: 10737418400 bytes of 100Gi, not 10Gi (10737418240)
        ("ephemeral-storage percentage", {"ephemeral-storage": 100 * Gi}, {"ephemeral-storage": 1 * Gi}, {},
         False, {"ephemeral-storage": 100 * Gi - 1 * Gi - 10737418400}),
        ("percentage rounds down", {"ephemeral-storage": 1005}, {}, {}, False, {"ephemeral-storage": 905}),
        ("clamped at zero", {"memory": 1 * Gi, "cpu": 1000}, {"memory": 2 * Gi}, {"cpu": 3000}, False,
         {"memory": 0, "cpu": 0}),
        ("ignore eviction flag", {"memory": 32 * Gi, "ephemeral-storage": 100 * Gi}, {"memory": 2 * Gi}, {},
         True, {"memory": 30 * Gi, "ephemeral-storage": 100 * Gi}),
        ("pods untouched", {"pods": 110}, {}, {}, False, {"pods": 110}),
        ("pid reservation ignored", {"memory": 4 * Gi}, {"pid": 1000}, {}, True, {"memory": 4 * Gi}),
        ("hugepages leave allocatable memory", {"memory": 8 * Gi, "hugepages-2Mi": 1 * Gi}, {}, {}, True,
         {"memory": 7 * Gi, "hugepages-2Mi": 1 * Gi}),
    ],
)
def test_allocatable_table(
    name: str,
    capacity: dict[str, int],
    kube: dict[str, int],
    system: dict[str, int],
    ignore: bool,
    expected: dict[str, int],
) -> None:
    assert alloc.allocatable(capacity, kube, system, HARD, ignore_eviction=ignore) == expected, name


@pytest.mark.parametrize(
    ("percent", "capacity", "expected"),
    [
        # int64(float64(capacity) * float64(float32(ParseFloat(percent, 32)) / 100)), printed by Go
        ("10", 270553174016, 27055317804),  # the first differential run's node: 403 bytes above a tenth
        ("10", 16709894144, 1670989439),
        ("5", 1000000007, 50000001),
        ("7.5", 987654321987, 74074077092),
        ("33.3", 270553174016, 90094208108),
        ("0.1", 987654321987, 987654368),
        ("99.99", 1000000007, 999899990),
    ],
)
def test_percentage_thresholds_in_float32_as_the_kubelet(percent: str, capacity: int, expected: int) -> None:
    threshold = parse_kubelet({"evictionHard": {"nodefs.available": f"{percent}%"}}).eviction_hard
    reserved = alloc.hard_eviction_reservation({"ephemeral-storage": capacity}, threshold)
    assert reserved == {"ephemeral-storage": expected}


def test_hard_eviction_reservation_only_for_present_resources() -> None:
    assert alloc.hard_eviction_reservation({"memory": 10 * Gi}, HARD) == {"memory": 100 * Mi}
    assert alloc.hard_eviction_reservation({"cpu": 1000}, HARD) == {}


def test_reserved_system_cpus_override_cpu_reservations() -> None:
    kube, system = alloc.effective_reservations({"cpu": 500, "memory": 1}, {"cpu": 100}, (0, 1))
    assert kube == {"memory": 1}
    assert system == {"cpu": 2000}
    kube, system = alloc.effective_reservations({"cpu": 500}, {}, ())
    assert kube == {"cpu": 500} and system == {}
