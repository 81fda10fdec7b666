"""kubectl's JSONPath, the subset a CRD's additionalPrinterColumns use, and how a column prints it.

Why our own: the API server evaluates each printer column's `jsonPath` on every custom
resource it prints (k8s.io/client-go/util/jsonpath, driven by apiextensions-apiserver's
tableconvertor with missing keys allowed). Supported: fields (`.spec.replicas`, `\\.`-escaped
dots, `.*`), bracket keys (`['a.b']`, `["a.b"]`: one key, dots included), indexes and slices
(`[0]`, `[-1]`, `[1:3]`, `[::2]`, `[*]`), unions of indexes (`[0,2]`), recursive descent (`..name`),
and filters (`[?(@.type=="Ready")]`, `<`, `>`, `<=`, `>=`, `!=`, and `[?(@.x)]` for presence),
with or without the surrounding `{}` and a leading `$`. One deliberate difference: client-go
reads `['a.b']` as `.a.b`; here a quoted bracket key is one key, so label keys with dots work.
Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.schema.gotext import go_json, go_type, go_v


class EvaluationError(ValueError):
    """The expression is valid but this object cannot be evaluated (an index out of bounds,
    values of different types compared); upstream's column then prints nothing."""


@dataclass(frozen=True)
class _Field:
    name: str  # "" is the current value itself ("{.}")


@dataclass(frozen=True)
class _Wildcard:
    pass


@dataclass(frozen=True)
class _Recursive:
    pass


@dataclass(frozen=True)
class _Slice:
    start: int | None
    end: int | None
    step: int | None
    single: bool  # `[n]`: the end was derived as n+1


@dataclass(frozen=True)
class _Union:
    branches: tuple[tuple[_Node, ...], ...]


@dataclass(frozen=True)
class _Literal:
    value: Any


@dataclass(frozen=True)
class _Filter:
    left: tuple[_Node, ...]
    op: str  # "exists" for `[?(@.x)]`
    right: tuple[_Node, ...] | _Literal


_Node = _Field | _Wildcard | _Recursive | _Slice | _Union | _Filter

_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")
_SLICE = re.compile(r"^(-?\d*)(:-?\d*)?(:-?\d*)?$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
_OPERATORS = ("<", ">", "<=", ">=", "==", "!=")


def parse(expr: str) -> tuple[_Node, ...]:
    """The path's steps; ValueError names what is wrong."""
    text = expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if not text:
        raise ValueError(f"invalid JSONPath {expr!r}: empty expression")
    try:
        return _parse_path(text)
    except ValueError as err:
        raise ValueError(f"invalid JSONPath {expr!r}: {err}") from None


def _parse_path(text: str) -> tuple[_Node, ...]:
    nodes: list[_Node] = []
    pos = 1 if text[0] in "$@" else 0
    while pos < len(text):
        ch = text[pos]
        if text.startswith("..", pos):
            nodes.append(_Recursive())
            pos += 2
            if pos < len(text) and text[pos] not in "[":
                pos = _parse_field(text, pos, nodes)
        elif ch == ".":
            pos = _parse_field(text, pos + 1, nodes)
        elif ch == "[":
            pos = _parse_bracket(text, pos, nodes)
        elif ch.isspace():
            pos += 1
        else:
            raise ValueError(f"unrecognized character in action: {ch!r}")
    return tuple(nodes)


def _parse_field(text: str, pos: int, nodes: list[_Node]) -> int:
    name: list[str] = []
    while pos < len(text) and text[pos] not in _TERMINATORS:
        if text[pos] == "\\" and pos + 1 < len(text):
            pos += 1
        name.append(text[pos])
        pos += 1
    joined = "".join(name)
    nodes.append(_Wildcard() if joined == "*" else _Field(joined))
    return pos


def _closing(text: str, pos: int) -> int:
    """Index of the `]` closing the bracket at `pos` (quotes and filter parentheses skipped)."""
    quote = ""
    depth = 0
    for i in range(pos + 1, len(text)):
        ch = text[i]
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "]" and depth <= 0:
            return i
    raise ValueError("unterminated array")


def _parse_bracket(text: str, pos: int, nodes: list[_Node]) -> int:
    end = _closing(text, pos)
    inner = text[pos + 1:end].strip()
    if inner.startswith("?(") and inner.endswith(")"):
        nodes.append(_parse_filter(inner[2:-1]))
    elif len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        nodes.append(_Field(inner[1:-1]))
    elif inner == "*":
        nodes.append(_Wildcard())
    elif "," in inner:
        nodes.append(_Union(tuple(_parse_path(f"[{part.strip()}]") for part in inner.split(","))))
    else:
        nodes.append(_parse_slice(inner))
    return end + 1


def _parse_slice(inner: str) -> _Slice:
    m = _SLICE.match(inner)
    if m is None:
        raise ValueError(f"invalid array index {inner}")
    start_s, end_s, step_s = m.group(1), m.group(2), m.group(3)
    start = int(start_s) if start_s not in ("", "-") else None
    if end_s is None and step_s is None:
        if start is None:
            raise ValueError(f"invalid array index {inner}")
        return _Slice(start, start + 1, None, True)
    end = int(end_s[1:]) if end_s and end_s[1:] not in ("", "-") else None
    step = int(step_s[1:]) if step_s and step_s[1:] not in ("", "-") else None
    return _Slice(start, end, step, False)


def _parse_filter(body: str) -> _Filter:
    m = _FILTER.match(body.strip())
    if m is None:
        return _Filter(_parse_operand_path(body), "exists", ())
    left, op, right = _parse_operand_path(m.group(1)), m.group(2), _parse_operand(m.group(3))
    if op not in _OPERATORS:
        raise ValueError(f"unrecognized filter operator {op}")
    return _Filter(left, op, right)


def _parse_operand(text: str) -> tuple[_Node, ...] | _Literal:
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return _Literal(s[1:-1])
    if s in ("true", "false"):
        return _Literal(s == "true")
    if _NUMBER.match(s):
        return _Literal(float(s) if any(c in s for c in ".eE") else int(s))
    return _parse_operand_path(s)


def _parse_operand_path(text: str) -> tuple[_Node, ...]:
    s = text.strip()
    if not s or s[0] not in "@$.":
        raise ValueError(f"unrecognized character in action: {s[:1]!r}")
    return _parse_path(s)


# --- evaluation -----------------------------------------------------------------------------------


def evaluate(expr: str, obj: Any) -> list[Any]:
    """Every value `expr` selects in `obj`, in order (missing keys select nothing).

    ValueError for an invalid expression; EvaluationError (a ValueError) when this object
    cannot be evaluated."""
    return _run(parse(expr), [obj])


def _run(nodes: tuple[_Node, ...], values: list[Any]) -> list[Any]:
    for node in nodes:
        values = _step(node, values)
    return values


def _step(node: _Node, values: list[Any]) -> list[Any]:
    out: list[Any] = []
    if isinstance(node, _Field):
        for v in values:
            if node.name == "":
                out.append(v)
            elif isinstance(v, Mapping) and node.name in v:
                out.append(v[node.name])
    elif isinstance(node, _Wildcard):
        for v in values:
            if isinstance(v, Mapping):
                out.extend(v[k] for k in sorted(v))
            elif isinstance(v, list):
                out.extend(v)
    elif isinstance(node, _Recursive):
        for v in values:
            _descend(v, out)
    elif isinstance(node, _Slice):
        for v in values:
            out.extend(_slice(node, v))
    elif isinstance(node, _Union):
        for branch in node.branches:
            out.extend(_run(branch, values))
    else:
        for v in values:
            out.extend(_filter(node, v))
    return out


def _descend(value: Any, out: list[Any]) -> None:
    children = [value[k] for k in sorted(value)] if isinstance(value, Mapping) else value
    if isinstance(children, list) and children:
        out.append(value)
        for child in children:
            _descend(child, out)


def _slice(node: _Slice, value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise EvaluationError(f"{go_type(value)} is not array or slice")
    length = len(value)
    start = 0 if node.start is None else node.start
    if start < 0:
        start += length
    end = length if node.end is None else node.end
    if end < 0 or (node.single and end == 0):
        end += length
    if end == start:
        return []
    if start >= length or start < 0:
        raise EvaluationError(f"array index out of bounds: index {start}, length {length}")
    if end > length or end < 0:
        raise EvaluationError(f"array index out of bounds: index {end - 1}, length {length}")
    if start > end:
        raise EvaluationError(f"starting index {start} is greater than ending index {end}")
    step = node.step if node.step and node.step > 0 else 1
    return value[start:end:step]


def _filter(node: _Filter, value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise EvaluationError(f"{value} is not array or slice and cannot be filtered")
    out = []
    for item in value:
        lefts = _run(node.left, [item])
        if node.op == "exists":
            if lefts:
                out.append(item)
            continue
        rights = [node.right.value] if isinstance(node.right, _Literal) else _run(node.right, [item])
        if not lefts or not rights:
            continue
        if len(lefts) > 1 or len(rights) > 1:
            raise EvaluationError("can only compare one element at a time")
        if _compare(lefts[0], node.op, rights[0]):
            out.append(item)
    return out


_BASIC_TYPES = frozenset({"bool", "int64", "float64", "string"})


def _kind(value: Any) -> str:
    """The Go type of a value text/template can compare (a basic kind), "" for any other."""
    name = go_type(value)
    return name if name in _BASIC_TYPES else ""


def _compare(left: Any, op: str, right: Any) -> bool:
    """Go text/template's eq/lt...: only basic values of the same kind compare."""
    lk, rk = _kind(left), _kind(right)
    if not lk or not rk:
        raise EvaluationError("invalid type for comparison")
    if lk != rk:
        raise EvaluationError("incompatible types for comparison")
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if lk == "bool":
        raise EvaluationError("invalid type for comparison")
    return bool({"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op])


# --- printing ----------------------------------------------------------------------------------


def format_value(value: Any) -> str:
    """How kubectl's JSONPath prints one result: objects and lists as compact JSON, strings as
    they are, numbers as Go's %v, null as `<no value>`."""
    if isinstance(value, (Mapping, list)):
        return go_json(value)
    if value is None:
        return "<no value>"
    return go_v(value)


def cell(expr: str, obj: Any) -> Any:
    """The first value `expr` selects, as a CRD printer column takes it; None when there is none
    or the object cannot be evaluated. ValueError for an invalid expression."""
    nodes = parse(expr)
    try:
        found = _run(nodes, [obj])
    except EvaluationError:
        return None
    return found[0] if found else None


def text(expr: str, obj: Any) -> str:
    """`kubectl get -o jsonpath=...` output for one expression: every result, space-separated."""
    return " ".join(format_value(v) for v in evaluate(expr, obj))
