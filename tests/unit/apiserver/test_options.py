"""Write and delete options as the API server reads them from the query and the DeleteOptions body."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.options import (
    IGNORE,
    STRICT,
    WARN,
    DeleteOptions,
    WriteOptions,
    delete_options,
    not_acceptable,
    write_options,
)


def test_write_defaults() -> None:
    assert write_options({}, "") == WriteOptions(field_validation=WARN)
    assert write_options({"fieldManager": "m"}, "", apply=True).field_validation == STRICT  # apply is strict


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"dryRun": "All"}, {"dry_run": True}),
        ({"fieldValidation": "Strict"}, {"field_validation": STRICT}),
        ({"fieldValidation": "Ignore"}, {"field_validation": IGNORE}),
        ({"fieldManager": "me"}, {"field_manager": "me"}),
    ],
)
def test_write_options(query: dict[str, str], expected: dict[str, Any]) -> None:
    opts = write_options(query, "agent")
    for attr, value in expected.items():
        assert getattr(opts, attr) == value


@pytest.mark.parametrize(
    ("query", "apply", "code", "message"),
    [
        ({"dryRun": "Some"}, False, 400, 'dryRun: Unsupported value: "Some": supported values: "All"'),
        ({"fieldValidation": "Loud"}, False, 400, "invalid field validation directive: Loud"),
        ({"fieldManager": "x" * 129}, False, 422,
         'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes'),
        ({"force": "true"}, False, 422,
         'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch'),
        ({}, True, 422,
         'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'),
    ],
)
def test_write_option_errors(query: dict[str, str], apply: bool, code: int, message: str) -> None:
    with pytest.raises(APIError) as err:
        write_options(query, "", apply=apply)
    assert (err.value.code, err.value.message) == (code, message)


def test_apply_force() -> None:
    assert write_options({"force": "true", "fieldManager": "m"}, "", apply=True).force


@pytest.mark.parametrize(
    ("manager", "agent", "expected"),
    [
        ("explicit", "kubectl/v1.34.0 (linux/amd64) kubernetes/abc", "explicit"),
        ("", "kubectl/v1.34.0 (linux/amd64) kubernetes/abc", "kubectl"),
        ("", "OpenAPI-Generator/33.1.0/python", "OpenAPI-Generator"),
        ("", "", "unknown"),
    ],
)
def test_manager_from_user_agent(manager: str, agent: str, expected: str) -> None:
    assert WriteOptions(field_manager=manager, user_agent=agent).manager() == expected


def test_delete_defaults() -> None:
    assert delete_options({}, None) == DeleteOptions()


@pytest.mark.parametrize(
    ("query", "body", "expected"),
    [
        ({"propagationPolicy": "Orphan"}, None, DeleteOptions(propagation="Orphan")),
        ({}, {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
         DeleteOptions(propagation="Background")),
        ({"propagationPolicy": "Orphan"}, {"propagationPolicy": "Foreground"}, DeleteOptions(propagation="Foreground")),
        ({}, {"orphanDependents": True}, DeleteOptions(propagation="Orphan", orphan_dependents=True)),
        ({"orphanDependents": "true"}, None, DeleteOptions(propagation="Orphan", orphan_dependents=True)),
        ({"dryRun": "All"}, None, DeleteOptions(dry_run=True)),
        ({}, {"dryRun": ["All"]}, DeleteOptions(dry_run=True)),
        ({"gracePeriodSeconds": "0"}, None, DeleteOptions(grace_period=0)),
        ({}, {"gracePeriodSeconds": 30}, DeleteOptions(grace_period=30)),
        ({}, {"preconditions": {"uid": "u1", "resourceVersion": "7"}}, DeleteOptions(uid="u1", resource_version="7")),
    ],
)
def test_delete_options(query: dict[str, str], body: Any, expected: DeleteOptions) -> None:
    assert delete_options(query, body) == expected


@pytest.mark.parametrize(
    ("query", "body", "code", "message"),
    [
        ({"propagationPolicy": "Sideways"}, None, 422,
         'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: '
         '"Foreground", "Background", "Orphan", "nil"'),
        ({"gracePeriodSeconds": "soon"}, None, 400, 'gracePeriodSeconds: Invalid value: "soon": must be an integer'),
        ({}, {"gracePeriodSeconds": -1}, 422,
         'DeleteOptions.meta.k8s.io "" is invalid: gracePeriodSeconds: Invalid value: -1: must be greater than or '
         "equal to 0"),
        ({}, {"kind": "Pod"}, 400, "the body of the request was in an unknown format - accepted media types include: "
                                   "application/json, application/yaml"),
        ({}, [1], 400, "DeleteOptions: the body must be an object"),
        ({}, {"preconditions": "x"}, 400, "DeleteOptions.preconditions must be an object"),
    ],
)
def test_delete_option_errors(query: dict[str, str], body: Any, code: int, message: str) -> None:
    with pytest.raises(APIError) as err:
        delete_options(query, body)
    assert (err.value.code, err.value.message) == (code, message)


def test_not_acceptable() -> None:
    err = not_acceptable("application/json")
    assert (err.code, err.reason, err.message) == (406, "NotAcceptable",
                                                   "only the following media types are accepted: application/json")
