"""A CEL parser that keeps source offsets: the syntax tree the type checker (checker.py) walks.

Why its own parser: the CEL package the project evaluates with (common-expression-language) has no
type checker and exposes no syntax tree, and kube-controller-manager's type checking
(status.typeChecking of a ValidatingAdmissionPolicy) reports each issue at the place cel-go's parser
gives the node: an identifier or literal at its first character, a field selection at its `.`, a call
at its `(`, an operator at its operator token, an index at its `[`, a list or map at its bracket, a
macro's generated nodes at the macro call's `(` (cel-go parser/parser.go, helper.id(ctx.GetOp())).

The grammar is cel-go's (parser/gen/CEL.g4): conditional, `||`, `&&`, relations (`in` included),
additive and multiplicative operators, `!`/`-` prefixes, member selection, calls, indexing, optional
selection `.?f` and `[?k]`, list/map literals (with `?` optional entries), message construction, and
the macros has/all/exists/exists_one/map (2 and 3 arguments)/filter kept as nodes of their own
(the checker types them as cel-go types the comprehensions they expand to). Anything the parser cannot
read raises ParseError: callers that only type-check expressions the API server already compiled treat
that as "nothing to say". Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                      "loop", "package", "namespace", "return", "var", "void", "while"})
MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"})


class ParseError(Exception):
    """Text the parser cannot read (the API server's own compile reports such text)."""


@dataclass(frozen=True, eq=False)
class Expr:
    """A node; `offset` is where cel-go locates it (see the module docstring)."""

    offset: int


@dataclass(frozen=True, eq=False)
class Literal(Expr):
    type: str  # int uint double string bytes bool null
    value: object = None


@dataclass(frozen=True, eq=False)
class Ident(Expr):
    name: str


@dataclass(frozen=True, eq=False)
class Select(Expr):
    operand: Expr
    field: str
    optional: bool = False  # x.?f
    test_only: bool = False  # has(x.f)


@dataclass(frozen=True, eq=False)
class Call(Expr):
    function: str  # operators are cel-go's names: _+_, _[_], !_, -_, _?_:_, @in, _[?_]
    args: tuple[Expr, ...]
    target: Expr | None = None


@dataclass(frozen=True, eq=False)
class ListExpr(Expr):
    elements: tuple[Expr, ...]
    optional: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True, eq=False)
class MapExpr(Expr):
    entries: tuple[tuple[Expr, Expr, bool], ...]  # key, value, optional


@dataclass(frozen=True, eq=False)
class StructExpr(Expr):
    type_name: str
    fields: tuple[tuple[str, Expr, bool, int], ...]  # name, value, optional, offset


@dataclass(frozen=True, eq=False)
class Macro(Expr):
    """A comprehension macro: `target.NAME(var, [var2,] body...)`; offset is the call's `(`."""

    name: str  # all exists exists_one map filter transformList transformMap transformMapEntry optMap optFlatMap
    target: Expr
    var: str
    args: tuple[Expr, ...]  # after the variables: map with a filter is (filter, transform)
    var2: str = ""  # the second variable of a two-variable comprehension


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n\f]+|//[^\n]*)
  | (?P<string>[rR]?[bB]?[rR]?(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''
                                |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\.\?|\[\?|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:.,\[\](){}])
    """, re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    offset: int


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ParseError(f"token recognition error at offset {pos}")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(_Tok(kind, m.group(0), pos))
        pos = m.end()
    out.append(_Tok("eof", "", len(text)))
    return out


def parse(text: str) -> Expr:
    """The syntax tree of `text`; ParseError when it is not CEL this parser reads."""
    return _Parser(_tokens(text)).parse()


class _Parser:
    def __init__(self, tokens: list[_Tok]) -> None:
        self.toks = tokens
        self.i = 0

    def peek(self, ahead: int = 0) -> _Tok:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, text: str) -> _Tok | None:
        tok = self.peek()
        if tok.kind in ("op", "ident") and tok.text == text:
            return self.take()
        return None

    def expect(self, text: str) -> _Tok:
        tok = self.accept(text)
        if tok is None:
            raise ParseError(f"expected {text!r} at offset {self.peek().offset}")
        return tok

    def parse(self) -> Expr:
        expr = self.expr()
        if self.peek().kind != "eof":
            raise ParseError(f"unexpected {self.peek().text!r} at offset {self.peek().offset}")
        return expr

    def expr(self) -> Expr:
        cond = self.or_()
        q = self.accept("?")
        if q is None:
            return cond
        yes = self.or_()
        self.expect(":")
        no = self.expr()
        return Call(q.offset, "_?_:_", (cond, yes, no))

    def or_(self) -> Expr:
        left = self.and_()
        while (op := self.accept("||")) is not None:
            left = Call(op.offset, "_||_", (left, self.and_()))
        return left

    def and_(self) -> Expr:
        left = self.relation()
        while (op := self.accept("&&")) is not None:
            left = Call(op.offset, "_&&_", (left, self.relation()))
        return left

    _RELATIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}

    def relation(self) -> Expr:
        left = self.additive()
        while True:
            tok = self.peek()
            name = self._RELATIONS.get(tok.text) if tok.kind in ("op", "ident") else None
            if name is None:
                return left
            self.take()
            left = Call(tok.offset, name, (left, self.additive()))

    def additive(self) -> Expr:
        left = self.multiplicative()
        while self.peek().kind == "op" and self.peek().text in ("+", "-"):
            tok = self.take()
            left = Call(tok.offset, "_+_" if tok.text == "+" else "_-_", (left, self.multiplicative()))
        return left

    def multiplicative(self) -> Expr:
        left = self.unary()
        names = {"*": "_*_", "/": "_/_", "%": "_%_"}
        while self.peek().kind == "op" and self.peek().text in names:
            tok = self.take()
            left = Call(tok.offset, names[tok.text], (left, self.unary()))
        return left

    def unary(self) -> Expr:
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("!", "-"):
            ops = []
            while self.peek().kind == "op" and self.peek().text == tok.text:
                ops.append(self.take())
            if tok.text == "-" and len(ops) == 1 and self.peek().kind == "number" and \
                    not self.peek().text.lower().endswith("u"):
                number = self._literal(self.take())  # `-1` is one int literal in cel-go's grammar
                member = self.member_tail(Literal(tok.offset, number.type, number.value))
                return member
            member = self.member()
            if len(ops) % 2 == 0:
                return member
            return Call(tok.offset, "!_" if tok.text == "!" else "-_", (member,))
        return self.member()

    def member(self) -> Expr:
        return self.member_tail(self.primary())

    def member_tail(self, expr: Expr) -> Expr:
        while True:
            tok = self.peek()
            if tok.kind != "op":
                return expr
            if tok.text in (".", ".?"):
                self.take()
                name = self.take()
                if name.kind != "ident":
                    raise ParseError(f"expected a field name at offset {name.offset}")
                if tok.text == "." and self.peek().text == "(" and self.peek().kind == "op":
                    open_ = self.take()
                    args = self.args(")")
                    expr = self._receiver_call(open_.offset, name.text, expr, args)
                    continue
                expr = Select(tok.offset, expr, name.text, optional=tok.text == ".?")
            elif tok.text in ("[", "[?"):
                self.take()
                index = self.expr()
                self.expect("]")
                expr = Call(tok.offset, "_[?_]" if tok.text == "[?" else "_[_]", (expr, index))
            elif tok.text == "{" and isinstance(expr, (Ident, Select)) and _qualified(expr) is not None:
                expr = self.struct(_qualified(expr) or "")
            else:
                return expr

    def args(self, close: str) -> tuple[Expr, ...]:
        out: list[Expr] = []
        if self.accept(close):
            return ()
        while True:
            out.append(self.expr())
            if self.accept(close):
                return tuple(out)
            self.expect(",")

    def primary(self) -> Expr:
        tok = self.take()
        if tok.kind == "op" and tok.text == ".":  # a leading dot: a name in the root container
            name = self.take()
            if name.kind != "ident":
                raise ParseError(f"expected an identifier at offset {name.offset}")
            tok = _Tok("ident", "." + name.text, name.offset)
        if tok.kind == "ident":
            if tok.text in ("true", "false"):
                return Literal(tok.offset, "bool", tok.text == "true")
            if tok.text == "null":
                return Literal(tok.offset, "null", None)
            if tok.text.lstrip(".") in RESERVED or tok.text == "in":
                raise ParseError(f"reserved identifier: {tok.text}")
            if self.peek().kind == "op" and self.peek().text == "(":
                open_ = self.take()
                args = self.args(")")
                return self._global_call(open_.offset, tok.text, args)
            return Ident(tok.offset, tok.text)
        if tok.kind in ("number", "string"):
            return self._literal(tok)
        if tok.kind == "op" and tok.text == "(":
            inner = self.expr()
            self.expect(")")
            return inner
        if tok.kind == "op" and tok.text == "[":
            return self.list_(tok.offset)
        if tok.kind == "op" and tok.text == "{":
            return self.map_(tok.offset)
        raise ParseError(f"unexpected {tok.text!r} at offset {tok.offset}")

    def list_(self, offset: int) -> Expr:
        elements: list[Expr] = []
        optional: set[int] = set()
        while not self.accept("]"):
            if self.accept("?"):
                optional.add(len(elements))
            elements.append(self.expr())
            if not self.accept(","):
                self.expect("]")
                break
        return ListExpr(offset, tuple(elements), frozenset(optional))

    def map_(self, offset: int) -> Expr:
        entries: list[tuple[Expr, Expr, bool]] = []
        while not self.accept("}"):
            opt = self.accept("?") is not None
            key = self.expr()
            self.expect(":")
            entries.append((key, self.expr(), opt))
            if not self.accept(","):
                self.expect("}")
                break
        return MapExpr(offset, tuple(entries))

    def struct(self, type_name: str) -> Expr:
        open_ = self.expect("{")
        fields: list[tuple[str, Expr, bool, int]] = []
        while not self.accept("}"):
            opt = self.accept("?") is not None
            name = self.take()
            if name.kind != "ident":
                raise ParseError(f"expected a field name at offset {name.offset}")
            colon = self.expect(":")
            fields.append((name.text, self.expr(), opt, colon.offset))
            if not self.accept(","):
                self.expect("}")
                break
        return StructExpr(open_.offset, type_name, tuple(fields))

    def _literal(self, tok: _Tok) -> Literal:
        text = tok.text
        if tok.kind == "number":
            low = text.lower()
            if low.startswith("0x"):
                return Literal(tok.offset, "uint" if low.endswith("u") else "int", int(text.rstrip("uU"), 16))
            if low.endswith("u"):
                return Literal(tok.offset, "uint", int(text[:-1]))
            if any(c in low for c in ".e"):
                return Literal(tok.offset, "double", float(text))
            return Literal(tok.offset, "int", int(text))
        prefix = text[:len(text) - len(text.lstrip("rRbB"))]
        kind = "bytes" if "b" in prefix.lower() else "string"
        return Literal(tok.offset, kind, text[len(prefix):])

    def _global_call(self, offset: int, name: str, args: tuple[Expr, ...]) -> Expr:
        if name == "has" and len(args) == 1:
            arg = args[0]
            if not isinstance(arg, Select) or arg.optional:
                raise ParseError("invalid argument to has() macro")
            return Select(offset, arg.operand, arg.field, test_only=True)
        return Call(offset, name, args)

    def _receiver_call(self, offset: int, name: str, target: Expr, args: tuple[Expr, ...]) -> Expr:
        arity = _MACRO_ARITY.get(name)
        if arity is not None and len(args) in arity:
            two = name in _TWO_VARIABLES or (len(args) == 3 and name in ("all", "exists", "exists_one"))
            count = 2 if two else 1
            variables = []
            for arg in args[:count]:
                if not isinstance(arg, Ident):
                    raise ParseError("argument must be a simple name")
                variables.append(arg.name)
            return Macro(offset, name, target, variables[0], args[count:], variables[1] if two else "")
        return Call(offset, name, args, target)


_MACRO_ARITY = {"all": (2, 3), "exists": (2, 3), "exists_one": (2, 3), "filter": (2,), "map": (2, 3),
                "transformList": (3, 4), "transformMap": (3, 4), "transformMapEntry": (3, 4), "optMap": (2,),
                "optFlatMap": (2,)}
"""Receiver macros and their argument counts: cel-go's standard macros, ext.TwoVarComprehensions and
the optional library's optMap/optFlatMap (all in Kubernetes' base environment)."""
_TWO_VARIABLES = frozenset({"transformList", "transformMap", "transformMapEntry"})


def _qualified(expr: Expr) -> str | None:
    """`a.b.c` as a dotted name (a message type name before `{`), else None."""
    if isinstance(expr, Ident):
        return expr.name
    if isinstance(expr, Select) and not expr.optional and not expr.test_only:
        head = _qualified(expr.operand)
        return None if head is None else f"{head}.{expr.field}"
    return None
