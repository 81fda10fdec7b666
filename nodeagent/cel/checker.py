"""A CEL type checker over syntax.py's tree, with cel-go's rules and issue texts.

Why: kube-controller-manager's validatingadmissionpolicy-status controller type-checks each policy's
expressions against the schemas of the kinds it matches and writes what cel-go's checker reports
(`undefined field 'x'`, `found no matching overload for '_+_' applied to '(int, string)'`,
`expected type 'bool' but found 'int'`, `undeclared reference to 'x' (in container '')`) into
status.typeChecking; the CEL package the project evaluates with has no checker.

What follows cel-go (checker/checker.go, checker/types.go, common/stdlib): the types (primitives,
list, map, message types with declared fields, optional_type, type, dyn, type parameters and their
substitution), assignability (dyn and the error type are assignable both ways, so one issue does
not cascade; null only to messages and opaque types), overload resolution in declaration order (the
first match gives the result type, a later match of another type makes it dyn), comprehension macros
typed as their expansions, and the issue text `ERROR: <input>:L:C: msg` with the source line and a
caret, issues sorted by position. The declared functions are cel-go's standard library and the
Kubernetes libraries' functions whose overloads are written here; a call of any other function
name is typed dyn without an issue: where this checker cannot decide, it says nothing (no false
warnings). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodeagent.cel import syntax as S

# --- types -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Type:
    """A CEL type. kind: int uint double bool string bytes null timestamp duration dyn error list map
    struct type opaque param; `name` for struct/opaque/param types; `params` for list/map/opaque/type."""

    kind: str
    name: str = ""
    params: tuple[Type, ...] = ()

    def __str__(self) -> str:
        return format_type(self)


INT, UINT, DOUBLE, BOOL, STRING, BYTES = Type("int"), Type("uint"), Type("double"), Type("bool"), Type("string"), \
    Type("bytes")
NULL, DYN, ERROR, TIMESTAMP, DURATION = Type("null"), Type("dyn"), Type("error"), Type("timestamp"), Type("duration")
A, B = Type("param", "A"), Type("param", "B")


def list_of(elem: Type) -> Type:
    return Type("list", "list", (elem,))


def map_of(key: Type, value: Type) -> Type:
    return Type("map", "map", (key, value))


def optional_of(t: Type) -> Type:
    return Type("opaque", "optional_type", (t,))


def type_of(t: Type) -> Type:
    return Type("type", "type", (t,))


def struct(name: str) -> Type:
    return Type("struct", name)


def format_type(t: Type) -> str:
    """checker.FormatCELType."""
    if t.kind == "error":
        return "!error!"
    if t.kind == "param":
        return t.name
    if t.kind in ("list", "map", "opaque", "type"):
        if not t.params:
            return t.name
        return f"{t.name}({', '.join(format_type(p) for p in t.params)})"
    if t.kind == "struct":
        return t.name
    return t.kind


# --- assignability (checker/types.go) ---------------------------------------------------------------

class _Mapping:
    def __init__(self, subs: dict[str, Type] | None = None) -> None:
        self.subs: dict[str, Type] = dict(subs or {})

    def copy(self) -> _Mapping:
        return _Mapping(self.subs)

    def find(self, t: Type) -> Type | None:
        return self.subs.get(t.name) if t.kind == "param" else None


def _dyn_or_error(t: Type) -> bool:
    return t.kind in ("dyn", "error")


def _less_specific(t1: Type, t2: Type) -> bool:
    if t1.kind == "dyn" or t1.kind == "param":
        return True
    if t2.kind == "dyn" or t2.kind == "param":
        return False
    if t1.kind != t2.kind:
        return False
    if t1.kind in ("opaque", "list", "map"):
        return t1.name == t2.name and len(t1.params) == len(t2.params) and all(
            _less_specific(a, b) for a, b in zip(t1.params, t2.params, strict=True))
    if t1.kind == "type":
        return True
    return t1 == t2


def _most_general(t1: Type, t2: Type) -> Type:
    return t1 if _less_specific(t1, t2) else t2


def _not_referenced_in(m: _Mapping, t: Type, within: Type) -> bool:
    if t == within:
        return False
    if within.kind == "param":
        sub = m.find(within)
        return True if sub is None else _not_referenced_in(m, t, sub)
    if within.kind in ("opaque", "list", "map", "type"):
        return all(_not_referenced_in(m, t, p) for p in within.params)
    return True


def _valid_substitution(m: _Mapping, t1: Type, t2: Type) -> tuple[bool, bool]:
    if t1 == t2:
        return True, True
    sub = m.find(t2)
    if sub is not None:
        if t1 == sub:
            return True, True
        if _assignable(m, t1, sub):
            new = _most_general(t1, sub)
            if _not_referenced_in(m, t2, new):
                m.subs[t2.name] = new
            return True, True
        return False, True
    if _not_referenced_in(m, t2, t1):
        m.subs[t2.name] = t1
        return True, False
    return False, False


_SIMPLE = frozenset({"bool", "bytes", "double", "int", "string", "uint", "duration", "timestamp"})


def _assignable(m: _Mapping, t1: Type, t2: Type) -> bool:
    if t2.kind == "param":
        valid, has_sub = _valid_substitution(m, t1, t2)
        if valid:
            return True
        if has_sub:
            return False
    if t1.kind == "param":
        return _valid_substitution(m, t2, t1)[0]
    if _dyn_or_error(t1) or _dyn_or_error(t2):
        return True
    if t1.kind == "null":
        return t2.kind in ("opaque", "struct", "null")
    if t2.kind == "null":
        return t1.kind in ("opaque", "struct")
    if t1.kind in _SIMPLE or t1.kind == "struct":
        return t1 == t2
    if t1.kind == "type":
        return t2.kind == "type"
    if t1.kind in ("opaque", "list", "map"):
        return t1.kind == t2.kind and t1.name == t2.name and _assignable_list(m, t1.params, t2.params)
    return False


def _assignable_list(m: _Mapping, l1: Sequence[Type], l2: Sequence[Type]) -> bool:
    return len(l1) == len(l2) and all(_assignable(m, a, b) for a, b in zip(l1, l2, strict=True))


def _substitute(m: _Mapping, t: Type, param_to_dyn: bool) -> Type:
    sub = m.find(t)
    if sub is not None:
        return _substitute(m, sub, param_to_dyn)
    if param_to_dyn and t.kind == "param":
        return DYN
    if t.kind in ("opaque", "list", "map", "type") and t.params:
        return Type(t.kind, t.name, tuple(_substitute(m, p, param_to_dyn) for p in t.params))
    return t


# --- declarations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Overload:
    """One overload: argument types (the receiver first for a member overload) and the result."""

    args: tuple[Type, ...]
    result: Type
    member: bool = False


def _g(result: Type, *args: Type) -> Overload:
    return Overload(tuple(args), result)


def _m(result: Type, *args: Type) -> Overload:
    return Overload(tuple(args), result, member=True)


def _comparisons() -> tuple[Overload, ...]:
    out = [_g(BOOL, BOOL, BOOL), _g(BOOL, INT, INT), _g(BOOL, INT, DOUBLE), _g(BOOL, INT, UINT), _g(BOOL, UINT, UINT),
           _g(BOOL, UINT, DOUBLE), _g(BOOL, UINT, INT), _g(BOOL, DOUBLE, DOUBLE), _g(BOOL, DOUBLE, INT),
           _g(BOOL, DOUBLE, UINT), _g(BOOL, STRING, STRING), _g(BOOL, BYTES, BYTES),
           _g(BOOL, TIMESTAMP, TIMESTAMP), _g(BOOL, DURATION, DURATION)]
    return tuple(out)


def _size() -> tuple[Overload, ...]:
    return (_g(INT, BYTES), _m(INT, BYTES), _g(INT, list_of(A)), _m(INT, list_of(A)), _g(INT, map_of(A, B)),
            _m(INT, map_of(A, B)), _g(INT, STRING), _m(INT, STRING))


STANDARD: dict[str, tuple[Overload, ...]] = {
    "_?_:_": (_g(A, BOOL, A, A),),
    "_&&_": (_g(BOOL, BOOL, BOOL),),
    "_||_": (_g(BOOL, BOOL, BOOL),),
    "!_": (_g(BOOL, BOOL),),
    "@not_strictly_false": (_g(BOOL, BOOL),),
    "_==_": (_g(BOOL, A, A),),
    "_!=_": (_g(BOOL, A, A),),
    "_+_": (_g(BYTES, BYTES, BYTES), _g(DOUBLE, DOUBLE, DOUBLE), _g(DURATION, DURATION, DURATION),
            _g(TIMESTAMP, DURATION, TIMESTAMP), _g(TIMESTAMP, TIMESTAMP, DURATION), _g(INT, INT, INT),
            _g(list_of(A), list_of(A), list_of(A)), _g(STRING, STRING, STRING), _g(UINT, UINT, UINT)),
    "_/_": (_g(DOUBLE, DOUBLE, DOUBLE), _g(INT, INT, INT), _g(UINT, UINT, UINT)),
    "_%_": (_g(INT, INT, INT), _g(UINT, UINT, UINT)),
    "_*_": (_g(DOUBLE, DOUBLE, DOUBLE), _g(INT, INT, INT), _g(UINT, UINT, UINT)),
    "-_": (_g(DOUBLE, DOUBLE), _g(INT, INT)),
    "_-_": (_g(DOUBLE, DOUBLE, DOUBLE), _g(DURATION, DURATION, DURATION), _g(INT, INT, INT),
            _g(TIMESTAMP, TIMESTAMP, DURATION), _g(DURATION, TIMESTAMP, TIMESTAMP), _g(UINT, UINT, UINT)),
    "_<_": _comparisons(), "_<=_": _comparisons(), "_>_": _comparisons(), "_>=_": _comparisons(),
    "_[_]": (_g(A, list_of(A), INT), _g(B, map_of(A, B), A),
             # the optional library's: indexing an optional list or map
             _g(optional_of(A), optional_of(list_of(A)), INT), _g(optional_of(B), optional_of(map_of(A, B)), A)),
    "@in": (_g(BOOL, A, list_of(A)), _g(BOOL, A, map_of(A, B))),
    "size": _size(),
    "type": (_g(type_of(A), A),),
    "bool": (_g(BOOL, BOOL), _g(BOOL, STRING)),
    "bytes": (_g(BYTES, BYTES), _g(BYTES, STRING)),
    "double": (_g(DOUBLE, DOUBLE), _g(DOUBLE, INT), _g(DOUBLE, STRING), _g(DOUBLE, UINT)),
    "dyn": (_g(DYN, A),),
    "int": (_g(INT, INT), _g(INT, UINT), _g(INT, DOUBLE), _g(INT, STRING), _g(INT, DURATION), _g(INT, TIMESTAMP)),
    "uint": (_g(UINT, UINT), _g(UINT, INT), _g(UINT, DOUBLE), _g(UINT, STRING)),
    "string": (_g(STRING, STRING), _g(STRING, BOOL), _g(STRING, INT), _g(STRING, UINT), _g(STRING, DOUBLE),
               _g(STRING, BYTES), _g(STRING, TIMESTAMP), _g(STRING, DURATION)),
    "duration": (_g(DURATION, DURATION), _g(DURATION, STRING)),
    "timestamp": (_g(TIMESTAMP, TIMESTAMP), _g(TIMESTAMP, STRING), _g(TIMESTAMP, INT)),
    "contains": (_m(BOOL, STRING, STRING),),
    "endsWith": (_m(BOOL, STRING, STRING),),
    "startsWith": (_m(BOOL, STRING, STRING),),
    "matches": (_g(BOOL, STRING, STRING), _m(BOOL, STRING, STRING)),
    # the optional library (cel.OptionalTypes)
    "_[?_]": (_g(optional_of(B), map_of(A, B), A), _g(optional_of(B), optional_of(map_of(A, B)), A),
              _g(optional_of(A), list_of(A), INT), _g(optional_of(A), optional_of(list_of(A)), INT)),
    "hasValue": (_m(BOOL, optional_of(A)),),
    "value": (_m(A, optional_of(A)),),
    "orValue": (_m(A, optional_of(A), A),),
    "or": (_m(optional_of(A), optional_of(A), optional_of(A)),),
    "optional.of": (_g(optional_of(A), A),),
    "optional.ofNonZeroValue": (_g(optional_of(A), A),),
    "optional.none": (_g(optional_of(DYN)),),
}
"""cel-go's standard declarations (common/stdlib/standard.go) in their order, and the optional library's."""

KUBERNETES: dict[str, tuple[Overload, ...]] = {
    # cel-go ext.Strings (version 2), as the Kubernetes base environment declares it
    "charAt": (_m(STRING, STRING, INT),),
    "indexOf": (_m(INT, STRING, STRING), _m(INT, STRING, STRING, INT),
                _m(INT, list_of(A), A)),  # the last: Kubernetes' lists library
    "lastIndexOf": (_m(INT, STRING, STRING), _m(INT, STRING, STRING, INT), _m(INT, list_of(A), A)),
    "lowerAscii": (_m(STRING, STRING),),
    "upperAscii": (_m(STRING, STRING),),
    "replace": (_m(STRING, STRING, STRING, STRING), _m(STRING, STRING, STRING, STRING, INT)),
    "split": (_m(list_of(STRING), STRING, STRING), _m(list_of(STRING), STRING, STRING, INT)),
    "substring": (_m(STRING, STRING, INT), _m(STRING, STRING, INT, INT)),
    "trim": (_m(STRING, STRING),),
    "join": (_m(STRING, list_of(STRING)), _m(STRING, list_of(STRING), STRING)),
    "strings.quote": (_g(STRING, STRING),),
    # Kubernetes' regex library
    "find": (_m(STRING, STRING, STRING),),
    "findAll": (_m(list_of(STRING), STRING, STRING), _m(list_of(STRING), STRING, STRING, INT)),
    # Kubernetes' lists library
    "isSorted": (_m(BOOL, list_of(A)),),
}
"""The Kubernetes base environment's functions typed here (k8s.io/apiserver pkg/cel/library, cel-go ext)."""


TYPE_IDENTS: dict[str, Type] = {
    "int": type_of(INT), "uint": type_of(UINT), "double": type_of(DOUBLE), "bool": type_of(BOOL),
    "string": type_of(STRING), "bytes": type_of(BYTES), "null_type": type_of(NULL), "dyn": type_of(DYN),
    "list": type_of(list_of(DYN)), "map": type_of(map_of(DYN, DYN)), "type": type_of(Type("type", "type")),
    "google.protobuf.Timestamp": type_of(TIMESTAMP), "google.protobuf.Duration": type_of(DURATION),
    "optional_type": type_of(optional_of(DYN)),
}
"""The type names every environment declares as identifiers (`type(x) == string`)."""


@dataclass(frozen=True)
class Env:
    """What an expression may reference: variables with their types, the message types' fields
    (by type name), and the functions (name -> overloads; a name not here is typed dyn)."""

    variables: Mapping[str, Type]
    structs: Mapping[str, Mapping[str, Type]] = field(default_factory=dict)
    functions: Mapping[str, tuple[Overload, ...]] = field(default_factory=lambda: {**STANDARD, **KUBERNETES})


# --- the checker ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Issue:
    offset: int
    message: str


class _Checker:
    def __init__(self, env: Env) -> None:
        self.env = env
        self.m = _Mapping()
        self.issues: list[Issue] = []
        self.scopes: list[dict[str, Type]] = []
        self.fresh = 0
        self.types: dict[int, Type] = {}  # id(node) -> its type as checked (for the AST validators)

    def error(self, offset: int, message: str) -> None:
        self.issues.append(Issue(offset, message))

    def lookup(self, name: str) -> Type | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        found = self.env.variables.get(name.removeprefix("."))
        return found if found is not None else TYPE_IDENTS.get(name.removeprefix("."))

    def new_var(self) -> Type:
        self.fresh += 1
        return Type("param", f"_var{self.fresh - 1}")

    def sub(self, t: Type) -> Type:
        return _substitute(self.m, t, False)

    def assignable(self, t1: Type, t2: Type) -> bool:
        m = self.m.copy()
        if _assignable(m, t1, t2):
            self.m = m
            return True
        return False

    def check(self, e: S.Expr) -> Type:
        t = self._check(e)
        self.types[id(e)] = t
        return t

    def _check(self, e: S.Expr) -> Type:
        if isinstance(e, S.Literal):
            return Type(e.type)
        if isinstance(e, S.Ident):
            t = self.lookup(e.name)
            if t is None:
                self.error(e.offset, f"undeclared reference to '{e.name.removeprefix('.')}' (in container '')")
                return ERROR
            return t
        if isinstance(e, S.Select):
            return self.select(e)
        if isinstance(e, S.Call):
            return self.call(e)
        if isinstance(e, S.ListExpr):
            return self.list_(e)
        if isinstance(e, S.MapExpr):
            return self.map_(e)
        if isinstance(e, S.Macro):
            return self.macro(e)
        if isinstance(e, S.StructExpr):
            for _name, value, _opt, _off in e.fields:
                self.check(value)
            return DYN  # message construction: no message types are declared for admission
        return DYN

    def select(self, e: S.Select) -> Type:
        if not e.test_only and not e.optional and isinstance(e.operand, S.Ident) and \
                self.lookup(e.operand.name) is None and self.lookup(f"{e.operand.name}.{e.field}") is not None:
            return self.lookup(f"{e.operand.name}.{e.field}") or DYN
        result = self.select_field(e.offset, e.operand, e.field, e.optional)
        return BOOL if e.test_only else self.sub(result)

    def select_field(self, offset: int, operand: S.Expr, name: str, optional: bool) -> Type:
        operand_type = self.sub(self.check(operand))
        target, was_optional = operand_type, False
        if operand_type.kind == "opaque" and operand_type.name == "optional_type":
            target, was_optional = operand_type.params[0], True
        result = ERROR
        if target.kind == "map":
            result = target.params[1]
        elif target.kind == "struct":
            fields = self.env.structs.get(target.name)
            if fields is None:
                result = DYN
            elif name in fields:
                result = fields[name]
            else:
                self.error(offset, f"undefined field '{name}'")
        elif target.kind == "param":
            self.assignable(DYN, target)
            result = DYN
        else:
            if not _dyn_or_error(target):
                self.error(offset, f"type '{format_type(target)}' does not support field selection")
            result = DYN
        return optional_of(result) if (was_optional or optional) else result

    def call(self, e: S.Call) -> Type:
        if e.function in ("_&&_", "_||_"):
            result = BOOL
            for arg in e.args:
                t = self.check(arg)
                if not self.assignable(t, BOOL):
                    self.error(arg.offset, f"expected type 'bool' but found '{format_type(self.sub(t))}'")
                    result = ERROR
            return result
        arg_types = [self.check(a) for a in e.args]
        if e.target is not None:
            qualified = _qualified_name(e.target)
            if qualified is not None and self.lookup(qualified.split(".")[0]) is None:
                # a namespaced function (`sets.contains(...)`, `strings.quote(...)`): typed when declared here
                return self.resolve(e, f"{qualified}.{e.function}", None, arg_types)
            target_type = self.check(e.target)
            return self.resolve(e, e.function, target_type, arg_types)
        return self.resolve(e, e.function, None, arg_types)

    def resolve(self, e: S.Expr, name: str, target: Type | None, args: list[Type]) -> Type:
        overloads = self.env.functions.get(name)
        if overloads is None:
            return DYN  # a function this checker does not type: nothing to say
        types = ([target] if target is not None else []) + args
        result: Type | None = None
        for ov in overloads:
            if ov.member != (target is not None):
                continue
            fresh = {p.name: self.new_var() for p in _params_in(ov)}
            params = [_rename(t, fresh) for t in ov.args]
            m = self.m.copy()
            if _assignable_list(m, types, params):
                self.m = m
                res = _substitute(self.m, _rename(ov.result, fresh), False)
                if result is None:
                    result = res
                elif result.kind != "dyn" and res != result:
                    result = DYN
        if result is None:
            shown = [_substitute(self.m, t, True) for t in types]
            self.error(e.offset, f"found no matching overload for '{name}' applied to "
                                 f"'{_signature(shown, target is not None)}'")
            return ERROR
        return result

    def list_(self, e: S.ListExpr) -> Type:
        elem: Type | None = None
        for i, item in enumerate(e.elements):
            t = self.check(item)
            if i in e.optional:
                if t.kind == "opaque" and t.name == "optional_type":
                    t = t.params[0]
                elif t.kind != "dyn":
                    self.error(item.offset, f"expected type '{format_type(optional_of(t))}' but found "
                                            f"'{format_type(t)}'")
            elem = self.join(item, elem, t)
        return list_of(elem if elem is not None else self.new_var())

    def map_(self, e: S.MapExpr) -> Type:
        key: Type | None = None
        value: Type | None = None
        for k, v, opt in e.entries:
            key = self.join(k, key, self.check(k))
            t = self.check(v)
            if opt:
                if t.kind == "opaque" and t.name == "optional_type":
                    t = t.params[0]
                elif t.kind != "dyn":
                    self.error(v.offset, f"expected type '{format_type(optional_of(t))}' but found '{format_type(t)}'")
            value = self.join(v, value, t)
        if key is None or value is None:
            return map_of(self.new_var(), self.new_var())
        return map_of(key, value)

    def join(self, e: S.Expr, previous: Type | None, current: Type) -> Type:
        if previous is None:
            return current
        if self.assignable(previous, current):
            return _most_general(previous, current)
        return DYN  # cel-go's default aggregate literal element type; the homogeneity is a validator's

    def macro(self, e: S.Macro) -> Type:
        range_type = self.sub(self.check(e.target))
        if e.name in ("optMap", "optFlatMap"):
            return self.opt_macro(e, range_type)
        if range_type.kind == "list":
            var, var2 = (INT, range_type.params[0]) if e.var2 else (range_type.params[0], DYN)
        elif range_type.kind == "map":
            var, var2 = range_type.params
        elif range_type.kind in ("dyn", "error", "param"):
            self.assignable(DYN, range_type)
            var, var2 = DYN, DYN
        else:
            self.error(e.target.offset, f"expression of type '{format_type(range_type)}' cannot be range of a "
                                        "comprehension (must be list, map, or dynamic)")
            var, var2 = ERROR, ERROR
        self.scopes.append({e.var: var, **({e.var2: var2} if e.var2 else {})})
        try:
            return self.comprehension(e, var, range_type)
        finally:
            self.scopes.pop()

    def comprehension(self, e: S.Macro, var: Type, range_type: Type) -> Type:
        """The result type of the comprehension the macro expands to; issues as its expansion's."""
        if e.name in ("all", "exists"):
            t = self.check(e.args[0])
            if not self.assignable(t, BOOL):
                self.error(e.args[0].offset, f"expected type 'bool' but found '{format_type(self.sub(t))}'")
            return BOOL
        if e.name == "exists_one":
            self.conditional(e.offset, self.check(e.args[0]), INT, INT)
            return BOOL
        if e.name == "filter":
            accu = list_of(var)
            self.conditional(e.offset, self.check(e.args[0]), accu, accu)
            return self.sub(accu)
        if e.name in ("map", "transformList"):
            if len(e.args) == 2:  # with a filter
                cond = self.check(e.args[0])
                accu = list_of(self.check(e.args[1]))
                self.conditional(e.offset, cond, accu, accu)
                return self.sub(accu)
            return self.sub(list_of(self.check(e.args[0])))
        if e.name == "transformMap":
            key = range_type.params[0] if range_type.kind == "map" else DYN
            if len(e.args) == 2:
                cond = self.check(e.args[0])
                accu = map_of(key, self.check(e.args[1]))
                self.conditional(e.offset, cond, accu, accu)
                return self.sub(accu)
            return self.sub(map_of(key, self.check(e.args[0])))
        for arg in e.args:  # transformMapEntry: the entry map's types are the body's
            self.check(arg)
        return DYN

    def opt_macro(self, e: S.Macro, target: Type) -> Type:
        """optMap/optFlatMap: `opt.optMap(v, expr)` is `opt.hasValue() ? optional.of(expr[v/opt.value()]) :
        optional.none()`."""
        inner = target.params[0] if target.kind == "opaque" and target.name == "optional_type" else DYN
        if target.kind != "opaque" and not _dyn_or_error(target) and target.kind != "param":
            self.error(e.offset, f"found no matching overload for 'hasValue' applied to '{format_type(target)}.()'")
            return ERROR
        self.scopes.append({e.var: inner})
        try:
            body = self.check(e.args[0])
        finally:
            self.scopes.pop()
        if e.name == "optMap":
            return optional_of(self.sub(body))
        return self.sub(body) if body.kind == "opaque" else DYN

    def conditional(self, offset: int, cond: Type, yes: Type, no: Type) -> None:
        self.resolve(S.Expr(offset), "_?_:_", None, [cond, yes, no])


def _params_in(ov: Overload) -> set[Type]:
    out: set[Type] = set()

    def walk(t: Type) -> None:
        if t.kind == "param":
            out.add(t)
        for p in t.params:
            walk(p)
    for t in (*ov.args, ov.result):
        walk(t)
    return out


def _rename(t: Type, fresh: Mapping[str, Type]) -> Type:
    if t.kind == "param":
        return fresh.get(t.name, t)
    if t.params:
        return Type(t.kind, t.name, tuple(_rename(p, fresh) for p in t.params))
    return t


def _signature(types: Sequence[Type], member: bool) -> str:
    """checker's formatFunctionDeclType without a result: `(int, string)`, `string.(int)`."""
    head = ""
    if member:
        head, types = format_type(types[0]) + ".", types[1:]
    return head + "(" + ", ".join(format_type(t) for t in types) + ")"


def _qualified_name(e: S.Expr) -> str | None:
    if isinstance(e, S.Ident):
        return e.name
    if isinstance(e, S.Select) and not e.optional and not e.test_only:
        head = _qualified_name(e.operand)
        return None if head is None else f"{head}.{e.field}"
    return None


@dataclass(frozen=True)
class Result:
    """The output type (substituted, type parameters as dyn) and the issues, sorted by position."""

    type: Type
    issues: tuple[Issue, ...]


def check(expression: str | S.Expr, env: Env) -> Result:
    """Type-check `expression` in `env`, then (when the check found nothing) run the AST validator Kubernetes'
    base environment configures that this module knows (homogeneous aggregate literals); S.ParseError when it
    does not parse."""
    tree = S.parse(expression) if isinstance(expression, str) else expression
    checker = _Checker(env)
    t = checker.check(tree)
    if not checker.issues:
        _homogeneous(tree, checker, exempt=False)
    issues = sorted(checker.issues, key=lambda i: i.offset)
    return Result(_substitute(checker.m, t, True), tuple(issues))


HOMOGENEITY_EXEMPT = frozenset({"format"})
"""Calls whose list and map literals may mix types (cel-go ext.Strings configures `format`)."""


def _homogeneous(e: S.Expr, c: _Checker, *, exempt: bool) -> None:
    """cel.ValidateHomogeneousAggregateLiterals: a list literal's elements (the first mismatch) and a map
    literal's keys and values (every mismatch) must be of one type."""
    def typed(node: S.Expr) -> Type:
        return _substitute(c.m, c.types.get(id(node), DYN), False)

    def unwrap(t: Type, optional: bool) -> Type:
        return t.params[0] if optional and t.params else t

    if isinstance(e, S.ListExpr) and not exempt:
        first: Type | None = None
        for i, item in enumerate(e.elements):
            t = unwrap(typed(item), i in e.optional)
            if first is None:
                first = t
            elif t != first:
                c.error(item.offset, f"expected type '{format_type(first)}' but found '{format_type(t)}'")
                break
    if isinstance(e, S.MapExpr) and not exempt and e.entries:
        key0, value0 = typed(e.entries[0][0]), unwrap(typed(e.entries[0][1]), e.entries[0][2])
        for k, v, opt in e.entries[1:]:
            kt, vt = typed(k), unwrap(typed(v), opt)
            if kt != key0:
                c.error(k.offset, f"expected type '{format_type(key0)}' but found '{format_type(kt)}'")
            if vt != value0:
                c.error(v.offset, f"expected type '{format_type(value0)}' but found '{format_type(vt)}'")
    inner = exempt or (isinstance(e, S.Call) and e.function in HOMOGENEITY_EXEMPT)
    for child in _children(e):
        _homogeneous(child, c, exempt=inner)


def _children(e: S.Expr) -> list[S.Expr]:
    if isinstance(e, S.Select):
        return [e.operand]
    if isinstance(e, S.Call):
        return [*([e.target] if e.target is not None else []), *e.args]
    if isinstance(e, S.ListExpr):
        return list(e.elements)
    if isinstance(e, S.MapExpr):
        return [x for k, v, _ in e.entries for x in (k, v)]
    if isinstance(e, S.StructExpr):
        return [v for _, v, _, _ in e.fields]
    if isinstance(e, S.Macro):
        return [e.target, *e.args]
    return []


def issues_text(expression: str, issues: Iterable[Issue]) -> str:
    """cel-go's Issues.String(): each `ERROR: <input>:L:C: msg` with its source line and caret, joined by newlines."""
    out = []
    for issue in issues:
        before = expression[:issue.offset]
        line = before.count("\n") + 1
        column = issue.offset - (before.rfind("\n") + 1)
        source = expression.split("\n")[line - 1]
        out.append(f"ERROR: <input>:{line}:{column + 1}: {issue.message}\n | {source}\n | {'.' * column}^")
    return "\n".join(out)
