"""Label selectors: the `-l` string syntax and the LabelSelector object, matched against labels.

Supports what apimachinery's `labels.Parse` accepts that users type: `k=v`, `k==v`, `k!=v`,
`k in (a,b)`, `k notin (a,b)`, `k` (exists) and `!k` (does not exist), comma-separated,
and the `{matchLabels, matchExpressions}` object of pod and node selectors. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeagent.errors import ValidationError

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == EXISTS:
            return self.key in labels
        if self.operator == DOES_NOT_EXIST:
            return self.key not in labels
        if self.operator == IN:
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        got = labels or {}
        return all(r.matches(got) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


EVERYTHING = Selector()

_SET_RE = re.compile(r"^\s*(!?)\s*([^\s!=,()]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([^\s!=,()]+)\s*(==|=|!=)\s*([^\s!=,()]*)\s*$")


def _split(text: str) -> list[str]:
    """Split at commas outside parentheses."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_selector(text: str) -> Selector:
    """Parse the `-l` syntax; raise ValidationError naming the bad part."""
    if not text.strip():
        return EVERYTHING
    reqs: list[Requirement] = []
    for part in _split(text):
        eq = _EQ_RE.match(part)
        if eq:
            key, op, value = eq.groups()
            reqs.append(Requirement(key, NOT_IN if op == "!=" else IN, frozenset([value])))
            continue
        st = _SET_RE.match(part)
        if st is None:
            raise ValidationError("labelSelector", f"unable to parse requirement: {part.strip()!r}")
        bang, key, op, values = st.groups()
        if op is None:
            reqs.append(Requirement(key, DOES_NOT_EXIST if bang else EXISTS))
        elif bang:
            raise ValidationError("labelSelector", f"unable to parse requirement: {part.strip()!r}")
        else:
            vals = frozenset(v.strip() for v in values.split(",") if v.strip())
            reqs.append(Requirement(key, IN if op == "in" else NOT_IN, vals))
    return Selector(tuple(reqs))


def from_label_selector(obj: Mapping[str, Any], path: str = "selector") -> Selector:
    """Build a selector from a `{matchLabels, matchExpressions}` object."""
    reqs = [Requirement(k, IN, frozenset([v])) for k, v in (obj.get("matchLabels") or {}).items()]
    for i, expr in enumerate(obj.get("matchExpressions") or []):
        op = expr.get("operator", "")
        if op not in _OPERATORS:
            supported = ", ".join(f'"{o}"' for o in _OPERATORS)
            raise ValidationError(
                f"{path}.matchExpressions[{i}].operator",
                f'Unsupported value: "{op}": supported values: {supported}',
            )
        reqs.append(Requirement(expr.get("key", ""), op, frozenset(expr.get("values") or [])))
    return Selector(tuple(reqs))


def as_selector(selector: Selector | str | Mapping[str, str] | None) -> Selector:
    """Accept a Selector, the `-l` string, or a plain label map (matchLabels) ."""
    if selector is None:
        return EVERYTHING
    if isinstance(selector, Selector):
        return selector
    if isinstance(selector, str):
        return parse_selector(selector)
    return Selector(tuple(Requirement(k, IN, frozenset([v])) for k, v in selector.items()))
