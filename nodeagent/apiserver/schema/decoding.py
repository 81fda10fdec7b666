"""Request-body decoding that notices what strict field validation needs: duplicate fields.

Why not plain json.loads: the API server decodes bodies with sigs.k8s.io/json, which reports an
object naming a key twice (`duplicate field "metadata.name"`) and, for YAML, gopkg.in/yaml's
`line 5: key "name" already set in map`; Python's parsers silently keep the last value. The
common body has no duplicates, so JSON takes a fast path (orjson, then a colon count of the
input against the re-encoded value, which differ exactly when a key was dropped) and walks the
document pair by pair only when that check fails. Malformed input raises BodyDecodeError with
Go's wording (`invalid character '}' looking for beginning of object key string`). Pure: no I/O.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import yaml

from nodeagent.apiserver.schema.gotext import go_float, go_quote
from nodeagent.errors import safe_text
from nodeagent.objects import yaml_budget


class BodyDecodeError(ValueError):
    """A body that is not well-formed JSON or YAML; str() is Go's error text."""


class Pairs(list[tuple[str, Any]]):
    """A JSON object as its key/value pairs in document order, duplicates kept (the slow path)."""


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path and key else path or key


MAX_DEPTH = 200
"""The deepest nesting of objects and arrays a request body may have.

An intended difference from upstream: Go's decoder stops at 10,000 levels; the store and every
answer here encode with orjson, which stops at 254, and an answer wraps an object in a few more
levels (a list's items, a watch event, a Table row, managedFields mirror it in fieldsV1). A body
that deep was stored or half-handled and answered 500; now it is refused at decoding with Go's
text for a body beyond its limit (`invalid character '[' exceeded max depth`)."""
_ORJSON_DEPTH = 254  # orjson.dumps refuses a value nested deeper ("Recursion limit reached")


def _within_depth(value: Any) -> bytes:
    """orjson's encoding of `value`, which raises orjson.JSONEncodeError when `value` nests deeper
    than MAX_DEPTH: the value is wrapped in the levels orjson allows beyond MAX_DEPTH, so its own
    recursion limit does the check in C (no Python walk of every body)."""
    for _ in range(_ORJSON_DEPTH - MAX_DEPTH):
        value = [value]
    return orjson.dumps(value)


def check_depth(value: Any, body: bytes = b"") -> None:
    """Raise BodyDecodeError (Go's max-depth text where `body` is JSON) if `value` nests deeper than MAX_DEPTH."""
    try:
        _within_depth(value)
    except orjson.JSONEncodeError:
        raise BodyDecodeError(json_syntax_error(body) if body[:1] in (b"{", b"[") else "exceeded max depth") from None


def decode_json(body: bytes) -> tuple[Any, list[str]]:
    """The decoded value and the paths of duplicate fields, in document order (the last value wins,
    the key keeps its first position, as upstream's decoder leaves it)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        value = _loads_fallback(body)
        check_depth(value, body)
    else:
        try:
            encoded = _within_depth(value)
        except orjson.JSONEncodeError:
            raise BodyDecodeError(json_syntax_error(body)) from None
        # Every key contributes one ':' to both texts and string contents are kept verbatim, so the
        # counts differ only when a duplicate key was dropped (or an escaped colon, checked apart).
        if body.count(b":") == encoded.count(b":") and b"\\u003" not in body.lower():
            return value, []
    pairs = json.loads(body, object_pairs_hook=Pairs)
    duplicates: list[str] = []
    return valid_strings(build(pairs, "", duplicates), body), duplicates


def valid_strings(value: Any, body: bytes) -> Any:
    """`value` with every lone surrogate (a `\\ud83d` escape without its pair) replaced by U+FFFD,
    as Go's decoders do: Python's keep it, and a string that is not valid UTF-8 can be neither
    stored nor encoded (orjson refuses it), so one such escape once made an answer never come.
    Only walked when the body holds such an escape."""
    low = body.lower()
    if b"\\ud" not in low and b"\\u0000d" not in low:
        return value
    if isinstance(value, str):
        return safe_text(value, len(value))
    if isinstance(value, dict):
        return {valid_strings(k, body): valid_strings(v, body) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_strings(v, body) for v in value]
    return value


def pairs_of(body: bytes) -> Any:
    """The document with every object as Pairs (for walks that need duplicates in place)."""
    try:
        return json.loads(body, object_pairs_hook=Pairs)
    except ValueError:
        raise BodyDecodeError(json_syntax_error(body)) from None


def build(node: Any, path: str, duplicates: list[str]) -> Any:
    """Plain dicts and lists from a Pairs document, recording each duplicate path once."""
    if isinstance(node, Pairs):
        out: dict[str, Any] = {}
        for key, value in node:
            child = join(path, key)
            if key in out and child not in duplicates:
                duplicates.append(child)
            out[key] = build(value, child, duplicates)
        return out
    if isinstance(node, list):
        return [build(item, f"{path}[{i}]", duplicates) for i, item in enumerate(node)]
    return node


def _loads_fallback(body: bytes) -> Any:
    """json.loads for what orjson refuses but Go accepts (integers beyond 64 bits become floats)."""
    try:
        return valid_strings(json.loads(body, parse_int=_go_int), body)
    except (ValueError, RecursionError):
        raise BodyDecodeError(json_syntax_error(body)) from None


def _go_int(text: str) -> int | float:
    number = int(text)
    return number if -(2**63) <= number < 2**63 else float(number)


def integral_floats_as_ints(value: Any) -> Any:
    """`value` with every float without a fraction (1.0) an int, for custom resources: apiextensions
    decodes their JSON as Go's unstructured does (a number that does not parse as int64 is a float64)
    and writes float64(1) as `1` (encoding/json), so upstream serves and stores `1`; Python keeps
    `1.0`. Within int64 only, as _go_int. Containers are rebuilt only where something changes."""
    t = type(value)
    if t is float:
        return int(value) if value.is_integer() and -(2**63) <= value < 2**63 else value
    if t is dict:
        out = None
        for k, v in value.items():
            n = integral_floats_as_ints(v)
            if n is not v:
                if out is None:
                    out = dict(value)
                out[k] = n
        return value if out is None else out
    if t is list:
        items = [integral_floats_as_ints(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


# --- Go's encoding/json syntax errors -------------------------------------------------------


def _quote_char(c: int) -> str:
    if c == ord("'"):
        return "'\\''"
    if c == ord('"'):
        return "'\"'"
    return "'" + go_quote(chr(c))[1:-1] + "'"


class _Syntax(Exception):
    pass


def json_syntax_error(data: bytes) -> str:
    """The message Go's scanner gives for the first error in data (or a generic one)."""
    scan = _Scanner(data)
    try:
        scan.top()
    except _Syntax as err:
        return str(err)
    except RecursionError:
        return "exceeded max depth"
    return "invalid JSON"


class _Scanner:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.i = 0
        self.depth = 0

    def _peek(self) -> int:
        if self.i >= len(self.data):
            raise _Syntax("unexpected end of JSON input")
        return self.data[self.i]

    def _ws(self) -> None:
        while self.i < len(self.data) and self.data[self.i] in b" \t\r\n":
            self.i += 1

    def _fail(self, context: str) -> _Syntax:
        return _Syntax(f"invalid character {_quote_char(self.data[self.i])} {context}")

    def top(self) -> None:
        self._ws()
        self.value()
        self._ws()
        if self.i < len(self.data):
            raise self._fail("after top-level value")

    def value(self) -> None:
        c = self._peek()
        if c in b"{[":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self._fail("exceeded max depth")
            self._object() if c == ord("{") else self._array()
            self.depth -= 1
        elif c == ord('"'):
            self._string()
        elif c == ord("-") or ord("0") <= c <= ord("9"):
            self._number()
        elif c in b"tfn":
            self._literal({ord("t"): "true", ord("f"): "false", ord("n"): "null"}[c])
        else:
            raise self._fail("looking for beginning of value")

    def _object(self) -> None:
        self.i += 1
        self._ws()
        if self._peek() == ord("}"):
            self.i += 1
            return
        while True:
            if self._peek() != ord('"'):
                raise self._fail("looking for beginning of object key string")
            self._string()
            self._ws()
            if self._peek() != ord(":"):
                raise self._fail("after object key")
            self.i += 1
            self._ws()
            self.value()
            self._ws()
            c = self._peek()
            self.i += 1
            if c == ord("}"):
                return
            if c != ord(","):
                self.i -= 1
                raise self._fail("after object key:value pair")
            self._ws()

    def _array(self) -> None:
        self.i += 1
        self._ws()
        if self._peek() == ord("]"):
            self.i += 1
            return
        while True:
            self._ws()
            self.value()
            self._ws()
            c = self._peek()
            self.i += 1
            if c == ord("]"):
                return
            if c != ord(","):
                self.i -= 1
                raise self._fail("after array element")

    def _string(self) -> None:
        self.i += 1
        while True:
            c = self._peek()
            if c == ord('"'):
                self.i += 1
                return
            if c < 0x20:
                raise self._fail("in string literal")
            self.i += 1
            if c == ord("\\"):
                e = self._peek()
                if e == ord("u"):
                    self.i += 1
                    for _ in range(4):
                        if chr(self._peek()) not in "0123456789abcdefABCDEF":
                            raise self._fail("in \\u hexadecimal character escape")
                        self.i += 1
                elif e in b'"\\/bfnrt':
                    self.i += 1
                else:
                    raise self._fail("in string escape code")

    def _digits(self, context: str, *, required: bool) -> None:
        if required and not (self.i < len(self.data) and chr(self.data[self.i]).isdigit()):
            self._peek()
            raise self._fail(context)
        while self.i < len(self.data) and chr(self.data[self.i]).isdigit():
            self.i += 1

    def _number(self) -> None:
        if self.data[self.i] == ord("-"):
            self.i += 1
            self._digits("in numeric literal", required=True)
        elif self.data[self.i] == ord("0"):
            self.i += 1
        else:
            self._digits("in numeric literal", required=True)
        if self.i < len(self.data) and self.data[self.i] == ord("."):
            self.i += 1
            self._digits("after decimal point in numeric literal", required=True)
        if self.i < len(self.data) and self.data[self.i] in b"eE":
            self.i += 1
            if self.i < len(self.data) and self.data[self.i] in b"+-":
                self.i += 1
            self._digits("in exponent of numeric literal", required=True)

    def _literal(self, word: str) -> None:
        self.i += 1
        for expected in word[1:]:
            if self._peek() != ord(expected):
                raise self._fail(f"in literal {word} (expecting {_quote_char(ord(expected))})")
            self.i += 1


# --- YAML -----------------------------------------------------------------------------------

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """yaml.v2's view of a document: no timestamps (they stay strings), duplicates recorded."""

    duplicates: list[tuple[int, str]]

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            # yaml.v2 compares typed keys: 1 and true are different keys (Python's 1 == True).
            marker = (type(key).__name__, _key_text(key) if not isinstance(key, str) else key)
            if marker in seen:
                shown = go_quote(key) if isinstance(key, str) else _key_text(key)
                self.duplicates.append((key_node.start_mark.line + 1, f"key {shown} already set in map"))
            seen.add(marker)
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            mapping[key if isinstance(key, str) else _key_text(key)] = self.construct_object(value_node, deep=deep)
        return mapping


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}

_YAML_PROBLEMS = {"mapping values are not allowed here": "mapping values are not allowed in this context"}


def _key_text(key: Any) -> str:
    """A non-string mapping key as sigs.k8s.io/yaml writes it into JSON."""
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float):
        return go_float(key)
    return str(key)


def decode_yaml(body: bytes) -> tuple[Any, list[str]]:
    """The first document's value and its duplicate keys as yaml.v2 reports them
    (`line 5: key "name" already set in map`, in line order)."""
    try:
        # alias and depth bounds first: the loader shares aliases, walks expand them
        yaml_budget.check(body, max_depth=MAX_DEPTH)
    except yaml_budget.YAMLBudgetError as err:
        raise BodyDecodeError(f"error converting YAML to JSON: yaml: {err}") from None
    loader = _Loader(body)
    loader.duplicates = []
    try:
        node = _first_node(loader)
        value = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = _YAML_PROBLEMS.get(err.problem or "", err.problem or "invalid document")
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise BodyDecodeError(f"error converting YAML to JSON: yaml: {where}{problem}") from None
    except yaml.YAMLError as err:
        raise BodyDecodeError(f"error converting YAML to JSON: yaml: {err}") from None
    finally:
        loader.dispose()
    ordered = sorted(loader.duplicates, key=lambda entry: entry[0])
    return valid_strings(value, body), [f"line {line}: {text}" for line, text in ordered]


def _first_node(loader: Any) -> Any:
    # yaml.v2 reads the first document of a stream and ignores the rest.
    if loader.check_node():
        return loader.get_node()
    return None


def yaml_duplicates_error(lines: list[str]) -> str:
    """The single strict error yaml.v2 gives for its duplicate keys."""
    return "yaml: unmarshal errors:\n  " + "\n  ".join(lines)
