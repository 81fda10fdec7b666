"""Field-level checks shared by the resource.k8s.io validators (objects/resource/) and the Pod
parsers (objects/pod/).

Typed accessors over JSON dicts that name the field path, the DRA name rules of
k8s.io/kubernetes pkg/apis/resource/validation (driver, pool, device, request and
qualified attribute names), list limits with the `Too many` wording, core NodeSelector
validation, and the strict-decoding unknown-field check. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from nodeagent.errors import ValidationError
from nodeagent.store import validation as meta
from nodeagent.util import quantity

PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
               "regex used for validation is '[0-9]+%')")
"""IsValidPercent's message (apimachinery validation), for ValidatePositiveIntOrPercent of apps and policy."""

JSON = dict[str, Any]

C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
    "validation is '[A-Za-z_][A-Za-z0-9_]*')"
)
QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
REQUEST_REF_MSG = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)

DEVICE_MAX_ID_LENGTH = 32
DEVICE_MAX_DOMAIN_LENGTH = 63
DRIVER_NAME_MAX_LENGTH = 63
POOL_NAME_MAX_LENGTH = 253
ATTRIBUTE_VALUE_MAX_LENGTH = 64

_C_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# semver.org 2.0.0, the regular expression the API server uses for version attributes.
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


# --- field.Error shapes that store/validation.py does not have ----------------------------------------------


_T = TypeVar("_T")


class Errors(list[ValidationError]):
    """A field.ErrorList: validators run every independent check and report all that fail, as
    upstream's Validate* functions do (resource_shared.raise_all renders them)."""

    def check(self, fn: Callable[..., _T], *args: Any) -> _T | None:
        """fn(*args), or None with its ValidationError(s) collected."""
        try:
            return fn(*args)
        except ManyErrors as err:
            self.extend(err.errors)
        except ValidationError as err:
            self.append(err)
        return None

    def raise_all(self) -> None:
        """Raise what was collected: one error as it is, several as ManyErrors."""
        if len(self) == 1:
            raise self[0]
        if self:
            raise ManyErrors(list(self))


class ManyErrors(ValidationError):
    """Several errors at once, written `[path: detail, path: detail]` (the text of upstream's
    aggregated field.ErrorList); an enclosing Errors takes them apart again, so nesting stays flat."""

    def __init__(self, errors: list[ValidationError]) -> None:
        self.errors = errors
        super().__init__("", "[" + ", ".join(str(e) for e in errors) + "]")


def too_many(path: str, actual: int, limit: int) -> ValidationError:
    return ValidationError(path, f"Too many: {actual}: must have at most {limit} items")


def too_long_bytes(path: str, limit: int) -> ValidationError:
    return ValidationError(path, f"Too long: may not be more than {limit} bytes")


def type_error(path: str, value: object, expected: str) -> ValidationError:
    return ValidationError(path, f"Invalid type: expected {expected}, got {meta.go_type(value)}")


# --- typed accessors ---------------------------------------------------------------------------


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def fields(obj: Mapping[str, Any], path: str, allowed: Iterable[str]) -> None:
    """Strict decoding: a key that the kind does not have is an error, as with kubectl's default."""
    known = set(allowed)
    for key in obj:
        if key not in known:
            raise ValidationError(join(path, str(key)), f'unknown field "{key}"')


def as_obj(value: object, path: str) -> Mapping[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):  # the exact-type test spares the ABC check
        raise type_error(path, value, "object")
    return value


def get_obj(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any] | None:
    value = obj.get(key)
    return None if value is None else as_obj(value, join(path, key))


def get_list(obj: Mapping[str, Any], key: str, path: str, limit: int = -1) -> Sequence[Any]:
    """A list field (absent/null is empty); over `limit` items is `Too many`, checked first."""
    value = obj.get(key)
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise type_error(join(path, key), value, "array")
    if 0 <= limit < len(value):
        raise too_many(join(path, key), len(value), limit)
    return value


def get_str(obj: Mapping[str, Any], key: str, path: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise type_error(join(path, key), value, "string")
    return value


def required_str(obj: Mapping[str, Any], key: str, path: str) -> str:
    """A string field that must be set and not empty (Required at path.key otherwise)."""
    value = get_str(obj, key, path)
    if not value:
        raise meta.required(join(path, key))
    return value


def get_int(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise type_error(join(path, key), value, "integer")
    return int(value)


def get_bool(obj: Mapping[str, Any], key: str, path: str) -> bool | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise type_error(join(path, key), value, "boolean")
    return value


def check_set(items: Sequence[object], path: str, *, key: str = "") -> None:
    """validateSet: the second occurrence of a key is `Duplicate value` at item[i](.key)."""
    seen: set[object] = set()
    for i, item in enumerate(items):
        value = item.get(key) if key and isinstance(item, Mapping) else item
        if value in seen:
            raise meta.duplicate(f"{path}[{i}]" + (f".{key}" if key else ""), value)
        seen.add(value)


# --- names -------------------------------------------------------------------------------------


def check_driver_name(path: str, name: str) -> None:
    if not name:
        raise meta.required(path)
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        raise too_long_bytes(path, DRIVER_NAME_MAX_LENGTH)
    if len(name) > meta.DNS1123_SUBDOMAIN_MAX or not _subdomain_ok(name.lower()):
        raise meta.invalid(path, name, meta.SUBDOMAIN_MSG)


def _subdomain_ok(name: str) -> bool:
    try:
        meta.check_dns_subdomain("", name)
    except ValidationError:
        return False
    return True


def check_pool_name(path: str, name: str) -> None:
    if not name:
        raise meta.required(path)
    if len(name) > POOL_NAME_MAX_LENGTH:
        raise too_long_bytes(path, POOL_NAME_MAX_LENGTH)
    for part in name.split("/"):
        meta.check_dns_subdomain(path, part)


def check_device_name(path: str, name: str) -> None:
    if not name:
        raise meta.required(path)
    meta.check_dns_label(path, name)


def check_request_name(path: str, name: str) -> None:
    if not name:
        raise meta.required(path)
    meta.check_dns_label(path, name)


def check_class_name(path: str, name: str) -> None:
    if not name:
        raise meta.required(path)
    meta.check_dns_subdomain(path, name)


def check_node_name(path: str, name: str) -> None:
    meta.check_dns_subdomain(path, name)


def check_request_ref(path: str, name: str, known: set[str]) -> None:
    """A constraint's, config's or allocation result's request: `request` or `request/subrequest`."""
    segments = name.split("/")
    if len(segments) > 2:
        raise meta.invalid(path, name, REQUEST_REF_MSG)
    for segment in segments:
        check_request_name(path, segment)
    if name not in known:
        raise meta.invalid(path, name, REQUEST_REF_MSG)


def check_c_identifier(path: str, name: str) -> None:
    if len(name) > DEVICE_MAX_ID_LENGTH:
        raise too_long_bytes(path, DEVICE_MAX_ID_LENGTH)
    if not _C_IDENTIFIER_RE.match(name):
        raise meta.invalid(path, name, C_IDENTIFIER_MSG)


def check_qualified_name(path: str, name: str) -> None:
    """An attribute or capacity name: a C identifier, optionally after `domain/`."""
    if not name:
        raise meta.required(path, "name required")
    parts = name.split("/")
    if len(parts) == 1:
        check_c_identifier(path, parts[0])
        return
    if len(parts) != 2:
        raise meta.invalid(
            path, name, "must be either a C identifier or a domain followed by a slash followed by a C identifier"
        )
    domain, ident = parts
    if not domain:
        raise meta.required(path, "the domain must not be empty")
    check_driver_name(path, domain)
    if not ident:
        raise meta.required(path, "the name must not be empty")
    check_c_identifier(path, ident)


def check_fully_qualified_name(path: str, name: str) -> None:
    """matchAttribute / distinctAttribute: a qualified name that must include the domain."""
    check_qualified_name(path, name)
    if "/" not in name:
        raise meta.invalid(path, name, "must include a domain")


def check_semver(path: str, value: str) -> None:
    if not _SEMVER_RE.match(value):
        raise meta.invalid(path, value, "must be a string compatible with semver.org spec 2.0.0")


def check_quantity(path: str, value: object) -> str:
    """A resource.Quantity field; returns its text form (numbers become strings)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise meta.invalid(path, value, QUANTITY_MSG)
    try:
        quantity.parse(value)
    except quantity.QuantityError:
        raise meta.invalid(path, value, QUANTITY_MSG) from None
    return value if isinstance(value, str) else str(value)


# --- core v1 NodeSelector ----------------------------------------------------------------------


def check_node_selector(path: str, raw: object) -> None:
    """corevalidation.ValidateNodeSelector: at least one term, valid requirements per term."""
    selector = as_obj(raw, path)
    fields(selector, path, ("nodeSelectorTerms",))
    terms = get_list(selector, "nodeSelectorTerms", path)
    if not terms:
        raise meta.required(join(path, "nodeSelectorTerms"), "must have at least one node selector term")
    for i, term_raw in enumerate(terms):
        tpath = f"{path}.nodeSelectorTerms[{i}]"
        term = as_obj(term_raw, tpath)
        fields(term, tpath, ("matchExpressions", "matchFields"))
        for j, req in enumerate(get_list(term, "matchExpressions", tpath)):
            _check_requirement(f"{tpath}.matchExpressions[{j}]", req, field_selector=False)
        for j, req in enumerate(get_list(term, "matchFields", tpath)):
            _check_requirement(f"{tpath}.matchFields[{j}]", req, field_selector=True)


def _check_requirement(path: str, raw: object, *, field_selector: bool) -> None:
    req = as_obj(raw, path)
    fields(req, path, ("key", "operator", "values"))
    key = get_str(req, "key", path)
    operator = get_str(req, "operator", path)
    values = get_list(req, "values", path)
    for k, value in enumerate(values):
        if not isinstance(value, str):
            raise type_error(f"{path}.values[{k}]", value, "string")
    if field_selector:
        if key != "metadata.name":
            raise meta.invalid(join(path, "key"), key, "not a valid field selector key")
        if operator not in ("In", "NotIn"):
            raise meta.invalid(join(path, "operator"), operator, "not a valid selector operator")
        if len(values) != 1:
            raise meta.required(
                join(path, "values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )
        return
    if not key:
        raise meta.invalid(join(path, "key"), key, "name part must be non-empty")
    meta.check_qualified_name(join(path, "key"), key)
    if operator in ("In", "NotIn"):
        if not values:
            raise meta.required(join(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            raise meta.forbidden(
                join(path, "values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise meta.required(join(path, "values"), "must be specified single value when `operator` is 'Lt' or 'Gt'")
        if not re.fullmatch(r"[+-]?[0-9]+", str(values[0])):
            raise meta.invalid(join(path, "values"), values[0], "must be an integer when `operator` is 'Lt' or 'Gt'")
    else:
        raise meta.invalid(join(path, "operator"), operator, "not a valid selector operator")


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector(selector).Matches(labels): nil matches nothing, {} everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or ():
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or ()
        present = key in labels
        if op == "In":
            ok = present and labels[key] in values
        elif op == "NotIn":
            ok = not present or labels[key] not in values
        elif op == "Exists":
            ok = present
        elif op == "DoesNotExist":
            ok = not present
        else:
            ok = False
        if not ok:
            return False
    return True


def node_selector_matches(selector: Mapping[str, Any], node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether a (validated) core NodeSelector selects a node: terms are ORed, requirements ANDed."""
    for term in selector.get("nodeSelectorTerms") or ():
        exprs = term.get("matchExpressions") or ()
        fields_ = term.get("matchFields") or ()
        if not exprs and not fields_:
            continue  # an empty term matches no objects
        if all(_req_matches(r, labels) for r in exprs) and all(
            _req_matches(r, {"metadata.name": node_name}) for r in fields_
        ):
            return True
    return False


def _req_matches(req: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = req.get("key", "")
    op = req.get("operator", "")
    values = list(req.get("values") or ())
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False
