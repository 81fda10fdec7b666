"""pod-template-hash: upstream's controller.ComputeHash over the Go value of a template (values
from the Go oracle, tests/fixtures/gotypes; tests/integration/test_pod_template_hash.py runs it
against every template of templates.py)."""

from __future__ import annotations

import pytest

from nodeagent.controlplane.workloads import podhash
from tests.unit.workloads.templates import NGINX, TEMPLATES


@pytest.mark.parametrize(("name", "want"), [
    ("empty", "54f4c57dcb"), ("kubectl-create-deployment", "69c6f74b8b"), ("collision-count", "7d966596d9"),
    ("collision-count-zero", "5567f54866"), ("rich", "6d8849f648"), ("empty-lists", "54f4c57dcb"),
    ("quantities", "6799cb5f9f"), ("container-resources", "769995799"),
])
def test_hash_as_upstream_computes_it(name: str, want: str) -> None:
    template, collision = TEMPLATES[name]
    assert podhash.compute_hash(template, collision) == want


def test_safe_encode_maps_digits_into_the_alphabet() -> None:
    assert podhash.safe_encode("0123456789") == "456789bcdf"  # "0" is byte 48: 48 % 27 = 21 -> "4"
    assert set(podhash.safe_encode("4294967295")) <= set(podhash.ALPHANUMS)


def test_empty_lists_hash_as_missing_ones_and_pointers_to_zero_do_not() -> None:
    assert podhash.compute_hash({"spec": {"containers": []}}) == podhash.compute_hash({})
    base = podhash.compute_hash(NGINX)
    spec = {**NGINX["spec"], "automountServiceAccountToken": False}
    assert podhash.compute_hash({**NGINX, "spec": spec}) != base


@pytest.mark.parametrize(("text", "want"), [
    ("0", (0, 0, "DecimalSI", True, None)),
    ("100m", (100, -3, "DecimalSI", True, None)),
    ("1.5", (15, -1, "DecimalSI", False, None)),
    ("2000m", (2000, -3, "DecimalSI", False, None)),  # trailing 000: not cached
    ("128Mi", (134217728, 0, "BinarySI", False, None)),  # 128 & 7 == 0: not cached
    ("1Ki", (1024, 0, "BinarySI", True, None)),
    ("8Ki", (8192, 0, "BinarySI", False, None)),  # value & 7 == 0: not cached
    ("1e3", (1, 3, "DecimalExponent", True, None)),
    ("-2", (-2, 0, "DecimalSI", True, None)),
    ("1.25Gi", (0, 0, "BinarySI", False, (1342177280000000000, 9))),
    ("0.5Ki", (0, 0, "BinarySI", False, (512000000000, 9))),
])
def test_parse_quantity_as_apimachinery(text: str, want: podhash.Parsed) -> None:
    assert podhash.parse_quantity(text) == want


def test_a_set_creation_timestamp_is_not_representable() -> None:
    with pytest.raises(podhash.NotRepresentable):
        podhash.compute_hash({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}})
