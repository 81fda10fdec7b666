"""DRAFractionalCapacityRange (Beta, off by default at 1.37) in the allocator: consumable capacity as
dynamic-resource-allocation v0.37.2 structured/internal/.../consumable_capacity.go computes it.

The cases named after upstream's come from its consumable_capacity_test.go (testCalculateConsumed
Capacity, testViolateCapacityRequestPolicy, testUseMilli); the rest pin what the gate changes
end to end (a claim's consumedCapacity text and how many shares fit) and what it never changes
(quantities add exactly, as Quantity.Add does: four 250m shares fill a capacity of 1)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from nodeagent.controlplane.allocator import Claim, DeviceClass, Features, Node, allocate
from nodeagent.controlplane.allocator.consumable import consumed_amount, use_milli
from nodeagent.controlplane.allocator.model import Num, RequestPolicy
from nodeagent.controlplane.convert import sharing as convert_sharing
from nodeagent.controlplane.convert.basic import allocation_json, resource_slice
from nodeagent.controlplane.convert.basic import claim as claim_model
from nodeagent.util import quantity

MAX_INT64 = 2**63 - 1


def q(text: str | None) -> Num | None:
    return None if text is None else quantity.exact(text)


def policy(default: str | None = None, lo: str | None = None, hi: str | None = None, step: str | None = None,
           values: tuple[str, ...] = ()) -> RequestPolicy:
    return RequestPolicy(default=q(default), valid_values=tuple(quantity.exact(v) for v in values),
                         min=q(lo), max=q(hi), step=q(step))


POINT_RANGE = policy(default="200m", lo="200m", hi="1", step="100m")


@pytest.mark.parametrize(("requested", "value", "pol", "fractional", "want"), [
    # "fractional step round up (0.25 to 0.3)" / "fractional step already aligned (0.4 = min+2*step)"
    ("250m", "1", POINT_RANGE, True, "300m"),
    ("400m", "1", POINT_RANGE, True, "400m"),
    # the same with the gate off: Value() arithmetic reads 250m as 1, min 200m as 1, step 100m as 1
    ("250m", "1", POINT_RANGE, False, "1"),
    # a milli result that is whole comes back as NewQuantity (no "1000m")
    ("900m", "2", policy(default="500m", lo="500m", step="500m"), True, "1"),
    ("1200m", "2", policy(default="500m", lo="500m", step="500m"), True, "1500m"),
    # integer ranges take the milli path when on, with the same results ("all integer, fits in milli")
    ("2", "3", policy(default="1", lo="1", step="2"), True, "3"),
    ("2", "3", policy(default="1", lo="1", step="2"), False, "3"),
    # below min, no step, validValues: the quantity as written, exactly, whatever the gate
    ("100m", "1", POINT_RANGE, False, "200m"),
    ("750m", "1", policy(default="500m", lo="500m"), False, "750m"),
    ("300m", "1", policy(default="250m", values=("250m", "500m")), False, "500m"),
    (None, "1", policy(default="250m", values=("250m", "500m")), False, "250m"),
])
def test_consumed_amount(requested: str | None, value: str, pol: RequestPolicy, fractional: bool, want: str) -> None:
    got = consumed_amount(q(requested), quantity.exact(value), pol, fractional=fractional)
    assert got is not None
    assert convert_sharing.format_quantity(got) == want


@pytest.mark.parametrize(("requested", "pol", "fractional"), [
    # "max-safe-boundary" reversed: past max after rounding
    ("1050m", POINT_RANGE, True),
    # a request that is not a whole number of thousandths on the milli path (upstream aborts)
    ("250500u", POINT_RANGE, True),
    # "rounded-value-above-maxint64-is-rejected" (integer path)
    (str(MAX_INT64), policy(default="0", lo="0", step="2"), False),
    # "request-above-maxint64-is-rejected"
    (str(2**64 + 3), policy(default="0", lo="0", step="3"), False),
    # "fractional-step-rounded-value-passes-milli-range-is-rejected"
    (f"{MAX_INT64 - 1}m", policy(default="100m", lo="100m", step="100m"), True),
])
def test_not_satisfiable(requested: str, pol: RequestPolicy, fractional: bool) -> None:
    assert consumed_amount(q(requested), Fraction(2**66), pol, fractional=fractional) is None


def test_max_safe_boundary_rounds_to_maxint64() -> None:
    pol = policy(default="1", lo="1", step="2")
    assert consumed_amount(MAX_INT64 - 1, MAX_INT64, pol) == MAX_INT64


@pytest.mark.parametrize(("pol", "fractional", "want"), [
    (POINT_RANGE, False, False),  # "fractional disabled"
    (POINT_RANGE, True, True),  # "all fractional, fits in milli"
    (policy(lo="1", hi="3", step="1"), True, True),  # "all integer, fits in milli"
    (policy(lo=str(MAX_INT64), step="1"), True, False),  # "min overflows milli, falls back to integer"
    (policy(lo="1", step="1u"), True, False),  # a sub-milli step
])
def test_use_milli(pol: RequestPolicy, fractional: bool, want: bool) -> None:
    assert use_milli(pol, fractional) is want


DRIVER = "gpu.example.com"


def _slice(capacity: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "allowMultipleAllocations": True, "capacity": capacity}]}}


def _claim(name: str, request: str | None) -> Claim:
    exactly: dict[str, Any] = {"deviceClassName": "gpu"}
    if request is not None:
        exactly["capacity"] = {"requests": {"cores": request}}
    return claim_model({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                        "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}})


CLASSES = {"gpu": DeviceClass("gpu", (f'device.driver == "{DRIVER}"',))}


def _consumed(claims: list[Claim], capacity: dict[str, Any], fractional: bool) -> list[str] | None:
    out = allocate(claims, Node("n1"), [resource_slice(_slice(capacity))], CLASSES, set(),
                   features=Features(fractional_capacity_range=fractional))
    if out.results is None:
        return None
    return [r["consumedCapacity"]["cores"] for res in out.results
            for r in allocation_json(res)["devices"]["results"]]


FRACTIONAL_CORES = {"cores": {"value": "1", "requestPolicy": {
    "default": "250m", "validRange": {"min": "250m", "max": "1", "step": "250m"}}}}


@pytest.mark.parametrize(("fractional", "want"), [(True, ["500m", "500m"]), (False, ["1", None])])
def test_a_claim_consumes_the_rounded_fraction_with_the_gate_on(fractional: bool, want: list[str | None]) -> None:
    """300m on a 250m grid: 500m with the gate on, so two such claims share a capacity of 1; with it
    off Value() arithmetic rounds to whole units (the step reads as 1): the first takes it all."""
    first = _consumed([_claim("a", "300m")], FRACTIONAL_CORES, fractional)
    assert first == want[:1]
    both = _consumed([_claim("a", "300m"), _claim("b", "300m")], FRACTIONAL_CORES, fractional)
    assert both == (want if want[1] is not None else None)


@pytest.mark.parametrize("fractional", [True, False])
def test_defaults_add_exactly_whatever_the_gate(fractional: bool) -> None:
    """Four claims with no request consume the 250m default each and fill a capacity of 1 (Quantity
    arithmetic); a fifth does not fit."""
    four = [_claim(c, None) for c in "abcd"]
    assert _consumed(four, FRACTIONAL_CORES, fractional) == ["250m"] * 4
    assert _consumed([*four, _claim("e", None)], FRACTIONAL_CORES, fractional) is None


def test_stored_fractional_consumption_counts_exactly() -> None:
    stored = {"status": {"allocation": {"devices": {"results": [
        {"request": "r", "driver": DRIVER, "pool": "n1", "device": "gpu-0",
         "shareID": "2d9f1a3c-4b5e-4f60-8a7b-9c0d1e2f3a4b", "consumedCapacity": {"cores": "750m"}}]}}}}
    [(device, consumed)] = convert_sharing.shared_consumption(stored)
    assert consumed == {f"{DRIVER}/cores": Fraction(3, 4)}
    out = allocate([_claim("a", None)], Node("n1"), [resource_slice(_slice(FRACTIONAL_CORES))], CLASSES, set(),
                   consumed={device: consumed})
    assert out.results is not None  # 750m + the 250m default fit a capacity of 1
    out = allocate([_claim("a", "300m")], Node("n1"), [resource_slice(_slice(FRACTIONAL_CORES))], CLASSES, set(),
                   consumed={device: consumed}, features=Features(fractional_capacity_range=True))
    assert out.results is None  # 750m + 500m do not
