"""ResourceSlice request policies with fractional quantities, with DRAFractionalCapacityRange off (1.37's
default: Quantity.Value() arithmetic, a 500m step reads as 1, 500m and 1 are one validValues key) and
on (milli-unit arithmetic when any bound or the default is fractional, each a whole number of
thousandths). The expected answers are the real v1.37.2 kube-apiserver's, recorded from
tests/integration/test_kube_apiserver_fractional_capacity.py (which compares them live in the
kube-apiserver tier)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.errors import ValidationError
from nodeagent.objects.resource.validation import DEFAULT_GATES, validate


def _slice(capacity: str, policy: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "frac"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "d", "allowMultipleAllocations": True,
                                  "capacity": {"cores": {"value": capacity, "requestPolicy": policy}}}]}}


def rng(default: str, lo: str, hi: str | None = None, step: str | None = None) -> dict[str, Any]:
    bounds = {"min": lo, "max": hi, "step": step}
    return {"default": default, "validRange": {k: v for k, v in bounds.items() if v is not None}}

P = "spec.devices[0].capacity[cores].requestPolicy"
OK = "accepted"

CASES = [
    # (capacity, policy, answer with the gate off, answer with it on)
    ("1", rng("250m", "200m", "1", "100m"), OK,
     f'{P}.validRange.step: Invalid value: "250m": value is not a multiple of a given step (100m) from (200m)'),
    ("2", rng("1500m", "500m", "2", "1"), OK,
     f'{P}.validRange.step: Invalid value: "2": value is not a multiple of a given step (1) from (500m)'),
    ("1", rng("500u", "0", "1", "1m"), OK,
     f'{P}.validRange.default: Invalid value: "500u": value cannot be represented as a milli value'),
    ("1", rng("200m", "200m", "1", "1u"), OK,
     f'{P}.validRange.step: Invalid value: "1u": value cannot be represented as a milli value'),
    ("1", rng("200m", "200m", "1", "100m"), OK, OK),
    ("1", rng("500m", "500m", None, "600m"),
     f'{P}.validRange.step: Invalid value: "600m": one step 1100m is larger than capacity value: 1',
     f'{P}.validRange.step: Invalid value: "600m": one step 1100m is larger than capacity value: 1'),
    ("3", {"default": "1", "validValues": ["500m", "1", "2"]},
     f'{P}.validValues[1]: Duplicate value: "1"', OK),
    ("3", {"default": "1500m", "validValues": ["1", "1500m", "2"]},
     f'{P}.validValues[2]: Duplicate value: "2"', OK),
    ("4", rng("2", "3", "1"),
     f"[{P}.validRange.default: Invalid value: \"2\": default is less than min: 3, "
     f"{P}.validRange.max: Invalid value: \"3\": min is larger than max: 1, "
     f"{P}.validRange.default: Invalid value: \"2\": default is more than max: 1]", None),
]


def _answer(capacity: str, policy: dict[str, Any], enabled: bool) -> str:
    try:
        validate("ResourceSlice", _slice(capacity, policy),
                 gates={**DEFAULT_GATES, "DRAFractionalCapacityRange": enabled})
    except ValidationError as err:
        return str(err)
    return OK


@pytest.mark.parametrize(("capacity", "policy", "off", "on"), CASES)
def test_answers(capacity: str, policy: dict[str, Any], off: str, on: str | None) -> None:
    assert _answer(capacity, policy, False) == off
    assert _answer(capacity, policy, True) == (off if on is None else on)


def test_dec_key_keeps_the_written_scale() -> None:
    """quantityKeyAsDec: 1000m is "1.000", not a duplicate of "1" with the gate on."""
    assert _answer("3", {"default": "1", "validValues": ["1", "1000m"]}, True) == OK
    assert _answer("3", {"default": "1", "validValues": ["1", "1000m"]}, False) == (
        f'{P}.validValues[1]: Duplicate value: "1"')
