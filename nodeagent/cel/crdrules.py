"""CEL for CRD validation rules (x-kubernetes-validations): compile a rule or its messageExpression
with `self` and `oldSelf` typed from the schema node, and evaluate it.

One responsibility: expressions in, programs or cel-go's texts out; it knows nothing of schemas or
requests (apiserver/crdrules.py turns the structural schema into the types and walks the objects).

Upstream (k8s.io/apiextensions-apiserver pkg/apiserver/schema/cel/compilation.go, v0.37.2) declares
`self` with the node's type and `oldSelf` with the same type (optional_type of it with
`optionalOldSelf`), on the stored-expressions environment. A rule must be of type bool (`cel
expression must evaluate to a bool`), a messageExpression of type string. The texts: `compilation
failed: ERROR: <input>:L:C: ...` (syntax from the package's parser, types from checker.py),
`messageExpression compilation failed: ...`. An optional `oldSelf` is a one-element list (none: empty)
for the package, which has no optional values: its `.hasValue()`, `.value()` and `.orValue(d)` calls
are rewritten to functions over that list. Known leniency (as admission.py's): a function whose
overloads checker.py does not declare is dyn, so a rule whose type only its overloads would show is
not refused (refused only when its type is known and not bool).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nodeagent.cel import admission
from nodeagent.cel import checker as C
from nodeagent.cel import gostrings as cel_gostrings
from nodeagent.cel import optional as cel_optional
from nodeagent.cel import syntax as cel_syntax
from nodeagent.cel.selectors import FUNCTIONS as KUBERNETES_FUNCTIONS

if TYPE_CHECKING:
    import cel

SELF, OLD_SELF = "self", "oldSelf"
_PARSE_PREFIX = re.compile(r"^Failed to parse expression .*?: (?=ERROR)", re.DOTALL)
_OPTIONAL_CALL = re.compile(r"\.\s*(hasValue|value|orValue)\s*\(")
_OPTIONAL_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "naOptHasValue": lambda o: len(o) > 0,
    "naOptValue": lambda o: _opt_value(o),
    "naOptOrValue": lambda o, d: o[0] if o else d,
}


def _opt_value(o: list[Any]) -> Any:
    if not o:
        raise ValueError("optional.none() dereference")
    return o[0]


@dataclass(frozen=True, eq=False)
class Program:
    """A compiled rule or message expression."""

    expression: str
    program: cel.Program
    uses_old_self: bool

    def evaluate(self, self_value: Any, old_self: Any, has_old_self: bool, optional_old_self: bool) -> Any:
        """The value, or admission.EvalError with cel-go's words for the failure. `old_self` is
        declared only when `has_old_self` (an optional's none when `optional_old_self` and no old value)."""
        import cel
        from cel.stdlib import add_stdlib_to_context

        variables: dict[str, Any] = {SELF: self_value}
        if optional_old_self:
            variables[OLD_SELF] = [old_self] if has_old_self else []
        elif has_old_self:
            variables[OLD_SELF] = old_self
        ctx = cel.Context(variables=variables, functions={**KUBERNETES_FUNCTIONS, **_OPTIONAL_FUNCTIONS})
        add_stdlib_to_context(ctx, ["strings"])
        try:
            return self.program.execute(ctx)
        except KeyError as err:
            raise admission.EvalError(f"no such key: {err.args[0] if err.args else err}") from None
        except ZeroDivisionError:
            raise admission.EvalError("division by zero") from None
        except IndexError as err:  # the package's text is the apiserver list's: `index out of bounds: 5`
            raise admission.EvalError(str(err)) from None
        except OverflowError:
            raise admission.EvalError("integer overflow") from None
        except (TypeError, ValueError, RuntimeError, ArithmeticError, LookupError, AttributeError) as err:
            # a rule is the CRD author's: whatever the package raises for it is the rule's failure, not a 500
            text = admission.runtime_text(str(err))
            if text.startswith("Undefined variable") or "undeclared reference" in text:
                text = f"no such attribute(s): {text}"
            raise admission.EvalError(text) from None


def compile_rule(expression: str, self_type: C.Type, structs: Mapping[str, Mapping[str, C.Type]], *,
                 optional_old_self: bool, message: bool = False) -> Program:
    """Compile a rule (`message` False: must be bool) or a messageExpression (must be string); raises
    admission.CompileError with upstream's detail."""
    prefix = "messageExpression compilation failed: " if message else "compilation failed: "
    old_type = C.optional_of(self_type) if optional_old_self else self_type
    env = C.Env({SELF: self_type, OLD_SELF: old_type}, structs)
    program = _parse(expression, prefix, optional_old_self)
    try:
        result = C.check(expression, env)
    except cel_syntax.ParseError:
        result = None
    if result is not None and result.issues:
        raise admission.CompileError(prefix + C.issues_text(expression, result.issues))
    if result is not None and result.type.kind not in ("dyn", "param", "error"):
        wanted = C.STRING if message else C.BOOL
        if result.type != wanted:
            raise admission.CompileError("messageExpression must evaluate to a string" if message
                                         else "cel expression must evaluate to a bool")
    uses_old = OLD_SELF in program.variables()
    return Program(expression, cel_gostrings.executable(program, _optional_text(expression, optional_old_self)),
                   uses_old)


def _optional_text(expression: str, optional_old_self: bool) -> str:
    return _rewrite_optional_calls(expression) if optional_old_self else expression


def _parse(expression: str, prefix: str, optional_old_self: bool) -> cel.Program:
    import cel

    text = _optional_text(expression, optional_old_self)
    try:
        return cel.compile(text)
    except (ValueError, TypeError, RuntimeError) as err:
        detail = _PARSE_PREFIX.sub("", str(err)).replace("\n| ", "\n | ")
        rewritten = cel_optional.rewrite(text) if "unsupported syntax" in detail else None
        if rewritten is not None:
            try:
                return cel.compile(rewritten)
            except (ValueError, TypeError, RuntimeError):
                pass
        raise admission.CompileError(prefix + detail) from None


def _rewrite_optional_calls(expression: str) -> str:
    """`.hasValue()`, `.value()`, `.orValue(` as the list-backed optional's functions (outside strings)."""
    blank = admission._without_strings(expression)
    out, last = [], 0
    for m in _OPTIONAL_CALL.finditer(blank):
        name = {"hasValue": "naOptHasValue", "value": "naOptValue", "orValue": "naOptOrValue"}[m.group(1)]
        out.append(expression[last:m.start()])
        out.append(f".{name}(")
        last = m.end()
    out.append(expression[last:])
    return "".join(out)
