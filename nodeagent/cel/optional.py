"""CEL's optional selection (`x.?f`, `m[?k]`) rewritten into syntax the common-expression-language
package parses, for the forms Kubernetes policies use.

Why: kube-apiserver's CEL environment has the optional library, and policies written for it use
it (dra-example-driver's chart: `request.userInfo.extra[?'k'][0].orValue('')`,
`(...).spec.?nodeName.orValue("")`); the package's parser refuses `.?` and `[?`. An optional
selection followed by the rest of its chain and `.orValue(d)` or `.hasValue()` is rewritten:
  R.?f REST.orValue(D)   ->  (has(R.f) ? R.f REST : D)
  R[?K] REST.orValue(D)  ->  ((K) in R ? R[K] REST : D)
  R.?f.hasValue()        ->  has(R.f)
  R[?K].hasValue()       ->  ((K) in R)
(R is evaluated twice; evaluation has no side effects.) Any other use of an optional value is left
as it is, and refused by the parser as before. Pure: text in, text out.
"""

from __future__ import annotations

import re

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")


def _blank(text: str) -> str:
    return _STRING.sub(lambda m: " " * len(m.group(0)), text)


def _close(blank: str, start: int) -> int:
    """The index after the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(blank)):
        if blank[i] in "([{":
            depth += 1
        elif blank[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _open(blank: str, end: int) -> int:
    """The index of the bracket that opens the one closing at `end` (blank[end] is the closer)."""
    depth = 0
    for i in range(end, -1, -1):
        if blank[i] in ")]}":
            depth += 1
        elif blank[i] in "([{":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _receiver_start(blank: str, end: int) -> int:
    """The start of the primary chain that ends just before `end` (identifiers, `.f`, `[...]`, `(...)`)."""
    i = end - 1
    while i >= 0:
        ch = blank[i]
        if ch in ")]":
            i = _open(blank, i) - 1
            if i + 1 < 0:
                return -1
            # a call's name, or an index's receiver: keep going left
            continue
        if ch.isalnum() or ch == "_":
            while i >= 0 and (blank[i].isalnum() or blank[i] == "_"):
                i -= 1
            if i >= 0 and blank[i] == ".":
                i -= 1
                continue
            return i + 1
        if ch == ".":
            i -= 1
            continue
        return i + 1
    return 0


def rewrite(expression: str) -> str | None:
    """The expression with its optional selections rewritten, or None when it has none (or a form
    this does not rewrite)."""
    text = expression
    changed = False
    for _ in range(32):
        blank = _blank(text)
        m = re.search(r"\.\?|\[\?", blank)
        if m is None:
            return text if changed else None
        out = _rewrite_one(text, blank, m.start())
        if out is None:
            return None
        text, changed = out, True
    return None


def _rewrite_one(text: str, blank: str, at: int) -> str | None:
    start = _receiver_start(blank, at)
    if start < 0 or start == at:
        return None
    receiver = text[start:at]
    if blank[at] == ".":
        m = _IDENT.match(blank, at + 2)
        if m is None:
            return None
        name = m.group(0)
        present, value = f"has({receiver}.{name})", f"{receiver}.{name}"
        pos = m.end()
    else:
        close = _close(blank, at)
        if close < 0:
            return None
        key = text[at + 2:close - 1]
        present, value = f"(({key}) in {receiver})", f"{receiver}[{key}]"
        pos = close
    rest_start = pos
    while True:  # the rest of the chain up to .orValue( / .hasValue(
        m = re.match(r"\s*\.\s*(orValue|hasValue|value)\s*\(", blank[pos:])
        if m is not None:
            call_open = pos + m.end() - 1
            call_close = _close(blank, call_open)
            if call_close < 0:
                return None
            rest = text[rest_start:pos]
            arg = text[call_open + 1:call_close - 1]
            kind = m.group(1)
            if kind == "orValue":
                replacement = f"({present} ? {value}{rest} : {arg})"
            elif kind == "hasValue" and not rest.strip():
                replacement = present
            else:
                return None
            return text[:start] + replacement + text[call_close:]
        m = re.match(r"\s*\.\s*[A-Za-z_][A-Za-z0-9_]*(?!\s*\()", blank[pos:])
        if m is not None:
            pos += m.end()
            continue
        m = re.match(r"\s*\[", blank[pos:])
        if m is not None and blank[pos + m.end():pos + m.end() + 1] != "?":
            close = _close(blank, pos + m.end() - 1)
            if close < 0:
                return None
            pos = close
            continue
        return None
