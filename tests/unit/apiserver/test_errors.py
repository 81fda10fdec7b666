"""metav1.Status shapes, codes, reasons and causes, as k8s.io/apimachinery/pkg/api/errors builds them."""

from __future__ import annotations

from typing import Any

import pytest

from nodeagent.apiserver.errors import (
    APIError,
    bad_request,
    cause_reason,
    from_error,
    invalid,
    method_not_allowed,
    not_found,
    status_object,
)
from nodeagent.errors import (
    AlreadyExists,
    Conflict,
    Exhausted,
    FailedPrecondition,
    NodeAgentError,
    NotFound,
    Unavailable,
    ValidationError,
)
from nodeagent.store import builtin_kinds
from nodeagent.store.meta import InvalidObject


def test_status_object_shape() -> None:
    assert status_object(404, "NotFound", 'pods "p" not found', {"name": "p", "kind": "pods"}) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "p" not found', "reason": "NotFound", "details": {"name": "p", "kind": "pods"}, "code": 404,
    }


def test_success_status_omits_empty_fields() -> None:
    assert status_object(201, "", "") == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                          "code": 201}


def test_api_error_carries_headers_and_status() -> None:
    err = APIError(429, "TooManyRequests", "slow down", headers={"Retry-After": "1"})
    assert err.headers == {"Retry-After": "1"} and str(err) == "slow down"
    assert err.status()["code"] == 429 and "details" not in err.status()


@pytest.mark.parametrize(
    ("group", "plural", "message", "details"),
    [
        ("", "pods", 'pods "p" not found', {"name": "p", "kind": "pods"}),
        ("resource.k8s.io", "resourceclaims", 'resourceclaims.resource.k8s.io "p" not found',
         {"name": "p", "group": "resource.k8s.io", "kind": "resourceclaims"}),
    ],
)
def test_not_found(group: str, plural: str, message: str, details: dict[str, str]) -> None:
    err = not_found(group, plural, "p")
    assert (err.code, err.reason, err.message, err.details) == (404, "NotFound", message, details)


def test_bad_request_and_method_not_allowed() -> None:
    assert bad_request("nope").status()["reason"] == "BadRequest"
    err = method_not_allowed("create", "pods")
    assert (err.code, err.reason, err.message) == (405, "MethodNotAllowed",
                                                   "the server does not allow this method on the requested resource")


def test_invalid_with_one_field() -> None:
    err = invalid("", "Pod", "p", [("spec.containers", "Required value")])
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == 'Pod "p" is invalid: spec.containers: Required value'
    assert err.details == {"name": "p", "kind": "Pod", "causes": [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"}]}


def test_invalid_with_several_fields_lists_them_in_brackets() -> None:
    err = invalid("resource.k8s.io", "ResourceClaim", "c", [("spec.a", 'Invalid value: "x": bad'),
                                                            ("spec.b", "Forbidden: no")])
    assert err.message == ('ResourceClaim.resource.k8s.io "c" is invalid: [spec.a: Invalid value: "x": bad, '
                           "spec.b: Forbidden: no]")
    assert err.details["group"] == "resource.k8s.io"
    assert [c["reason"] for c in err.details["causes"]] == ["FieldValueInvalid", "FieldValueForbidden"]


@pytest.mark.parametrize(
    ("detail", "reason"),
    [
        ("Required value", "FieldValueRequired"),
        ('Invalid value: "x": bad', "FieldValueInvalid"),
        ('Unsupported value: "x": supported values: "a"', "FieldValueNotSupported"),
        ("Forbidden: nope", "FieldValueForbidden"),
        ('Duplicate value: "x"', "FieldValueDuplicate"),
        ("Too long: may not be more than 63 bytes", "FieldValueTooLong"),
        ("Too many: 3: must have at most 2 items", "FieldValueTooMany"),
        ('Not found: "x"', "FieldValueNotFound"),
        ("something else", "FieldValueInvalid"),
    ],
)
def test_cause_reasons(detail: str, reason: str) -> None:
    assert cause_reason(detail) == reason


def conv(err: NodeAgentError, group: str = "", kind: str = "ConfigMap", plural: str = "configmaps") -> APIError:
    return from_error(err, group=group, kind=kind, plural=plural, name="x")


@pytest.mark.parametrize(
    ("err", "code", "reason", "details"),
    [
        (AlreadyExists('configmaps "x" already exists'), 409, "AlreadyExists", {"name": "x", "kind": "configmaps"}),
        (Conflict('Operation cannot be fulfilled on configmaps "x": the object has been modified'), 409, "Conflict",
         {"name": "x", "kind": "configmaps"}),
        (Exhausted("too many"), 429, "TooManyRequests", {}),
        (FailedPrecondition("not now"), 400, "BadRequest", {}),
        (Unavailable("closed"), 503, "ServiceUnavailable", {}),
        (NodeAgentError("boom"), 500, "InternalError", {}),
    ],
)
def test_from_error_codes(err: NodeAgentError, code: int, reason: str, details: dict[str, Any]) -> None:
    out = conv(err)
    assert (out.code, out.reason, out.message, out.details) == (code, reason, str(err), details)


def test_from_error_keeps_the_group_for_grouped_kinds() -> None:
    out = conv(AlreadyExists('resourceclaims.resource.k8s.io "x" already exists'), "resource.k8s.io",
               "ResourceClaim", "resourceclaims")
    assert out.details == {"name": "x", "group": "resource.k8s.io", "kind": "resourceclaims"}


@pytest.mark.parametrize(
    ("text", "details"),
    [
        ('namespaces "team" not found', {"name": "team", "kind": "namespaces"}),
        ('resourceclaims.resource.k8s.io "c" not found', {"name": "c", "group": "resource.k8s.io",
                                                          "kind": "resourceclaims"}),
    ],
)
def test_from_error_not_found_reads_the_resource_from_the_text(text: str, details: dict[str, str]) -> None:
    out = conv(NotFound(text))
    assert (out.code, out.message, out.details) == (404, text, details)


def test_from_error_not_found_with_other_text() -> None:
    out = conv(NotFound("no such thing"))
    assert (out.code, out.message, out.details) == (404, "no such thing", {"name": "x", "kind": "configmaps"})


def test_from_error_invalid_object_names_the_field() -> None:
    info = builtin_kinds().get("ResourceClaim")
    out = from_error(InvalidObject(info, "c", "spec.devices", "Required value"),
                     group="resource.k8s.io", kind="ResourceClaim", plural="resourceclaims", name="")
    assert (out.code, out.reason) == (422, "Invalid")
    assert out.message == 'ResourceClaim.resource.k8s.io "c" is invalid: spec.devices: Required value'
    assert out.details["causes"] == [{"reason": "FieldValueRequired", "message": "Required value",
                                      "field": "spec.devices"}]


def test_from_error_validation_error() -> None:
    out = conv(ValidationError("data[k]", 'Invalid value: "k": bad'))
    assert out.message == 'ConfigMap "x" is invalid: data[k]: Invalid value: "k": bad'


def test_from_error_admission_text_that_names_the_object() -> None:
    out = conv(ValidationError("", 'The Pod "x" is invalid: spec.nodeName: Forbidden: no'), kind="Pod",
               plural="pods")
    assert (out.code, out.message) == (422, 'Pod "x" is invalid: spec.nodeName: Forbidden: no')
    assert out.details["causes"] == [{"reason": "FieldValueForbidden", "message": "Forbidden: no",
                                      "field": "spec.nodeName"}]


def test_from_error_forbidden_text_is_403() -> None:
    out = conv(ValidationError("", 'pods "x" is forbidden: exceeded quota'), kind="Pod", plural="pods")
    assert (out.code, out.reason, out.message) == (403, "Forbidden", 'pods "x" is forbidden: exceeded quota')
