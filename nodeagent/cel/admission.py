"""CEL for admission policies (ValidatingAdmissionPolicy): compile an expression against the
variables kube-apiserver declares, and evaluate it, with cel-go's texts where nodeagent can tell.

One responsibility: expressions in, values or error texts out. It knows nothing of policies,
bindings or requests (apiserver/policy/ builds the activation); no I/O.

Upstream (k8s.io/apiserver pkg/admission/plugin/cel compile.go and activation.go) declares
`object`, `oldObject` (dyn), `request` (AdmissionRequest), `namespaceObject` (Namespace),
`params` (dyn, only with a paramKind), `authorizer` and `authorizer.requestResource` (not in
message expressions), and `variables` (the composited variables). The common-expression-language
package has no type checker, so a compile here checks what it can without one:
- syntax (the package's parser writes cel-go's `ERROR: <input>:L:C: ...` text with its caret lines;
  optional selection `x.?f`/`m[?k]` with `.orValue()`/`.hasValue()`, which it does not parse, is
  rewritten first: optional.py);
- references to undeclared variables and unknown functions (`undeclared reference to 'x' (in
  container '')`, with the position of the first use), and `variables.x` naming no variable
  declared before (`undefined field 'x'`);
- the result type of an expression whose type does not depend on the input: it runs once
  against empty inputs, and a result that is not the wanted type is `must evaluate to bool but
  got int`. An expression whose result depends on the object is dyn upstream too;
- what cel-go's type checker finds with these declarations (checker.py over kubetypes.py's
  `request`, `namespaceObject` and `variables` types, object and params dyn): `found no matching
  overload for '_+_' applied to '(int, string)'`, `undefined field 'x'` of request, `expected type
  'bool' but found 'int'` in a macro, and the homogeneous-literal validator's texts.
Known leniency (written down as an intended difference): a function whose overloads checker.py does
not declare (the authorizer's, quantity, url, ip, sets...) is typed dyn, so a type error only its
overloads would show compiles here and fails when evaluated instead; of cel-go's AST validators only
the homogeneous-literal one runs (a wrong `format` argument count is not refused). Runtime errors are
turned into cel-go's words for the common cases (`no such key: x`, `division by zero`, `no such overload`).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nodeagent.cel import checker as cel_checker
from nodeagent.cel import gostrings as cel_gostrings
from nodeagent.cel import kubetypes
from nodeagent.cel import optional as cel_optional
from nodeagent.cel import syntax as cel_syntax
from nodeagent.cel.selectors import FUNCTIONS as KUBERNETES_FUNCTIONS
from nodeagent.cel.selectors import KNOWN_FUNCTIONS

if TYPE_CHECKING:
    import cel

CACHE_SIZE = 2048
"""Compiled admission expressions kept (LRU by expression text and declarations)."""

OBJECT, OLD_OBJECT, REQUEST, NAMESPACE, PARAMS = "object", "oldObject", "request", "namespaceObject", "params"
AUTHORIZER, VARIABLES = "authorizer", "variables"
BASE_VARIABLES = (OBJECT, OLD_OBJECT, REQUEST, NAMESPACE, VARIABLES)

_PARSE_PREFIX = re.compile(r"^Failed to parse expression .*?: (?=ERROR)", re.DOTALL)
_COMPREHENSION_VAR = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
_VARIABLE_FIELD = re.compile(r"(?<![\w.])variables\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_STRING_LITERAL = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
_PY_CALL = re.compile(r"^Function '[^']*' error: Python function call failed: \w+: ")
_EXTRA_FUNCTIONS = frozenset({"has", "all", "exists", "exists_one", "map", "filter", "in", "size", "max", "min",
                              "format", "url", "isURL", "ip", "isIP", "cidr", "isCIDR", "sets.contains",
                              "sets.equivalent", "sets.intersects", "base64.encode", "base64.decode", "sort",
                              "sum", "isSorted", "indexOf", "lastIndexOf", "find", "findAll"})
AUTHORIZER_FUNCTIONS = frozenset({"group", "resource", "namespace", "name", "subresource", "path", "check",
                                  "allowed", "reason", "errored", "error", "serviceAccount", "fieldSelector",
                                  "labelSelector"})
"""The authorizer library's functions (k8s.io/apiserver pkg/cel/library/authz.go): declared, as upstream
declares them, whether or not the request has an authorizer."""
MAX_MESSAGE_BYTES = 5 * 1024
"""celconfig.MaxEvaluatedMessageExpressionSizeBytes: a longer evaluated message is not used."""


class CompileError(Exception):
    """An expression that does not compile; `detail` is the field error's detail text."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class EvalError(Exception):
    """An expression failed while evaluated; the text is cel-go's error as far as known."""


@dataclass(frozen=True)
class Declarations:
    """What an expression may reference: params (a paramKind), the authorizer (not in message
    expressions), and the names of the composited variables it may read."""

    params: bool = False
    authorizer: bool = True
    variables: tuple[str, ...] = ()
    types: tuple[tuple[str, str], ...] = ()
    """The static type of each composited variable known to have one (top_type of its expression)."""
    checked: tuple[tuple[str, cel_checker.Type], ...] = ()
    """Each composited variable's type as the type checker gives it (kubetypes.variable_types)."""

    def names(self) -> frozenset[str]:
        out = set(BASE_VARIABLES)
        if self.params:
            out.add(PARAMS)
        if self.authorizer:
            out.add(AUTHORIZER)
        return frozenset(out)


@dataclass(frozen=True, eq=False)
class Compiled:
    """A compiled expression and the composited variables it reads."""

    expression: str
    program: cel.Program
    reads: tuple[str, ...]

    def evaluate(self, variables: Mapping[str, Any], functions: Mapping[str, Callable[..., Any]] | None = None) -> Any:
        """The value, or EvalError with cel-go's words for the failure."""
        import cel
        from cel.stdlib import add_stdlib_to_context

        ctx = cel.Context(variables=dict(variables), functions={**KUBERNETES_FUNCTIONS, **(functions or {})})
        add_stdlib_to_context(ctx, ["strings"])
        try:
            return self.program.execute(ctx)
        except KeyError as err:
            raise EvalError(f"no such key: {err.args[0] if err.args else err}") from None
        except ZeroDivisionError:
            raise EvalError("division by zero") from None
        except (TypeError, ValueError, RuntimeError) as err:
            raise EvalError(runtime_text(str(err))) from None


def runtime_text(text: str) -> str:
    """The package's runtime error in cel-go's words where they are known."""
    text = _PY_CALL.sub("", text)
    if text.startswith("No such overload"):
        return "no such overload"
    if "division by zero" in text:
        return "division by zero"
    if "modulus by zero" in text or "modulo by zero" in text:
        return "modulus by zero"
    head, sep, _ = text.partition(". ")
    return head if sep else text.rstrip(".")


_cache: OrderedDict[tuple[str, Declarations, str], Compiled | CompileError] = OrderedDict()


def compile_expression(expression: str, decls: Declarations, returns: str) -> Compiled:
    """Compile (or fetch) `expression`; `returns` is "bool", "string" or "any". Raises CompileError
    with the detail upstream's compiler writes (`compilation failed: ERROR: ...`, `must evaluate to
    bool but got int`)."""
    key = (expression, decls, returns)
    found = _cache.get(key)
    if found is not None:
        _cache.move_to_end(key)
    else:
        found = _compile(expression, decls, returns)
        _cache[key] = found
        if len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    if isinstance(found, CompileError):
        raise CompileError(found.detail)
    return found


def _compile(expression: str, decls: Declarations, returns: str) -> Compiled | CompileError:
    import cel

    compiled_text = expression
    try:
        program = cel.compile(expression)
    except (ValueError, TypeError, RuntimeError) as err:
        text = _PARSE_PREFIX.sub("", str(err)).replace("\n| ", "\n | ")
        rewritten = cel_optional.rewrite(expression) if "unsupported syntax" in text else None
        if rewritten is None:
            return CompileError("compilation failed: " + text)
        try:  # optional selection, in the forms cel_optional rewrites
            program = cel.compile(rewritten)
            compiled_text = rewritten
        except (ValueError, TypeError, RuntimeError):
            return CompileError("compilation failed: " + text)
    bound = set(_COMPREHENSION_VAR.findall(expression))
    declared = decls.names()
    issues: list[tuple[int, str]] = []
    for name in program.variables():
        if name not in declared and name not in bound and name not in cel_checker.TYPE_IDENTS:
            issues.append(_issue(expression, name, f"undeclared reference to '{name}' (in container '')"))
    for name in program.functions():
        if name[:1] in "_@!" or name in KNOWN_FUNCTIONS or name in _EXTRA_FUNCTIONS or name in AUTHORIZER_FUNCTIONS:
            continue
        offset = _position(expression, rf"(?<!\w){re.escape(name)}\s*\(")
        issues.append((offset, _located(expression, offset, f"undeclared reference to '{name}' (in container '')")))
    reads = tuple(dict.fromkeys(_VARIABLE_FIELD.findall(_without_strings(expression))))
    for name in reads:
        if name not in decls.variables:
            offset = _position(expression, rf"(?<![\w.])variables\s*(\.)\s*{re.escape(name)}\b")
            issues.append((offset, _located(expression, offset, f"undefined field '{name}'")))
    if issues:
        issues.sort(key=lambda item: item[0])
        return CompileError("compilation failed: " + "\n".join(text for _, text in issues))
    checked = _type_check(expression, decls)
    if checked is not None and checked.issues:
        return CompileError("compilation failed: " + cel_checker.issues_text(expression, checked.issues))
    if returns != "any":
        got = top_type(expression, dict(decls.types)) or _probe_type(program, decls)
        if got is None and checked is not None and checked.type.kind != "dyn":
            # a dyn here may be a library type this checker leaves undeclared (the authorizer's): not told
            got = _type_string(checked.type)
        if got is not None and got != returns:
            return CompileError(f"must evaluate to {returns} but got {got}")
    return Compiled(expression, cel_gostrings.executable(program, compiled_text), reads)


def _env(decls: Declarations) -> cel_checker.Env:
    """The compile's declarations for the type checker: object, oldObject and params dyn, as upstream's
    createEnvForOpts declares them; the variables as typed in `decls`."""
    known = dict(decls.checked)
    return kubetypes.env(cel_checker.DYN, cel_checker.DYN if decls.params else None, authorizer=decls.authorizer,
                         variables={name: known.get(name, cel_checker.DYN) for name in decls.variables})


def _type_check(expression: str, decls: Declarations) -> cel_checker.Result | None:
    """cel-go's checker issues of an expression (None when the project's parser cannot read it: the
    package's own parse has accepted it, so that is nothing to report)."""
    try:
        result = cel_checker.check(expression, _env(decls))
    except cel_syntax.ParseError:
        return None
    # undeclared references are the checks above (the package knows what it declares): not repeated here
    kept = tuple(i for i in result.issues if not i.message.startswith("undeclared reference"))
    return cel_checker.Result(result.type, kept)


def _type_string(t: cel_checker.Type) -> str:
    """types.Type.String(): as the checker's format, but null is `null_type`."""
    if t.kind == "null":
        return "null_type"
    if t.params:
        return f"{t.name}({', '.join(_type_string(p) for p in t.params)})"
    return cel_checker.format_type(t)


def _without_strings(expression: str) -> str:
    """The expression with string literals blanked (same length), so names inside them are not uses."""
    return _STRING_LITERAL.sub(lambda m: " " * len(m.group(0)), expression)


def _position(expression: str, pattern: str) -> int:
    m = re.search(pattern, _without_strings(expression))
    if m is None:
        return 0
    return m.start(1) if m.groups() else m.start()


def _issue(expression: str, name: str, message: str) -> tuple[int, str]:
    offset = _position(expression, rf"(?<![\w.]){re.escape(name)}\b")
    return offset, _located(expression, offset, message)


def _located(expression: str, offset: int, message: str) -> str:
    """cel-go's issue text: `ERROR: <input>:LINE:COL: message` and the source line with a caret."""
    before = expression[:offset]
    line = before.count("\n") + 1
    column = offset - (before.rfind("\n") + 1)
    source = expression.split("\n")[line - 1]
    return f"ERROR: <input>:{line}:{column + 1}: {message}\n | {source}\n | {'.' * column}^"


# --- the static type of an expression's result, where it can be told without a type checker -----

_DYN_ROOTS = frozenset({OBJECT, OLD_OBJECT, PARAMS})
_REQUEST_TYPES = {"operation": "string", "name": "string", "namespace": "string", "uid": "string",
                  "subResource": "string", "requestSubResource": "string", "dryRun": "bool"}
_CALL_TYPES = {
    "has": "bool", "all": "bool", "exists": "bool", "exists_one": "bool", "startsWith": "bool", "endsWith": "bool",
    "contains": "bool", "matches": "bool", "isSorted": "bool", "isQuantity": "bool", "isSemver": "bool",
    "isURL": "bool", "isIP": "bool", "isCIDR": "bool", "isGreaterThan": "bool", "isLessThan": "bool",
    "size": "int", "int": "int", "indexOf": "int", "lastIndexOf": "int", "compareTo": "int", "sign": "int",
    "string": "string", "lowerAscii": "string", "upperAscii": "string", "trim": "string", "replace": "string",
    "substring": "string", "join": "string", "charAt": "string", "format": "string", "quote": "string",
    "double": "double", "bool": "bool", "uint": "uint", "bytes": "bytes",
}
_BINARY_LEVELS = (("||",), ("&&",), ("==", "!=", "<=", ">=", "<", ">", " in "), ("+", "-"), ("*", "/", "%"))


def _blanked(expression: str) -> str:
    """The expression with string literals blanked and the insides of brackets marked, for depth-0 scans."""
    return _without_strings(expression)


def _depth_zero(text: str) -> list[bool]:
    out, depth = [], 0
    for ch in text:
        if ch in "([{":
            depth += 1
            out.append(False)
            continue
        if ch in ")]}":
            depth -= 1
            out.append(False)
            continue
        out.append(depth == 0)
    return out


def _strip_parens(expression: str) -> str:
    text = expression.strip()
    while text.startswith("(") and text.endswith(")"):
        blank = _blanked(text)
        depth = 0
        for i, ch in enumerate(blank):
            depth += ch in "([{"
            depth -= ch in ")]}"
            if depth == 0 and i < len(blank) - 1:
                return text
        text = text[1:-1].strip()
    return text


def top_type(expression: str, variables: Mapping[str, str]) -> str | None:
    """cel-go's output type of `expression` where its top level tells it (an operator, a call of a
    known function, a literal, a field of a dyn variable: `dyn`), else None (not known here)."""
    text = _strip_parens(expression)
    if not text:
        return None
    blank = _blanked(text)
    zero = _depth_zero(blank)
    q = next((i for i, ch in enumerate(blank) if ch == "?" and zero[i] and blank[i + 1:i + 2] != "."), -1)
    if q > 0:
        depth, colon = 0, -1
        for i in range(q + 1, len(blank)):
            if not zero[i]:
                continue
            if blank[i] == "?":
                depth += 1
            elif blank[i] == ":":
                if depth == 0:
                    colon = i
                    break
                depth -= 1
        if colon < 0:
            return None
        first, second = top_type(text[q + 1:colon], variables), top_type(text[colon + 1:], variables)
        return first if first == second else None
    for level, ops in enumerate(_BINARY_LEVELS):
        found = _binary_at(blank, zero, ops)
        if found is None:
            continue
        if level <= 2:
            return "bool"
        left, right = top_type(text[:found[0]], variables), top_type(text[found[1]:], variables)
        known = [t for t in (left, right) if t not in (None, "dyn")]
        if known:
            return known[0]
        return "dyn" if left == right == "dyn" else None
    if text.startswith("!"):
        return "bool"
    if text.startswith("-"):
        return top_type(text[1:], variables)
    return _primary_type(text, blank, variables)


def _binary_at(blank: str, zero: list[bool], ops: tuple[str, ...]) -> tuple[int, int] | None:
    """(start, end) of the rightmost depth-0 binary operator of `ops` (a sign after an operator or at the
    start is unary, and `<=` is not `<`)."""
    best: tuple[int, int] | None = None
    i = 0
    while i < len(blank):
        if not zero[i]:
            i += 1
            continue
        for op in ops:
            if blank.startswith(op, i):
                before = blank[:i].rstrip()
                after = blank[i + len(op):i + len(op) + 1]
                if not before or before[-1] in "+-*/%<>=!&|?:([{,":
                    break  # unary
                if op in ("<", ">") and after == "=":
                    break
                if op in ("=", "!") and after == "=":
                    break
                if op in ("+", "-") and re.search(r"\d[eE]$", before):
                    break  # an exponent
                best = (i, i + len(op))
                i += len(op) - 1
                break
        i += 1
    return best


_LITERAL_TYPES = ((re.compile(r"^[rR]?(\"|')"), "string"), (re.compile(r"^[bB][rR]?(\"|')"), "bytes"),
                  (re.compile(r"^\d+[uU]$"), "uint"), (re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)$"), "int"),
                  (re.compile(r"^(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$"), "double"))


def _primary_type(text: str, blank: str, variables: Mapping[str, str]) -> str | None:
    if text in ("true", "false"):
        return "bool"
    if text == "null":
        return "null_type"
    for pattern, name in _LITERAL_TYPES:
        if pattern.match(text) and ((name in ("string", "bytes") and _is_one_literal(text, blank)) or
                                    name not in ("string", "bytes")):
            return name
    if blank.endswith(")"):
        m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\($", blank[:_matching_open(blank)])
        return _CALL_TYPES.get(m.group(1)) if m else None
    m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*|\s*\[[^\]]*\])*)$", blank)
    if m is None:
        return None
    root, rest = m.group(1), m.group(2)
    if root in _DYN_ROOTS:
        return "dyn"
    fields = re.findall(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)", rest)
    if root == VARIABLES and len(fields) == 1 and "[" not in rest:
        return variables.get(fields[0])
    if root == VARIABLES and fields and fields[0] in variables and variables[fields[0]] == "dyn":
        return "dyn"
    if root == REQUEST and len(fields) == 1 and "[" not in rest:
        return _REQUEST_TYPES.get(fields[0])
    return None


_decls_cache: OrderedDict[tuple[bool, tuple[tuple[str, str], ...], bool], Declarations] = OrderedDict()


def declarations(params: bool, variables: Sequence[tuple[str, str]], *, authorizer: bool = True) -> Declarations:
    """The declarations for an expression after the composited `variables` (name, expression): their
    names, and the static type of each whose expression's type is known. Kept (LRU, as compiled
    expressions are): the admission of every request asks for its policy's, and typing the variables
    costs a parse and a check of each."""
    key = (params, tuple(variables), authorizer)
    found = _decls_cache.get(key)
    if found is not None:
        _decls_cache.move_to_end(key)
        return found
    made = _declarations(params, key[1], authorizer)
    _decls_cache[key] = made
    if len(_decls_cache) > CACHE_SIZE:
        _decls_cache.popitem(last=False)
    return made


def _declarations(params: bool, variables: Sequence[tuple[str, str]], authorizer: bool) -> Declarations:
    types: dict[str, str] = {}
    for name, expression in variables:
        found = top_type(expression, types)
        if found is not None:
            types[name] = found
    names = tuple(n for n, _ in variables)
    checked = kubetypes.variable_types(
        _env(Declarations(params=params, authorizer=authorizer, variables=names)), variables)
    return Declarations(params=params, authorizer=authorizer, variables=names, types=tuple(types.items()),
                        checked=tuple(checked.items()))


def _is_one_literal(text: str, blank: str) -> bool:
    return blank.strip() == "" or (blank[:1] in "rRbB" and blank[1:].strip() == "")


def _matching_open(blank: str) -> int:
    depth = 0
    for i in range(len(blank) - 1, -1, -1):
        depth += blank[i] in ")]}"
        depth -= blank[i] in "([{"
        if depth == 0:
            return i + 1
    return 0


def _probe_type(program: cel.Program, decls: Declarations) -> str | None:
    """The CEL type name of a result that does not depend on the input, else None (dyn)."""
    import cel
    from cel.stdlib import add_stdlib_to_context

    variables: dict[str, Any] = {name: {} for name in decls.names()}
    variables[VARIABLES] = {}
    ctx = cel.Context(variables=variables, functions=dict(KUBERNETES_FUNCTIONS))
    add_stdlib_to_context(ctx, ["strings"])
    try:
        value = program.execute(ctx)
    except (KeyError, TypeError, ValueError, RuntimeError, ZeroDivisionError):
        return None
    return type_name(value)


def type_name(value: Any) -> str | None:
    """cel-go's name of a value's type; None for the containers (their element types are not known)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if value is None:
        return "null_type"
    return None


def cache_clear() -> None:
    """Forget every compiled expression and declarations (tests)."""
    _cache.clear()
    _decls_cache.clear()
