"""The evaluation of one ValidatingAdmissionPolicy for one binding and param (k8s.io/apiserver
pkg/admission/plugin/policy/validating validator.go): matchConditions, validations with their
composited variables, messageExpression and auditAnnotations, in CEL (nodeagent/cel/admission.py).

Why a module of its own: the dispatcher (dispatch.py) is built with the API server and asked about
every write, but evaluates nothing until a binding matches one; it imports this module, and with it
the CEL parser and checker (~90 M instructions, ~2.5% of a restart to READY=1: issue 25), then.
Pure: reads only what it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from nodeagent.apiserver.policy import authorizer as authz_library
from nodeagent.cel import admission as celadm

if TYPE_CHECKING:
    from nodeagent.apiserver.policy import matching
    from nodeagent.apiserver.policy.dispatch import Attributes

logger = logging.getLogger(__name__)

Obj = Mapping[str, Any]


def _request(attrs: Attributes, matched: matching.GVR) -> dict[str, Any]:
    """CreateAdmissionRequest as CEL sees it (object and oldObject left out, as upstream does)."""
    # upstream converts the AdmissionRequest through its JSON form: an empty `omitempty` field is absent
    # (the real kube-apiserver answers `no such key: extra` for a user without extra), so it is here
    user: dict[str, Any] = {}
    if attrs.user:
        user["username"] = attrs.user
    if attrs.uid:
        user["uid"] = attrs.uid
    if attrs.groups:
        user["groups"] = list(attrs.groups)
    if attrs.extra:
        user["extra"] = {k: list(v) for k, v in attrs.extra.items()}
    res = attrs.resource
    out: dict[str, Any] = {
        "uid": "",
        "kind": {"group": matched.group, "version": matched.version, "kind": matched.kind or res.kind},
        "resource": {"group": matched.group, "version": matched.version, "resource": matched.resource},
        "requestKind": {"group": res.group, "version": res.version, "kind": res.kind},
        "requestResource": {"group": res.group, "version": res.version, "resource": res.plural},
        "operation": attrs.operation,
        "userInfo": user,
        "dryRun": attrs.dry_run,
    }
    for key, value in (("name", attrs.name), ("namespace", attrs.namespace), ("subResource", attrs.subresource),
                       ("requestSubResource", attrs.subresource)):
        if value:
            out[key] = value
    if attrs.options is not None:
        out["options"] = dict(attrs.options)
    return out


class _Variables:
    """The composited variables of one evaluation, each evaluated at most once, when first read."""

    def __init__(self, spec: Obj, has_params: bool, base: dict[str, Any],
                 functions: Mapping[str, Callable[..., Any]]) -> None:
        self._functions = functions
        self._decls: list[tuple[str, str]] = []
        for var in spec.get("variables") or ():
            self._decls.append((str(var.get("name") or ""), str(var.get("expression") or "")))
        self._has_params = has_params
        self._base = base
        self._values: dict[str, Any] = {}
        self._errors: dict[str, str] = {}

    def evaluate(self, compiled: celadm.Compiled) -> Any:
        """The value of `compiled` in this evaluation (EvalError when it fails)."""
        return compiled.evaluate(self.activation(compiled), self._functions)

    def activation(self, compiled: celadm.Compiled) -> dict[str, Any]:
        """The activation for `compiled`: the base variables, and the composited ones it reads."""
        values: dict[str, Any] = {}
        for name in compiled.reads:
            self._ensure(name)
            if name in self._errors:
                raise celadm.EvalError(f'composited variable "{name}" fails to evaluate: {self._errors[name]}')
            values[name] = self._values[name]
        return {**self._base, celadm.VARIABLES: values}

    def _ensure(self, name: str) -> None:
        if name in self._values or name in self._errors:
            return
        names = [n for n, _ in self._decls]
        before = self._decls[: names.index(name)] if name in names else []
        expression = dict(self._decls).get(name, "")
        try:
            compiled = celadm.compile_expression(expression, celadm.declarations(self._has_params, before), "any")
        except celadm.CompileError as err:
            self._errors[name] = err.detail
            return
        try:
            self._values[name] = self.evaluate(compiled)
        except celadm.EvalError as err:
            self._errors[name] = str(err)


def evaluate(spec: Obj, attrs: Attributes, matched: matching.GVR, obj: Obj | None, old: Obj | None,
              param: Obj | None, namespace_obj: Obj | None, failure: str,
              functions: Mapping[str, Callable[..., Any]]) -> tuple[list[tuple[str, str]], list[str]]:
    """validator.Validate: the (message, reason) of each failed validation (an evaluation error
    counts as failed unless the failurePolicy is Ignore), which the binding's actions apply to;
    and the audit annotations' errors, which refuse the request whatever the actions."""
    has_params = spec.get("paramKind") is not None
    base: dict[str, Any] = {
        celadm.OBJECT: None if obj is None else dict(obj),
        celadm.OLD_OBJECT: None if old is None else dict(old),
        celadm.REQUEST: _request(attrs, matched),
        celadm.NAMESPACE: namespace_obj,
        celadm.AUTHORIZER: authz_library.value(attrs.user, attrs.uid, attrs.groups, attrs.extra,
                                               attrs.resource.group, attrs.resource.plural, attrs.subresource,
                                               attrs.namespace, attrs.name),
    }
    if has_params:
        base[celadm.PARAMS] = None if param is None else dict(param)
    variables = _Variables(spec, has_params, base, functions)
    fail = failure != "Ignore"
    decls = celadm.declarations(has_params, [(str(v.get("name") or ""), str(v.get("expression") or ""))
                                             for v in spec.get("variables") or ()])
    errors: list[str] = []
    for cond in spec.get("matchConditions") or ():
        outcome = _condition(str(cond.get("expression") or ""), celadm.Declarations(params=has_params), variables)
        if outcome is False:
            return [], []
        if isinstance(outcome, str):
            errors.append(outcome)
    if errors:  # utilerrors.NewAggregate's text
        return ([(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]", "")] if fail else []), []
    out: list[tuple[str, str]] = []
    for val in spec.get("validations") or ():
        expression = str(val.get("expression") or "")
        outcome = _condition(expression, decls, variables)
        if isinstance(outcome, str):
            if fail:
                out.append((outcome, ""))
            continue
        if outcome:
            continue
        out.append((_message(val, decls, variables), str(val.get("reason") or "Invalid")))
    refused: list[str] = []
    for audit in spec.get("auditAnnotations") or ():
        _audit(audit, decls, variables, fail, refused)
    return out, refused


def _condition(expression: str, decls: celadm.Declarations, variables: _Variables) -> bool | str:
    """True/False, or the error text (`expression 'E' resulted in error: ...`)."""
    try:
        compiled = celadm.compile_expression(expression, decls, "bool")
    except celadm.CompileError as err:
        return f"compilation error: {err.detail}"
    try:
        value = variables.evaluate(compiled)
    except celadm.EvalError as err:
        return f"expression '{expression}' resulted in error: {err}"
    if not isinstance(value, bool):
        return f"expression '{expression}' resulted in error: no such overload"
    return value


def _message(val: Obj, decls: celadm.Declarations, variables: _Variables) -> str:
    """The failure's message: messageExpression's (trimmed, one line, at most 5 KiB), else message,
    else `failed expression: E`."""
    message = ""
    text = str(val.get("messageExpression") or "")
    if text.strip():
        try:
            compiled = celadm.compile_expression(
                text, celadm.Declarations(params=decls.params, authorizer=False, variables=decls.variables,
                                          types=decls.types, checked=decls.checked), "string")
            value = variables.evaluate(compiled)
        except (celadm.CompileError, celadm.EvalError) as err:
            logger.debug("messageExpression failed expression=%s error=%s", text, err)
        else:
            if isinstance(value, str):
                message = value.strip()
                if len(message.encode()) > celadm.MAX_MESSAGE_BYTES or "\n" in message:
                    message = ""
    if not message:
        message = str(val.get("message") or "").strip()
    if not message:
        message = f"failed expression: {str(val.get('expression') or '').strip()}"
    return message


def _audit(audit: Obj, decls: celadm.Declarations, variables: _Variables, fail: bool,
           out: list[str]) -> None:
    """An audit annotation: an error refuses the request (with failurePolicy Fail), a value is logged."""
    text = str(audit.get("valueExpression") or "").strip()
    try:
        compiled = celadm.compile_expression(text, decls, "any")
        value = variables.evaluate(compiled)
    except celadm.CompileError as err:
        if fail:
            out.append(f"compilation error: {err.detail}")
        return
    except celadm.EvalError as err:
        if fail:
            out.append(f"expression '{text}' resulted in error: {err}")
        return
    if value is None or (isinstance(value, str) and not value.strip()):
        return
    if not isinstance(value, str):
        if fail:
            kind = celadm.type_name(value) or "dyn"
            out.append(f"valueExpression '{text}' resulted in unsupported return type: {kind}. Return type must be "
                       "either string or null.")
        return
    logger.info("validating admission policy audit annotation key=%s value=%s", audit.get("key"), value.strip())
