"""Rewrite a CEL expression's comparisons so version values compare as Kubernetes's semver type does.

Why: the CEL package nodeagent evaluates with has heterogeneous equality built in and no hook
for operators on custom types, so a version (carried as bytes, see selectors.py) would compare as
bytes: `v == "1.0.0"` false, `v < semver("2.0.0")` byte order. Upstream (cel-go with
k8s.io/apiserver/pkg/cel's Semver) differs: Semver.Equal with anything but a Semver is the
runtime error "no such overload" (so `v == "1.0.0"` fails, while `"1.0.0" == v` is false and
`v != "1.0.0"` is true: `!=` is `Equal(...) != true`), two versions are equal when their
precedence is (build metadata ignored), and Semver has no ordering (`<` on it is "no such
overload: _<_"; ordering is compareTo/isGreaterThan/isLessThan).

How: a small recursive-descent parser over CEL's grammar re-emits the text with every
relation `a OP b` (OP one of == != < <= > >=) turned into
`(__nodeagent_vany(a, b) ? __nodeagent_vrel("OP", a, b) : (a) OP (b))`, so values that are not
versions keep CEL's own semantics. The rewritten program runs only for devices that carry a
version attribute or expressions that build one with semver(). Text the parser does not know
gives None: the caller keeps the original program. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

ANY = "__nodeagent_vany"
REL = "__nodeagent_vrel"

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>[rRbB]{0,2}(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
    | (?P<num>0[xX][0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)
    | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>==|!=|<=|>=|&&|\|\||\?\.|\[\?|[-+*/%!<>?:.,()\[\]{}])
    )""",
    re.VERBOSE,
)
_RELOPS = ("==", "!=", "<", "<=", ">", ">=")


class _Unparsable(Exception):
    """Text outside the grammar this module knows."""


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _Unparsable(text[pos:])
        out.append(m.group(m.lastgroup or "op"))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.toks = tokens
        self.i = 0
        self.changed = False

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if not tok or (expected is not None and tok != expected):
            raise _Unparsable(tok)
        self.i += 1
        return tok

    def expr(self) -> str:
        cond = self.binary(0)
        if self.peek() == "?":
            self.take()
            yes = self.binary(0)
            self.take(":")
            return f"{cond} ? {yes} : {self.expr()}"
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (("||",), ("&&",), (*_RELOPS, "in"), ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> str:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()
            right = self.binary(level + 1)
            if op in _RELOPS:
                self.changed = True
                left = f'({ANY}({left}, {right}) ? {REL}("{op}", {left}, {right}) : ({left}) {op} ({right}))'
            else:
                left = f"{left} {op} {right}"
        return left

    def unary(self) -> str:
        if self.peek() in ("!", "-"):
            op = self.take()
            return op + self.unary()
        return self.member()

    def member(self) -> str:
        out = self.primary()
        while self.peek() in (".", "?.", "[", "[?"):
            tok = self.take()
            if tok in (".", "?."):
                out += tok + self.take()
                if self.peek() == "(":
                    out += self.args("(", ")")
            else:
                out += tok + self.expr() + self.take("]")
        return out

    def args(self, open_: str, close: str, entries: bool = False) -> str:
        self.take(open_)
        parts: list[str] = []
        while self.peek() != close:
            if entries and self.peek() == "?":
                self.take()
                key = "?" + self.expr()
            else:
                key = self.expr()
            if entries:
                self.take(":")
                key = f"{key}: {self.expr()}"
            parts.append(key)
            if self.peek() != ",":
                break
            self.take(",")
        self.take(close)
        return open_ + ", ".join(parts) + close

    def primary(self) -> str:
        tok = self.peek()
        if tok == "(":
            self.take()
            inner = self.expr()
            self.take(")")
            return f"({inner})"
        if tok == "[":
            return self.args("[", "]")
        if tok == "{":
            return self.args("{", "}", entries=True)
        if tok == ".":
            self.take()
            return "." + self.primary()
        if not tok or tok in _RELOPS or tok in ("&&", "||", "?", ":", ",", ")", "]", "}"):
            raise _Unparsable(tok)
        self.take()
        if tok[:1].isalpha() or tok[:1] == "_":
            if self.peek() == "(":
                return tok + self.args("(", ")")
            if self.peek() == "{" and tok[:1].isupper():  # message construction: not in DRA selectors
                raise _Unparsable(tok)
        return tok


def rewrite(expression: str) -> str | None:
    """The expression with version-aware relations, or None when there is no relation to
    rewrite or the text is outside the grammar handled here."""
    try:
        parser = _Parser(_tokens(expression))
        out = parser.expr()
        if parser.i != len(parser.toks):
            return None
    except _Unparsable:
        return None
    return out if parser.changed else None


def functions(equal: Callable[[bytes, bytes], bool]) -> Mapping[str, Callable[..., Any]]:
    """The two functions the rewritten text calls; `equal` compares two versions (precedence)."""

    def any_version(a: object, b: object) -> bool:
        return isinstance(a, bytes) or isinstance(b, bytes)

    def relation(op: str, a: object, b: object) -> bool:
        if op in ("==", "!="):
            same = isinstance(a, bytes) and isinstance(b, bytes) and equal(a, b)
            if op == "==" and isinstance(a, bytes) and not isinstance(b, bytes):
                raise TypeError("no such overload")  # Semver.Equal: MaybeNoSuchOverloadErr
            return same if op == "==" else not same
        if isinstance(a, bytes):
            raise TypeError(f"no such overload: _{op}_")  # Semver has no Comparer trait
        raise TypeError("no such overload")  # e.g. String.Compare(Semver)

    return {ANY: any_version, REL: relation}
