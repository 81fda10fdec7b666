"""API errors as metav1.Status: the one table from nodeagent's typed errors to HTTP codes and reasons.

Why here: the core raises NodeAgentError subclasses with the API server's texts (store/meta.py,
objects/); the REST edge must answer with the Status object, code and reason a Kubernetes
client expects (client-go's errors.IsNotFound, IsConflict, IsInvalid read `reason`/`code`),
and for Invalid the `causes` with field paths. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import (
    AlreadyExists,
    Conflict,
    Exhausted,
    FailedPrecondition,
    NodeAgentError,
    NotFound,
    RequestTooLarge,
    Unavailable,
    ValidationError,
    safe_text,
)
from nodeagent.store.meta import InvalidObject


class APIError(Exception):
    """An answer other than success: HTTP code, Status reason, message and optional details."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        empty_details: bool = False,
    ) -> None:
        super().__init__(message)
        self.empty_details = empty_details  # write `details: {}` when there are none (a set, empty StatusDetails)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})
        self.headers = dict(headers or {})
        self.warnings: tuple[str, ...] = ()
        """Warnings the request collected before it was refused (a custom resource's ratcheted rules)."""

    def status(self) -> dict[str, Any]:
        out = status_object(self.code, self.reason, self.message, self.details)
        if self.empty_details and "details" not in out:
            out["details"] = {}
        return out


def status_object(code: int, reason: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 300 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        out["details"] = _safe(dict(details))
    out["message"] = safe_text(message)  # orjson refuses a lone surrogate: the answer would never come
    if not reason:
        del out["reason"]
    if not message:
        del out["message"]
    return out


def _safe(value: Any) -> Any:
    """Details echo names and inputs: valid UTF-8, each string bounded."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {k: _safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe(v) for v in value]
    return value


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def not_found(group: str, plural: str, name: str) -> APIError:
    resource = f"{plural}.{group}" if group else plural
    return APIError(404, "NotFound", f'{resource} "{name}" not found',
                    details={"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural})


def method_not_allowed(verb: str, group_resource: str) -> APIError:
    return APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
                    details={"kind": group_resource})


_CAUSE_REASONS = (
    ("Required value", "FieldValueRequired"),
    ("Invalid value", "FieldValueInvalid"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Forbidden", "FieldValueForbidden"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Not found", "FieldValueNotFound"),
)


_TYPE_INVALID = re.compile(r'^Invalid value: "[a-z]+": .* in body must be of type [a-z,-]+: "[a-z]+"$')
"""A custom resource's type error (kube-openapi's InvalidTypeCode), which ValidateCustomResource reports as
field.TypeInvalid: the same text as an Invalid value, the cause's reason FieldValueTypeInvalid."""


def cause_reason(detail: str) -> str:
    if detail.startswith("Invalid value: ") and _TYPE_INVALID.match(detail):
        return "FieldValueTypeInvalid"
    for prefix, reason in _CAUSE_REASONS:
        if detail.startswith(prefix):
            return reason
    return "FieldValueInvalid"


def invalid(group: str, kind: str, name: str, errors: Sequence[tuple[str, str]]) -> APIError:
    """422 Invalid naming the object and each field: `Pod "x" is invalid: spec.a: Required value`."""
    group_kind = f"{kind}.{group}" if group else kind
    parts = [f"{path}: {detail}" if path else detail for path, detail in errors]
    text = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    causes = [{"reason": cause_reason(detail), "message": detail, "field": path} for path, detail in errors]
    details: dict[str, Any] = {"name": name, "group": group, "kind": kind, "causes": causes}
    if not group:
        del details["group"]
    return APIError(422, "Invalid", f'{group_kind} "{name}" is invalid: {text}', details=details)


_NOT_FOUND_TEXT = re.compile(r'^(?P<resource>[a-z0-9.-]+) "(?P<name>[^"]*)" not found$')


def from_error(err: NodeAgentError, *, group: str, kind: str, plural: str, name: str) -> APIError:
    """The Status for a typed error from the store or the object model."""
    message = str(err)
    if isinstance(err, NotFound):
        m = _NOT_FOUND_TEXT.match(message)
        if m:
            resource, found = m.group("resource"), m.group("name")
            res_plural, _, res_group = resource.partition(".")
            return not_found(res_group, res_plural, found)
        return APIError(404, "NotFound", message, details={"name": name, "kind": plural})
    if isinstance(err, AlreadyExists):
        details = {"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural}
        return APIError(409, "AlreadyExists", message, details=details)
    if isinstance(err, Conflict):
        details = {"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural}
        return APIError(409, "Conflict", message, details=details)
    several = getattr(err, "errors", None)  # an ErrorList (objects.common.ManyErrors)
    if isinstance(err, InvalidObject):
        if several:
            return invalid(group, kind, err.name or name, [(e.path, e.detail) for e in several])
        return invalid(group, kind, err.name or name, [(err.path, err.detail)])
    if isinstance(err, ValidationError):
        if message.startswith(("The ", f"{kind} ")) and " is invalid: " in message:
            # an admission text that already names the object (`The Pod "x" is invalid: ...`)
            head, _, rest = message.partition(" is invalid: ")
            path, _, detail = rest.partition(": ")
            out = invalid(group, kind, name, [(path, detail) if detail else ("", rest)])
            out.message = f"{head.removeprefix('The ')} is invalid: {rest}"
            return out
        if " is forbidden: " in message:
            return APIError(403, "Forbidden", message, details={"name": name, "kind": plural})
        if several:
            return invalid(group, kind, name, [(e.path, e.detail) for e in several])
        return invalid(group, kind, name, [(err.path, err.detail)])
    if isinstance(err, Exhausted):
        return APIError(429, "TooManyRequests", message)
    if isinstance(err, FailedPrecondition):
        return APIError(400, "BadRequest", message)
    if isinstance(err, Unavailable):
        return APIError(503, "ServiceUnavailable", message)
    if isinstance(err, RequestTooLarge):  # the etcd client's error as it is: no reason (ErrorToAPIStatus)
        return APIError(500, "", message)
    return APIError(500, "InternalError", message)
