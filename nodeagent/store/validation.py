"""Object metadata validation with the API server's field paths and wording.

Pure helpers shared by every manifest parser: DNS names, label keys and values, and the
`field.Error` message shapes (Invalid value, Required value, ...) of apimachinery, so a
user sees the same text the API server would print. No I/O.

Why in store/: the store validates every object's metadata itself before a write (txn.py, as the
API server's generic registry runs ValidateObjectMeta for every kind), and store/ is the bottom of
apiserver -> controlplane -> objects -> store; the kinds' own validation in objects/ (and the config,
DRA and conformance checks that reuse these shapes) import it from here. Imports only errors.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from nodeagent.errors import ValidationError, safe_text

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = r"(" + _QUALIFIED_NAME + r")?"

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{_DNS1123_LABEL}')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{_DNS1123_SUBDOMAIN}')"
)
QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    f"regex used for validation is '{_QUALIFIED_NAME}')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    f"'12345', regex used for validation is '{_LABEL_VALUE}')"
)

_LABEL_RE = re.compile(f"^{_DNS1123_LABEL}$")
_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN}$")
_QUALIFIED_RE = re.compile(f"^{_QUALIFIED_NAME}$")
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE}$")


VALUE_MAX = 1024
"""Longest echoed value in an error text: the rest becomes "...", so an error never grows with its
input (a 20 KB value once overflowed a client's metadata limit)."""
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _go_escape(found: re.Match[str]) -> str:
    char = found.group(0)
    return _GO_ESCAPES.get(char) or f"\\x{ord(char):02x}"


def quote(value: object) -> str:
    """Render a value as field.Error does (%q for strings, Go-like text otherwise), cut at VALUE_MAX."""
    if isinstance(value, str):
        text = safe_text(value, VALUE_MAX).replace("\\", "\\\\").replace('"', '\\"')
        if _CONTROL_RE.search(text):  # strconv.Quote escapes control characters (a PEM's newlines)
            text = _CONTROL_RE.sub(_go_escape, text)
        return '"' + text + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return safe_text(str(value), VALUE_MAX)


def invalid(path: str, value: object, detail: str) -> ValidationError:
    return ValidationError(path, f"Invalid value: {quote(value)}: {detail}")


def required(path: str, detail: str = "") -> ValidationError:
    return ValidationError(path, "Required value" + (f": {detail}" if detail else ""))


def duplicate(path: str, value: object) -> ValidationError:
    return ValidationError(path, f"Duplicate value: {quote(value)}")


def forbidden(path: str, detail: str) -> ValidationError:
    return ValidationError(path, f"Forbidden: {detail}")


def not_found(path: str, value: object, detail: str = "") -> ValidationError:
    return ValidationError(path, f"Not found: {quote(value)}" + (f": {detail}" if detail else ""))


def not_supported(path: str, value: object, supported: Iterable[str], *, ordered: bool = False) -> ValidationError:
    """field.NotSupported; most callers pass a sets.List (sorted), `ordered` keeps a literal list's order."""
    values = ", ".join(quote(v) for v in (supported if ordered else sorted(supported)))
    return ValidationError(path, f"Unsupported value: {quote(value)}: supported values: {values}")


def too_long(path: str, value: object, limit: int) -> ValidationError:
    return invalid(path, value, f"must be no more than {limit} characters")


def check_dns_label(path: str, value: str) -> None:
    if len(value) > DNS1123_LABEL_MAX:
        raise too_long(path, value, DNS1123_LABEL_MAX)
    if not _LABEL_RE.match(value):
        raise invalid(path, value, LABEL_MSG)


def check_dns_subdomain(path: str, value: str) -> None:
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        raise too_long(path, value, DNS1123_SUBDOMAIN_MAX)
    if not _SUBDOMAIN_RE.match(value):
        raise invalid(path, value, SUBDOMAIN_MSG)


def check_path_segment(path: str, value: str) -> None:
    """content.IsPathSegmentName (the RBAC kinds' names): not `.` or `..`, no `/` or `%`; upstream
    lists every fault, the first is reported here as for every other check."""
    if value in (".", ".."):
        raise invalid(path, value, f"may not be '{value}'")
    for bad in ("/", "%"):
        if bad in value:
            raise invalid(path, value, f"may not contain '{bad}'")


def check_ip(path: str, value: str) -> None:
    """IsValidIP (strict): an IP address, no leading 0s, not IPv4-mapped, in canonical form."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        parts = value.split(".")
        if len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts):  # Go's sloppy parser takes it
            raise invalid(path, value, "must not have leading 0s") from None
        raise invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)") from None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        raise invalid(path, value, "must not be an IPv4-mapped IPv6 address")
    if str(ip) != value:
        raise invalid(path, value, f'must be in canonical form ("{ip}")')


def check_qualified_name(path: str, value: str) -> None:
    """A label or annotation key: optional DNS-subdomain prefix, '/', and a name part."""
    prefix, sep, name = value.rpartition("/")
    if sep:
        if not prefix:
            raise invalid(path, value, "prefix part must be non-empty")
        if len(prefix) > DNS1123_SUBDOMAIN_MAX or not _SUBDOMAIN_RE.match(prefix):
            raise invalid(path, value, "prefix part " + SUBDOMAIN_MSG)
    if not name:
        raise invalid(path, value, "name part must be non-empty")
    if len(name) > DNS1123_LABEL_MAX:
        raise invalid(path, value, f"name part must be no more than {DNS1123_LABEL_MAX} characters")
    if not _QUALIFIED_RE.match(name):
        raise invalid(path, value, QUALIFIED_NAME_MSG)


def check_labels(path: str, labels: Mapping[str, str]) -> None:
    for key, value in labels.items():
        check_qualified_name(path, key)
        check_label_value(path, value)


def check_label_value(path: str, value: str) -> None:
    if len(value) > DNS1123_LABEL_MAX:
        raise invalid(path, value, f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _LABEL_VALUE_RE.match(value):
        raise invalid(path, value, LABEL_VALUE_MSG)


def check_annotations(path: str, annotations: Mapping[str, str]) -> None:
    total = 0
    for key, value in annotations.items():
        check_qualified_name(path, key.lower())
        total += len(key) + len(value)
    if total > 256 * 1024:
        raise ValidationError(path, f"Too long: may not be more than {256 * 1024} bytes")


def go_type(value: object) -> str:
    """The JSON type name of a value, for type-mismatch messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
