"""A custom resource's scale subresource, pure (apiextensions-apiserver's scaleFromCustomResource,
ScaleREST and ValidateScaleSpec/Status; the texts are the ones kube-apiserver v1.37.2 answered in
tests/integration/test_crd_scale.py)."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver import scale_custom as sc
from nodeagent.apiserver.errors import APIError

PATHS = sc.ScalePaths(".spec.replicas", ".status.replicas", ".status.selector")


def cr(spec: Any = None, status: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "x.example.com/v1", "kind": "Gizmo",
                           "metadata": {"name": "g", "namespace": "default", "uid": "u", "labels": {"a": "b"}}}
    if spec is not None:
        obj["spec"] = spec
    if status is not None:
        obj["status"] = status
    return obj


def test_the_view_reads_the_three_paths() -> None:
    scale = sc.get(cr({"replicas": 3}, {"replicas": 2, "selector": "app=g"}), PATHS)
    assert scale == {"kind": "Scale", "apiVersion": "autoscaling/v1",
                     "metadata": {"name": "g", "namespace": "default", "uid": "u"},
                     "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=g"}}
    assert sc.get(cr({"replicas": 0}), PATHS)["spec"] == {}


def test_no_spec_replicas_is_a_500_on_get_and_must_be_set_by_an_update() -> None:
    with pytest.raises(APIError) as err:
        sc.get(cr({}), PATHS)
    assert (err.value.code, err.value.message) == (
        500, 'Internal error occurred: the spec replicas field ".spec.replicas" does not exist')
    base = sc.patch_base(cr({}), PATHS)
    assert base["spec"] == {"replicas": sc.UNSET_REPLICAS}
    with pytest.raises(APIError) as err:
        sc.with_replicas(cr({}), PATHS, sc.UNSET_REPLICAS)
    assert (err.value.code, err.value.message) == (400, 'the spec replicas field ".spec.replicas" cannot be empty')
    assert sc.with_replicas(cr(), sc.ScalePaths(".spec.deep.count", ".status.n"), 4)["spec"] == {"deep": {"count": 4}}


def test_a_value_of_another_type_is_the_accessor_error() -> None:
    with pytest.raises(APIError) as err:
        sc.get(cr({"replicas": 1.5}), PATHS)
    assert (err.value.code, err.value.reason, err.value.message) == (
        500, "", ".spec.replicas accessor error: 1.5 is of the type float64, expected int64")
    with pytest.raises(APIError) as err:
        sc.get(cr("flat"), PATHS)
    assert err.value.message == (".spec.replicas accessor error: flat is of the type string, expected "
                                 "map[string]interface{}")


@pytest.mark.parametrize(("spec", "status", "errors"), [
    ({"replicas": 1}, {"replicas": 1, "selector": "a=b"}, []),
    ({}, None, []),
    ({"replicas": -1}, None, [(".spec.replicas", "Invalid value: -1: should be a non-negative integer")]),
    ({"replicas": 2**31}, None, [(".spec.replicas", "Invalid value: 2147483648: should be less than or equal to "
                                                    "2147483647")]),
    ({"replicas": "x"}, {"replicas": True, "selector": 3}, [
        (".spec.replicas", "Invalid value: 0: .spec.replicas accessor error: x is of the type string, expected int64"),
        (".status.replicas", "Invalid value: 0: .status.replicas accessor error: true is of the type bool, "
                             "expected int64"),
        (".status.selector", 'Invalid value: "": .status.selector accessor error: 3 is of the type int64, '
                             "expected string")]),
])
def test_the_custom_resource_checks_its_scale_paths(spec: Any, status: Any, errors: list[tuple[str, str]]) -> None:
    assert sc.checks(cr(spec, status), PATHS) == errors
