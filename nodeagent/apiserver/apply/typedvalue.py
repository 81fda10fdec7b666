"""Schema-aware walks over objects for server-side apply: field sets, comparison, merge, removal.

Why: structured-merge-diff decides everything from the object's schema: which fields are named
struct fields (owned only through their leaves), which maps are granular, which lists merge by
key (containers by name), as a set of values, or atomically. This module is those four walks
(`ToFieldSet`, `Compare`, `Merge`, `RemoveItems`, plus `EnsureNamedFieldsAreMembers`) over plain
dicts and our Schema model; fieldmanager.py composes them. Pure: no I/O.

The schema of a list follows kube-openapi's conversion of built-in types: `x-kubernetes-list-type`
wins; without one, a patch strategy of "merge" makes the list associative, keyed by its patch
merge key (a set when there is none); anything else is atomic. A part of the object the schema
does not describe (or ANY) is "deduced": maps are granular with unnamed keys, lists atomic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.apply import goserialized
from nodeagent.apiserver.apply.fieldset import FieldSet, Path, field_pe, key_pe, path_text, pe_text, value_pe
from nodeagent.apiserver.schema.model import Definitions, Schema

MISSING: Any = object()
"""An absent field or list item (distinct from JSON null)."""

DEDUCED = Schema(preserve_unknown_fields=True)
"""The schema of undescribed parts (compared by identity)."""


class TypedValueError(ValueError):
    """The object does not fit its schema (upstream's ValidationErrors, same texts)."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__(errors[0] if len(errors) == 1 else "errors:\n  " + "\n  ".join(errors))


@dataclass
class Comparison:
    added: FieldSet
    removed: FieldSet
    modified: FieldSet

    def exclude(self, ignored: FieldSet) -> Comparison:
        return Comparison(
            self.added.recursive_difference(ignored),
            self.removed.recursive_difference(ignored),
            self.modified.recursive_difference(ignored),
        )


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values that, like Go's, does not take true for 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_DEDUCED_CHILD: tuple[Schema | None, bool, bool, Any] = (DEDUCED, False, False, MISSING)


def _is_any(s: Schema) -> bool:
    return not s.type and not s.properties and s.items is None and s.additional_properties is None


class Typer:
    """The walks for one Definitions table.

    `builtin_kind`: the object is a built-in kind, whose Go types always serialize plain
    (non-pointer) structs and fields without omitempty (goserialized's table; for a definition it
    lacks, nested structs and the fields OpenAPI lists as required). Such a field is in both sides
    of upstream's comparison whenever its parent is: never added or removed as a whole (only what
    is below it), as upstream's managedFields show (`f:spec`, `f:containers` without "."; a
    pointer struct the write adds, such as a Deployment's `strategy.rollingUpdate`, has its "."),
    and a missing one stands for its zero value (a create of a StatefulSet with `serviceName: ""`
    leaves the field unowned, as the comparison with the empty Go object does). Custom resources
    pass False.
    """

    def __init__(self, defs: Definitions, *, builtin_kind: bool = True) -> None:
        self.defs = defs
        self.builtin_kind = builtin_kind

    # -- schema questions -------------------------------------------------------------

    def resolve(self, s: Schema | None) -> Schema:
        if s is None or s is DEDUCED:
            return DEDUCED
        r = self.defs.resolve(s)
        return DEDUCED if _is_any(r) else r

    def shape(self, s: Schema, v: Any) -> str:
        """The node's kind: scalar, atomic (a leaf list or map), map (granular) or list (associative)."""
        if s is DEDUCED:
            return "map" if isinstance(v, dict) else "atomic" if isinstance(v, list) else "scalar"
        if s.int_or_string:
            return "scalar"
        if s.type == "array" or s.items is not None:
            if v is not None and not isinstance(v, list):
                return "scalar"
            return "atomic" if self.list_kind(s)[0] == "atomic" else "list"
        if s.type == "object" or s.properties or s.additional_properties is not None:
            if v is not None and not isinstance(v, dict):
                return "scalar"
            return "atomic" if s.map_type == "atomic" else "map"
        return "scalar"

    @staticmethod
    def list_kind(s: Schema) -> tuple[str, tuple[str, ...]]:
        if s.list_type == "set":
            return "set", ()
        if s.list_type == "map":
            return ("map", s.list_map_keys) if s.list_map_keys else ("atomic", ())
        if not s.list_type and s.patch_strategy in ("merge", "merge,retainKeys"):
            return ("map", (s.patch_merge_key,)) if s.patch_merge_key else ("set", ())
        return "atomic", ()

    def child(self, s: Schema, name: str) -> tuple[Schema | None, bool, bool, Any]:
        """A map entry's schema (None when unknown), whether it is a named struct field, whether
        a built-in kind's Go type always serializes it, and its value when it is the Go zero value
        (MISSING: a struct, a null, or not always serialized). Remembered per schema node and name
        in the Definitions' walk_memo (the walks ask about the same few hundred fields over and
        over; the node is kept, so its id is not reused)."""
        if s is DEDUCED:
            return _DEDUCED_CHILD
        memo = self.defs.walk_memo
        key = (id(s), name)
        hit = memo.get(key)
        if hit is not None and hit[0] is s:
            return hit[1]  # type: ignore[no-any-return]
        found = self._child(s, name)
        if len(memo) >= 20_000:  # bounded: callers may hand in short-lived nodes
            memo.clear()
        memo[key] = (s, found)
        return found

    def _child(self, s: Schema, name: str) -> tuple[Schema | None, bool, bool, Any]:
        if name in s.properties:
            cs = self.resolve(s.properties[name])
            go = goserialized.serialized(self.defs.name_of(s))
            if go is None:  # no Go type known: nested structs and required fields
                return cs, True, (bool(cs.properties) and cs.map_type != "atomic") or name in s.required, MISSING
            zero = go.get(name, MISSING)
            return cs, True, name in go, MISSING if zero is None or zero == {} else zero
        if s.additional_properties is not None:
            return self.resolve(s.additional_properties), False, False, MISSING
        if s.preserve_unknown_fields or not s.properties:
            return _DEDUCED_CHILD
        return None, False, False, MISSING

    def item_schema(self, s: Schema) -> Schema:
        return self.resolve(s.items) if s is not DEDUCED else DEDUCED

    def item_pe(self, s: Schema, item: Any, path: Path, index: int) -> str:
        kind, keys = self.list_kind(s)

        def fail(msg: str) -> TypedValueError:
            return TypedValueError([f"{path_text(path)}: element {index}: {msg}"])

        if kind == "set":
            if isinstance(item, dict):
                raise fail("associative list without keys has an element that's a map type")
            if isinstance(item, list):
                raise fail("associative list without keys has an element that's a list type")
            return value_pe(item)
        if item is None:
            raise fail("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise fail("associative list with keys may not have non-map elements")
        item_s = self.item_schema(s)
        fields: dict[str, Any] = {}
        for k in keys:
            if k in item:
                fields[k] = item[k]
                continue
            prop = item_s.properties.get(k) if item_s is not DEDUCED else None
            default = self.defs.resolve(prop).default if prop is not None else None
            if default is None:
                omits = f'associative list with keys has an element that omits key field "{k}"'
                raise fail(omits + " (and doesn't have default value)")
            fields[k] = default
        return key_pe(fields)

    def _index(self, s: Schema, items: list[Any], path: Path) -> tuple[list[str], dict[str, Any]]:
        """Item path elements in order (first occurrence wins; items without one are skipped)."""
        order: list[str] = []
        by_pe: dict[str, Any] = {}
        for i, item in enumerate(items):
            try:
                pe = self.item_pe(s, item, path, i)
            except TypedValueError:
                continue
            if pe not in by_pe:
                by_pe[pe] = item
                order.append(pe)
        return order, by_pe

    # -- ToFieldSet -------------------------------------------------------------------

    def field_set(self, value: Any, s: Schema | None, *, strict: bool = False) -> FieldSet:
        """The fields `value` sets. `strict` (an applied configuration) raises TypedValueError on
        fields the schema does not declare, list items without keys, and duplicate keys."""
        out = FieldSet()
        errors: list[str] = []
        self._fs(value, self.resolve(s), (), out, errors, strict)
        if errors:
            raise TypedValueError(errors)
        return out

    def _fs(self, v: Any, s: Schema, path: Path, out: FieldSet, errors: list[str], strict: bool) -> None:
        shape = self.shape(s, v)
        if v is None or shape in ("scalar", "atomic"):
            out.insert(path)
            return
        if shape == "list":
            item_s = self.item_schema(s)
            seen: set[str] = set()
            for i, item in enumerate(v):
                try:
                    pe = self.item_pe(s, item, path, i)
                except TypedValueError as exc:
                    if strict:
                        errors.extend(exc.errors)
                    continue
                if pe in seen and strict:
                    msg = f"{path_text(path)}: duplicate entries for key {pe_text(pe)}"
                    if msg not in errors:
                        errors.append(msg)
                seen.add(pe)
                self._fs(item, item_s, (*path, pe), out, errors, strict)
                out.insert((*path, pe))
            return
        for k, cv in v.items():
            cs, named, _, _ = self.child(s, k)
            p2 = (*path, field_pe(k))
            if cs is None:
                if strict:
                    errors.append(f"{path_text(p2)}: field not declared in schema")
                continue
            self._fs(cv, cs, p2, out, errors, strict)
            if not named or cv == {}:
                out.insert(p2)

    # -- Compare ----------------------------------------------------------------------

    def compare(self, lhs: Any, rhs: Any, s: Schema | None) -> Comparison:
        """Fields added, removed and modified going from `lhs` to `rhs`."""
        c = Comparison(FieldSet(), FieldSet(), FieldSet())
        self._cmp(lhs, rhs, self.resolve(s), (), c, False)
        return c

    def _leaf(self, lhs: Any, rhs: Any, path: Path, c: Comparison) -> None:
        if lhs is MISSING:
            c.added.insert(path)
        elif rhs is MISSING:
            c.removed.insert(path)
        elif not json_equal(lhs, rhs):
            c.modified.insert(path)

    def _cmp(self, lhs: Any, rhs: Any, s: Schema, path: Path, c: Comparison, always_present: bool) -> None:
        if lhs is rhs and lhs is not MISSING:
            return  # one and the same value (a write keeps the parts it does not touch): nothing changed below
        if lhs is MISSING:
            self._added(rhs, s, path, c, always_present)
            return
        shape = self.shape(s, rhs if rhs is not MISSING else lhs)
        both = lhs is not MISSING and rhs is not MISSING
        if shape in ("scalar", "atomic") or (both and lhs is not None and self.shape(s, lhs) != shape):
            self._leaf(lhs, rhs, path, c)
            return
        lv = lhs if isinstance(lhs, (dict, list)) else None
        rv = rhs if isinstance(rhs, (dict, list)) else None
        if not lv and not rv:
            # Both empty or null: a leaf, which keeps the empty/null distinction.
            self._leaf(lhs, rhs, path, c)
            return
        if shape == "map":
            lm: dict[str, Any] = lv or {}  # type: ignore[assignment]
            rm: dict[str, Any] = rv or {}  # type: ignore[assignment]
            # A built-in kind's right side has this struct, at its zero value, when it is always serialized
            # (the left side has it: lhs MISSING went to _added); below a struct it lacks, nothing is there.
            r_present = self.builtin_kind and (rhs is not MISSING or always_present)
            for k in [*lm, *(k for k in rm if k not in lm)]:
                lk, rk = lm.get(k, MISSING), rm.get(k, MISSING)
                if lk is rk:  # one and the same value (the metadata's fields of a status write): as _cmp's first test
                    continue
                cs, _, always, zero = self.child(s, k)
                if cs is None:
                    continue
                if zero is not MISSING and r_present:  # the Go object has it, zero
                    if lk is MISSING:
                        lk = zero
                    elif rk is MISSING:
                        rk = zero
                self._cmp(lk, rk, cs, (*path, field_pe(k)), c, always and r_present)
        else:
            item_s = self.item_schema(s)
            l_order, l_items = self._index(s, lv or [], path)  # type: ignore[arg-type]
            r_order, r_items = self._index(s, rv or [], path)  # type: ignore[arg-type]
            for pe in [*l_order, *(pe for pe in r_order if pe not in l_items)]:
                self._cmp(l_items.get(pe, MISSING), r_items.get(pe, MISSING), item_s, (*path, pe), c, False)
        if not (self.builtin_kind and always_present):
            if lhs is MISSING:
                c.added.insert(path)
            elif rhs is MISSING:
                c.removed.insert(path)

    def _added(self, rhs: Any, s: Schema, path: Path, c: Comparison, always_present: bool) -> None:
        """`_cmp` of a value that is new as a whole (every create, every new field or item): the
        same sets, without looking for a left side at each level. The fields go straight into
        the set's nodes (not one insert from the root per field), then join `c.added` at `path`.
        `always_present`: the left side's Go object has this field (at its zero value)."""
        if not path:  # the root itself is nobody's field
            if self.shape(s, rhs) not in ("scalar", "atomic") and rhs and isinstance(rhs, (dict, list)):
                self._add_children(rhs, s, path, c.added, False)
            return
        holder = FieldSet()
        self._add_at(rhs, s, path, holder, path[-1], always_present)
        if not (holder.members or holder.children):
            return
        node = c.added
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = FieldSet()
            node = child
        node.members |= holder.members
        for pe, sub in holder.children.items():
            node.children[pe] = node.children[pe].union(sub) if pe in node.children else sub

    def _add_at(self, rhs: Any, s: Schema, path: Path, parent: FieldSet, pe: str, always_present: bool) -> None:
        """`rhs` at `path` (`parent`'s path and `pe`) and everything below it, into `parent`.
        `always_present` (a built-in kind's): the left side has this field at its zero value, so
        only what differs from that is added (a plain struct's fields, not the struct itself; an
        empty struct nothing)."""
        shape = self.shape(s, rhs)
        present = self.builtin_kind and always_present
        if shape in ("scalar", "atomic") or not rhs or not isinstance(rhs, (dict, list)):
            if not (present and shape == "map" and rhs == {}):
                parent.members.add(pe)
            return
        node = parent.children.get(pe)
        fresh = node is None
        if node is None:
            node = FieldSet()
        self._add_children(rhs, s, path, node, present)
        if fresh and (node.members or node.children):
            parent.children[pe] = node
        if not present:
            parent.members.add(pe)

    def _add_children(self, rhs: dict[str, Any] | list[Any], s: Schema, path: Path, node: FieldSet,
                      present: bool) -> None:
        """`present`: the left side has the Go zero value of `rhs`'s type here (a plain struct
        whose parent is there): its always-serialized fields are there too, at their zero values."""
        if isinstance(rhs, dict):  # shape "map": a list's shape is "list"
            for k, v in rhs.items():
                cs, _, always, zero = self.child(s, k)
                if cs is None:
                    continue
                if present and zero is not MISSING and json_equal(v, zero):
                    continue  # as on the left: unchanged
                fpe = field_pe(k)
                # Below a struct the left side lacks (a pointer's), every field is added whole.
                self._add_at(v, cs, (*path, fpe), node, fpe, always and present)
        else:
            item_s = self.item_schema(s)
            order, items = self._index(s, rhs, path)
            for ipe in order:
                self._add_at(items[ipe], item_s, (*path, ipe), node, ipe, False)

    # -- Merge ------------------------------------------------------------------------

    def merge(self, lhs: Any, rhs: Any, s: Schema | None) -> Any:
        """`rhs` (an applied configuration) merged onto `lhs` (the live object)."""
        return self._merge(lhs, rhs, self.resolve(s), ())

    def _merge(self, lhs: Any, rhs: Any, s: Schema, path: Path) -> Any:
        if rhs is MISSING:
            return lhs
        if lhs is MISSING or lhs is None or rhs is None:
            return rhs
        shape = self.shape(s, rhs)
        if shape in ("scalar", "atomic") or self.shape(s, lhs) != shape or (not lhs and not rhs):
            return rhs
        if shape == "map":
            out: dict[str, Any] = {}
            for k, lv in lhs.items():
                cs = self.child(s, k)[0] or DEDUCED
                out[k] = self._merge(lv, rhs.get(k, MISSING), cs, (*path, field_pe(k)))
            for k, rv in rhs.items():
                if k not in lhs:
                    out[k] = rv
            return out
        return self._merge_list(lhs, rhs, s, path)

    def _merge_list(self, lhs: list[Any], rhs: list[Any], s: Schema, path: Path) -> list[Any]:
        """Items of both in an order that keeps the live order of items the configuration does
        not name and the configuration's order of the items it does (upstream's merge)."""
        item_s = self.item_schema(s)
        l_pes: list[str | None] = []
        l_items: dict[str, Any] = {}
        for i, item in enumerate(lhs):
            try:
                pe: str | None = self.item_pe(s, item, path, i)
            except TypedValueError:
                pe = None
            if pe is not None and pe in l_items:
                pe = None
            if pe is not None:
                l_items[pe] = item
            l_pes.append(pe)
        r_order, r_items = self._index(s, rhs, path)
        shared = iter([pe for pe in r_order if pe in l_items])
        next_shared = next(shared, None)
        out: list[Any] = []
        merged: set[str] = set()
        li = ri = 0
        while li < len(lhs) or ri < len(r_order):
            lpe = l_pes[li] if li < len(lhs) else None
            if li < len(lhs) and ri < len(r_order):
                if lpe is not None and lpe == r_order[ri]:
                    out.append(self._merge(l_items[lpe], r_items[lpe], item_s, (*path, lpe)))
                    merged.add(lpe)
                    li += 1
                    ri += 1
                    next_shared = next(shared, None)
                    continue
                if lpe in r_items and next_shared is not None and next_shared != lpe:
                    li += 1
                    continue
            if li < len(lhs):
                if lpe is None or lpe not in r_items:
                    out.append(lhs[li])
                    li += 1
                    continue
                if lpe in merged:
                    li += 1
                    continue
            if ri < len(r_order):
                rpe = r_order[ri]
                merged.add(rpe)
                out.append(self._merge(l_items.get(rpe, MISSING), r_items[rpe], item_s, (*path, rpe)))
                ri += 1
                if next_shared == rpe:
                    next_shared = next(shared, None)
        return out

    # -- RemoveItems ------------------------------------------------------------------

    def remove_items(self, value: Any, to_remove: FieldSet, s: Schema | None) -> Any:
        """`value` without the members of `to_remove` (and what is below them); a map or list
        left empty becomes null, as upstream's removal leaves it."""
        return self._rm(value, to_remove, self.resolve(s), ())

    def _rm(self, v: Any, rs: FieldSet, s: Schema, path: Path) -> Any:
        shape = self.shape(s, v)
        if v is None or shape in ("scalar", "atomic"):
            return v
        if not v:
            return None
        if shape == "list":
            item_s = self.item_schema(s)
            items: list[Any] = []
            for i, item in enumerate(v):
                try:
                    pe = self.item_pe(s, item, path, i)
                except TypedValueError:
                    items.append(item)
                    continue
                if pe in rs.members:
                    continue
                sub = rs.children.get(pe)
                if sub is not None and not sub.empty():
                    item = self._rm(item, sub, item_s, (*path, pe))
                items.append(item)
            return items or None
        out: dict[str, Any] = {}
        for k, cv in v.items():
            pe = field_pe(k)
            if pe in rs.members:
                continue
            sub = rs.children.get(pe)
            if sub is not None and not sub.empty():
                cv = self._rm(cv, sub, self.child(s, k)[0] or DEDUCED, (*path, pe))
            out[k] = cv
        return out or None

    # -- EnsureNamedFieldsAreMembers --------------------------------------------------

    def ensure_named(self, fs: FieldSet, s: Schema | None) -> FieldSet:
        """`fs` plus, as members, the named struct fields it has children under (so that
        removing the set removes those fields whole)."""
        return self._named(fs, self.resolve(s))

    def _named(self, fs: FieldSet, s: Schema) -> FieldSet:
        members = set(fs.members)
        children: dict[str, FieldSet] = {}
        for pe, sub in fs.children.items():
            cs: Schema = DEDUCED
            if pe.startswith("f:") and s is not DEDUCED:
                name = pe[2:]
                if name in s.properties:
                    members.add(pe)
                cs = self.child(s, name)[0] or DEDUCED
            elif pe.startswith("k:") and s is not DEDUCED and (s.type == "array" or s.items is not None):
                cs = self.item_schema(s)
            children[pe] = self._named(sub, cs)
        return FieldSet(members, children)
