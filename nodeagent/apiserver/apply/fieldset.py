"""Field sets: which fields of an object a manager owns, and their FieldsV1 wire form.

Why a module of its own: server-side apply (fieldmanager.py) reasons entirely in sets of field paths
(sigs.k8s.io/structured-merge-diff `fieldpath.Set`): who owns what, what changed, what
conflicts. The sets travel in `metadata.managedFields[].fieldsV1`, whose JSON form clients
read and even write (kubectl's client-side-apply upgrade patches it), so the encoding, the
order of entries and the path texts in conflict messages follow upstream exactly. Pure: no I/O.

A path element is kept as its FieldsV1 token, which is unique once canonical:
`f:<name>` (a field), `k:<json object>` (an associative list item by its keys, key names
sorted), `v:<json>` (a set item by value), `i:<n>` (an index).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import orjson

from nodeagent.apiserver.schema.gotext import go_json, go_quote, go_v

Path = tuple[str, ...]


def field_pe(name: str) -> str:
    return "f:" + name


_PLAIN_FORBIDDEN = frozenset('"\\<>&')


def _plain(text: str) -> bool:
    """Printable ASCII that Go's encoder writes as is (no quote, backslash or HTML character)."""
    return text.isascii() and text.isprintable() and _PLAIN_FORBIDDEN.isdisjoint(text)


def key_pe(fields: Mapping[str, Any]) -> str:
    if len(fields) == 1:
        ((k, v),) = fields.items()
        if type(v) is str:  # the usual one-key list (name, type): memoised, tokens repeat
            return _one_key_pe(k, v)
    return _key_pe(fields)


@lru_cache(maxsize=8192)
def _one_key_pe(key: str, value: str) -> str:
    return _key_pe({key: value})


def _key_pe(fields: Mapping[str, Any]) -> str:
    items = sorted(fields.items())
    if all(type(v) is str and _plain(v) and _plain(k) for k, v in items):  # names, types, ports by name
        return "k:{" + ",".join(f'"{k}":"{v}"' for k, v in items) + "}"
    return "k:" + go_json(dict(items))


def value_pe(value: Any) -> str:
    return "v:" + go_json(value)


def index_pe(index: int) -> str:
    return f"i:{index}"


def _loads(text: str) -> Any:
    """orjson for the valid JSON of every stored entry; the stdlib's reading (and error text) otherwise."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


@lru_cache(maxsize=8192)
def canonical_pe(token: str) -> str:
    """The canonical token for a FieldsV1 key written by anyone (ValueError when malformed).

    Memoised (a pure function of the text; errors are not cached): every write decodes the
    stored managedFields, whose tokens repeat across objects of a kind."""
    kind, body = token[:2], token[2:]
    if kind == "f:":
        return token
    try:
        if kind == "k:":
            fields = _loads(body)
            if not isinstance(fields, dict) or not fields:
                raise ValueError(f"expected a non-empty key object in {token!r}")
            return key_pe(fields)
        if kind == "v:":
            return value_pe(_loads(body))
        if kind == "i:":
            return index_pe(int(body))
    except json.JSONDecodeError as exc:
        raise ValueError(f"parsing JSON of {token!r}: {exc}") from None
    raise ValueError(f"unknown path element prefix in {token!r}")


def _value_order(value: Any) -> tuple[Any, ...]:
    """structured-merge-diff's total order of values: numbers, strings, bools, lists, maps, null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, float(value))
    if isinstance(value, str):
        return (1, value.encode())
    if isinstance(value, list):
        return (3, tuple(_value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k.encode(), _value_order(v)) for k, v in sorted(value.items())))
    return (5,)


@lru_cache(maxsize=8192)
def pe_order(token: str) -> tuple[Any, ...]:
    """Field names first, then keys, values and indices, each in upstream's order.

    Memoised: every managedFields encode sorts each level by it, over the same few tokens."""
    kind, body = token[:2], token[2:]
    if kind == "f:":
        return (0, body.encode())
    if kind == "k:":
        fields = json.loads(body)
        return (1, tuple((k.encode(), _value_order(v)) for k, v in sorted(fields.items())))
    if kind == "v:":
        return (2, _value_order(json.loads(body)))
    return (3, int(body))


def _go_value_text(value: Any) -> str:
    """structured-merge-diff's value.ToString: strings as Go's %q, numbers as %v, lists and maps spelled out."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list):
        return "[" + ",".join(_go_value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={_go_value_text(v)}" for k, v in sorted(value.items()))
    return go_v(value)


def pe_text(token: str) -> str:
    """`.name`, `[name="nginx"]`, `[="a"]`, `[0]`: how a path element reads in messages."""
    kind, body = token[:2], token[2:]
    if kind == "f:":
        return "." + body
    if kind == "k:":
        fields = json.loads(body)
        return "[" + ",".join(f"{k}={_go_value_text(v)}" for k, v in sorted(fields.items())) + "]"
    if kind == "v:":
        return "[=" + _go_value_text(json.loads(body)) + "]"
    return "[" + body + "]"


def path_text(path: Path) -> str:
    return "".join(pe_text(pe) for pe in path)


def field_path(dotted: str) -> Path:
    """`status` or `metadata.deletionTimestamp` as a path of field elements."""
    return tuple(field_pe(part) for part in dotted.split(".") if part)


class FieldSet:
    """A set of field paths as a tree: `members` are owned path elements at this level,
    `children` the subsets below an element (appearing there does not imply membership).
    Operations return new sets; `insert` is for building one. A set an operation returned is
    never changed afterwards, so results share the subtrees an operation leaves as they were
    (copying them cost more than the rest of a write's field bookkeeping)."""

    __slots__ = ("children", "members")

    def __init__(self, members: set[str] | None = None, children: dict[str, FieldSet] | None = None) -> None:
        self.members: set[str] = members if members is not None else set()
        self.children: dict[str, FieldSet] = children if children is not None else {}

    @classmethod
    def of(cls, *paths: Path) -> FieldSet:
        out = cls()
        for p in paths:
            out.insert(p)
        return out

    def insert(self, path: Path) -> None:
        # The empty path is the whole object, which nobody owns.
        if not path:
            return
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = FieldSet()
            node = child
        node.members.add(path[-1])

    def has(self, path: Path) -> bool:
        node: FieldSet | None = self
        for i, pe in enumerate(path):
            assert node is not None
            if i == len(path) - 1:
                return pe in node.members
            node = node.children.get(pe)
            if node is None:
                return False
        return False

    def empty(self) -> bool:
        return not self.members and all(c.empty() for c in self.children.values())

    def with_prefix(self, pe: str) -> FieldSet:
        return self.children.get(pe) or FieldSet()

    def copy(self) -> FieldSet:
        return FieldSet(set(self.members), {pe: c.copy() for pe, c in self.children.items()})

    def union(self, other: FieldSet) -> FieldSet:
        children = dict(self.children)
        for pe, c in other.children.items():
            children[pe] = children[pe].union(c) if pe in children else c
        return FieldSet(self.members | other.members, children)

    def intersection(self, other: FieldSet) -> FieldSet:
        children: dict[str, FieldSet] = {}
        for pe, c in self.children.items():
            if pe in other.children:
                both = c.intersection(other.children[pe])
                if not both.empty():
                    children[pe] = both
        return FieldSet(self.members & other.members, children)

    def difference(self, other: FieldSet) -> FieldSet:
        """Leaf-wise difference: a member of `other` does not take its children away."""
        children: dict[str, FieldSet] = {}
        for pe, c in self.children.items():
            rest = c.difference(other.children[pe]) if pe in other.children else c
            if not rest.empty():
                children[pe] = rest
        return FieldSet(self.members - other.members, children)

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """Difference where a member of `other` also takes away everything below it."""
        children: dict[str, FieldSet] = {}
        for pe, c in self.children.items():
            if pe in other.members:
                continue
            rest = c.recursive_difference(other.children[pe]) if pe in other.children else c
            if not rest.empty():
                children[pe] = rest
        return FieldSet(self.members - other.members, children)

    def paths(self) -> Iterator[Path]:
        """Every member path, members of a level before its children, each in upstream order."""
        yield from self._paths(())

    def _paths(self, prefix: Path) -> Iterator[Path]:
        for pe in sorted(self.members, key=pe_order):
            yield (*prefix, pe)
        for pe in sorted(self.children, key=pe_order):
            yield from self.children[pe]._paths((*prefix, pe))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSet):
            return NotImplemented
        return set(self.paths()) == set(other.paths())

    def __repr__(self) -> str:
        return "FieldSet(" + ", ".join(path_text(p) for p in self.paths()) + ")"


def fieldset_to_fieldsv1(fs: FieldSet) -> dict[str, Any]:
    """The FieldsV1 object: `{"f:spec": {"f:replicas": {}}}`, "." marking a member that also
    has children; entries in upstream's order."""
    return _emit(fs, include_self=False)


def _emit(fs: FieldSet, include_self: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if include_self and (fs.members or fs.children):
        out["."] = {}
    for pe in sorted(fs.members | set(fs.children), key=pe_order):
        child = fs.children.get(pe)
        if child is None or child.empty():
            if pe in fs.members:
                out[pe] = {}
        else:
            out[pe] = _emit(child, include_self=pe in fs.members)
    return out


def fieldset_from_fieldsv1(fields: Any) -> FieldSet:
    """Parse a FieldsV1 object (ValueError when it is not one)."""
    if not isinstance(fields, Mapping):
        raise ValueError("FieldsV1 must be a JSON object")
    out = FieldSet()
    for token, sub in fields.items():
        if token == ".":
            continue
        if not isinstance(sub, Mapping):
            raise ValueError(f"expected a JSON object under {token!r}")
        pe = canonical_pe(token)
        if not sub:  # a leaf: a member without children
            out.members.add(pe)
            continue
        if "." in sub:
            out.members.add(pe)
        child = fieldset_from_fieldsv1(sub)
        if not child.empty():
            out.children[pe] = out.children[pe].union(child) if pe in out.children else child
    return out
