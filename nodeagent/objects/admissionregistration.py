"""Admission for the admissionregistration.k8s.io/v1 policy kinds: upstream's defaults
(pkg/apis/admissionregistration/v1 defaults.go) and the checks of
pkg/apis/admissionregistration/validation (ValidateValidatingAdmissionPolicy, ...Binding, the
status update), with their field paths and wording, as store hooks.

Why: the API server enforces these policies (apiserver/policy/), so a policy the real
kube-apiserver refuses (no failurePolicy after defaulting, a rule without operations, an
expression that does not compile) must be refused here with the same 422, and a stored one
must be in the shape the dispatcher reads. Expressions compile through nodeagent/cel/admission.py
(see its docstring for what it checks without a type checker; imported with the first policy to
check). Every error is reported, in upstream's order. Pure: no I/O.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.objects.storage import _list, _object, _string, check_label_selector
from nodeagent.store import validation as meta

if TYPE_CHECKING:
    from nodeagent.cel import admission as celadm

JSON = dict[str, Any]

FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
ACTIONS = ("Audit", "Deny", "Warn")
MAX_AUDIT_ANNOTATIONS = 20
MAX_AUDIT_VALUE_EXPRESSION = 5 * 1024
_NEWLINES = re.compile(r"[\n\r]+")
_CEL_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                           "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                           "void", "while"})


class _Raw:
    """A bad value rendered as field.Error renders a non-string (its JSON), kept as is by quote()."""

    def __init__(self, value: Any) -> None:
        self.text = json.dumps(value, separators=(",", ":"))

    def __str__(self) -> str:
        return self.text


class _GoQuoted:
    """A string value as Go's %q writes it (strconv.Quote: a line break is `\\n`), kept as is by quote()."""

    def __init__(self, text: str) -> None:
        out = []
        for ch in text:
            if ch in '"\\':
                out.append("\\" + ch)
            elif ch in _ESCAPES:
                out.append(_ESCAPES[ch])
            elif ch.isprintable():
                out.append(ch)
            elif ord(ch) < 0x80:
                out.append(f"\\x{ord(ch):02x}")
            elif ord(ch) < 0x10000:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(f"\\U{ord(ch):08x}")
        self.text = '"' + "".join(out) + '"'

    def __str__(self) -> str:
        return self.text


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _invalid(path: str, value: str, detail: str) -> ValidationError:
    """field.Invalid of a string value (Go-quoted: an expression or message may hold line breaks)."""
    return meta.invalid(path, _GoQuoted(value), detail)


def _unsorted_not_supported(path: str, value: Any, supported: Sequence[str]) -> ValidationError:
    values = ", ".join(meta.quote(v) for v in supported)
    return ValidationError(path, f"Unsupported value: {meta.quote(value)}: supported values: {values}")


# --- defaults ----------------------------------------------------------------------------------


def _default_match_resources(match: Any) -> None:
    """SetDefaults_MatchResources and SetDefaults_Rule of each rule."""
    if not isinstance(match, dict):
        return
    match.setdefault("matchPolicy", "Equivalent")
    if match.get("namespaceSelector") is None:
        match["namespaceSelector"] = {}
    if match.get("objectSelector") is None:
        match["objectSelector"] = {}
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(key) or ():
            if isinstance(rule, dict) and rule.get("scope") is None:
                rule["scope"] = "*"


def default_policy(obj: Mapping[str, Any]) -> JSON:
    """The policy with v1's defaults: failurePolicy Fail, the match resources' defaults."""
    out = copy.deepcopy(dict(obj))
    spec = out.get("spec")
    if isinstance(spec, dict):
        if spec.get("failurePolicy") is None:
            spec["failurePolicy"] = "Fail"
        _default_match_resources(spec.get("matchConstraints"))
    return out


def default_binding(obj: Mapping[str, Any]) -> JSON:
    out = copy.deepcopy(dict(obj))
    spec = out.get("spec")
    if isinstance(spec, dict):
        _default_match_resources(spec.get("matchResources"))
    return out


# --- rules -------------------------------------------------------------------------------------


def _strings(value: Any, path: str) -> list[str]:
    return [_string(v, f"{path}[{i}]") for i, v in enumerate(_list(value, path))]


def _check_resources(resources: list[str], path: str, errs: Errors) -> None:
    """validateResources (subresources allowed)."""
    if not resources:
        errs.append(meta.required(path))
    with_wild_sub: set[str] = set()
    wild_res_subs: set[str] = set()
    double = single = plain = False
    for i, res_sub in enumerate(resources):
        if res_sub == "":
            errs.append(meta.required(f"{path}[{i}]"))
            continue
        if res_sub == "*/*":
            double = True
        if res_sub == "*":
            single = True
        res, sep, sub = res_sub.partition("/")
        if not sep:
            plain = res_sub != "*"
            continue
        if res in with_wild_sub:
            errs.append(meta.invalid(f"{path}[{i}]", res_sub, f"if '{res}/*' is present, must not specify {res_sub}"))
        if sub in wild_res_subs:
            errs.append(meta.invalid(f"{path}[{i}]", res_sub, f"if '*/{sub}' is present, must not specify {res_sub}"))
        if sub == "*":
            with_wild_sub.add(res)
        if res == "*":
            wild_res_subs.add(sub)
    if len(resources) > 1 and double:
        errs.append(meta.invalid(path, _Raw(resources), "if '*/*' is present, must not specify other resources"))
    if single and plain:
        errs.append(meta.invalid(path, _Raw(resources),
                                 "if '*' is present, must not specify other resources without subresources"))


def _check_rule_with_operations(rule: Mapping[str, Any], path: str, errs: Errors) -> None:
    """validateRuleWithOperations + validateRule."""
    ops = _strings(rule.get("operations"), f"{path}.operations")
    if not ops:
        errs.append(meta.required(f"{path}.operations"))
    if len(ops) > 1 and "*" in ops:
        errs.append(meta.invalid(f"{path}.operations", _Raw(ops),
                                 "if '*' is present, must not specify other operations"))
    for i, op in enumerate(ops):
        if op not in OPERATIONS:
            errs.append(meta.not_supported(f"{path}.operations[{i}]", op, OPERATIONS))
    groups = _strings(rule.get("apiGroups"), f"{path}.apiGroups")
    if not groups:
        errs.append(meta.required(f"{path}.apiGroups"))
    if len(groups) > 1 and "*" in groups:
        errs.append(meta.invalid(f"{path}.apiGroups", _Raw(groups),
                                 "if '*' is present, must not specify other API groups"))
    versions = _strings(rule.get("apiVersions"), f"{path}.apiVersions")
    if not versions:
        errs.append(meta.required(f"{path}.apiVersions"))
    if len(versions) > 1 and "*" in versions:
        errs.append(meta.invalid(f"{path}.apiVersions", _Raw(versions),
                                 "if '*' is present, must not specify other API versions"))
    for i, version in enumerate(versions):
        if version == "":
            errs.append(meta.required(f"{path}.apiVersions[{i}]"))
    _check_resources(_strings(rule.get("resources"), f"{path}.resources"), f"{path}.resources", errs)
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        errs.append(meta.not_supported(f"{path}.scope", scope, SCOPES))


def _check_named_rule(rule_raw: Any, path: str, errs: Errors) -> None:
    rule = _object(rule_raw, path)
    seen: set[str] = set()
    for i, name in enumerate(_strings(rule.get("resourceNames"), f"{path}.resourceNames")):
        for bad in _path_segment_faults(name):
            errs.append(meta.invalid(f"{path}.resourceNames[{i}]", name, bad))
        if name in seen:
            errs.append(meta.duplicate(f"{path}.resourceNames[{i}]", name))
        seen.add(name)
    _check_rule_with_operations(rule, path, errs)


def _path_segment_faults(name: str) -> list[str]:
    """content.IsPathSegmentName: every fault."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def _check_match_resources(raw: Any, path: str, errs: Errors) -> None:
    """validateMatchResources (after defaulting)."""
    if raw is None:
        return
    match = _object(raw, path)
    policy = match.get("matchPolicy")
    if policy is None:
        errs.append(meta.required(f"{path}.matchPolicy"))
    elif policy not in MATCH_POLICIES:
        errs.append(meta.not_supported(f"{path}.matchPolicy", policy, MATCH_POLICIES))
    for key in ("namespaceSelector", "objectSelector"):
        if match.get(key) is None:
            errs.append(meta.required(f"{path}.{key}"))
        else:
            errs.check(check_label_selector, f"{path}.{key}", match[key])
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(_list(match.get(key), f"{path}.{key}")):
            _check_named_rule(rule, f"{path}.{key}[{i}]", errs)


# --- policies ----------------------------------------------------------------------------------


def _check_param_kind(raw: Any, path: str, errs: Errors) -> None:
    kind = _object(raw, path)
    api_version = _string(kind.get("apiVersion"), f"{path}.apiVersion")
    if not api_version:
        errs.append(meta.required(f"{path}.apiVersion"))
    elif api_version.count("/") > 1:
        errs.append(meta.invalid(f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    else:
        group, _, version = api_version.rpartition("/")
        if group:
            try:
                meta.check_dns_subdomain(f"{path}.apiVersion", group)
            except ValidationError as err:
                errs.append(meta.invalid(f"{path}.apiVersion", group, _detail_after_value(err)))
        if not version:
            errs.append(meta.invalid(f"{path}.apiVersion", api_version, "version must be specified"))
        else:
            try:
                meta.check_dns_label(f"{path}.apiVersion", version)
            except ValidationError as err:
                errs.append(meta.invalid(f"{path}.apiVersion", version, _detail_after_value(err)))
    name = _string(kind.get("kind"), f"{path}.kind")
    if not name:
        errs.append(meta.required(f"{path}.kind"))
    else:
        try:
            meta.check_dns_label(f"{path}.kind", name.lower())
        except ValidationError as err:
            errs.append(meta.invalid(f"{path}.kind", name, "may have mixed case, but should otherwise match: "
                                     + _detail_after_value(err)))


def _detail_after_value(err: ValidationError) -> str:
    """The detail of an `Invalid value: "x": detail` error."""
    text = err.detail
    if text.startswith("Invalid value: "):
        rest = text[len("Invalid value: "):]
        if rest.startswith('"'):
            end = 1
            while end < len(rest) and not (rest[end] == '"' and rest[end - 1] != "\\"):
                end += 1
            return rest[end + 3:]
    return text


def _check_expression(errs: Errors, path: str, expression: str, decls: celadm.Declarations, returns: str) -> None:
    from nodeagent.cel import admission as celadm  # as in validate_policy_spec

    try:
        celadm.compile_expression(expression, decls, returns)
    except celadm.CompileError as err:
        errs.append(_invalid(path, expression, err.detail))


def validate_policy_spec(spec_raw: Any, name: str, errs: Errors) -> None:
    """validateValidatingAdmissionPolicySpec (after defaulting)."""
    # the CEL compiler (~90 M instructions of imports) is imported with the first policy to check, not into every
    # start of the daemon, whose store hooks import this module (issue 25: restart to ready)
    from nodeagent.cel import admission as celadm

    path = "spec"
    spec = _object(spec_raw, path)
    failure = spec.get("failurePolicy")
    if failure is None:
        errs.append(meta.required(f"{path}.failurePolicy"))
    elif failure not in FAILURE_POLICIES:
        errs.append(meta.not_supported(f"{path}.failurePolicy", failure, FAILURE_POLICIES))
    has_params = spec.get("paramKind") is not None
    if has_params:
        _check_param_kind(spec["paramKind"], f"{path}.paramKind", errs)
    constraints = spec.get("matchConstraints")
    if constraints is None:
        errs.append(meta.required(f"{path}.matchConstraints"))
    else:
        _check_match_resources(constraints, f"{path}.matchConstraints", errs)
        if not _list(_object(constraints, f"{path}.matchConstraints").get("resourceRules"),
                     f"{path}.matchConstraints.resourceRules"):
            errs.append(meta.required(f"{path}.matchConstraints.resourceRules"))
    _check_match_conditions(spec.get("matchConditions"), has_params, f"{path}.matchConditions", errs)
    declared: list[tuple[str, str]] = []
    for i, raw in enumerate(_list(spec.get("variables"), f"{path}.variables")):
        vpath = f"{path}.variables[{i}]"
        var = _object(raw, vpath)
        vname = _string(var.get("name"), f"{vpath}.name")
        if not vname.strip():
            errs.append(meta.required(f"{vpath}.name", "name is not specified"))
        elif not _CEL_IDENT.match(vname) or vname in _CEL_RESERVED:
            errs.append(meta.invalid(f"{vpath}.name", vname, "must be a valid CEL identifier"))
        expr = _string(var.get("expression"), f"{vpath}.expression")
        if not expr.strip():
            errs.append(meta.required(f"{vpath}.expression", "expression is not specified"))
        else:
            _check_expression(errs, f"{vpath}.expression", expr, celadm.declarations(has_params, declared), "any")
        if vname:
            declared.append((vname, expr))
    validations = _list(spec.get("validations"), f"{path}.validations")
    audits = _list(spec.get("auditAnnotations"), f"{path}.auditAnnotations")
    if not validations and not audits:
        msg = "validations or auditAnnotations must contain at least one item"
        errs.append(meta.required(f"{path}.validations", msg))
        errs.append(meta.required(f"{path}.auditAnnotations", msg))
        return
    for i, raw in enumerate(validations):
        _check_validation(raw, has_params, declared, f"{path}.validations[{i}]", errs)
    if len(audits) > MAX_AUDIT_ANNOTATIONS:
        errs.append(meta.invalid(f"{path}.auditAnnotations", _Raw(audits),
                                 f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"))
    keys: set[str] = set()
    for i, raw in enumerate(audits):
        apath = f"{path}.auditAnnotations[{i}]"
        audit = _object(raw, apath)
        key = _string(audit.get("key"), f"{apath}.key")
        if name:
            errs.check(meta.check_qualified_name, f"{apath}.key", f"{name}/{key}")
        else:
            errs.append(meta.invalid(f"{apath}.key", key, "requires metadata.name be non-empty"))
        value = _string(audit.get("valueExpression"), f"{apath}.valueExpression").strip()
        if not value:
            errs.append(meta.required(f"{apath}.valueExpression", "valueExpression is not specified"))
        elif len(value) > MAX_AUDIT_VALUE_EXPRESSION:
            errs.append(meta.required(f"{apath}.valueExpression",
                                      f"must not exceed {MAX_AUDIT_VALUE_EXPRESSION} bytes in length"))
        else:
            _check_expression(errs, f"{apath}.valueExpression", value, celadm.declarations(has_params, declared),
                              "any")
        if key in keys:
            errs.append(meta.duplicate(f"{apath}.key", key))
        keys.add(key)


def _check_match_conditions(raw: Any, has_params: bool, path: str, errs: Errors) -> None:
    from nodeagent.cel import admission as celadm  # as in validate_policy_spec

    conditions = _list(raw, path)
    if len(conditions) > 64:
        errs.append(ValidationError(path, f"Too many: {len(conditions)}: must have at most 64 items"))
    names: set[str] = set()
    for i, item in enumerate(conditions):
        cpath = f"{path}[{i}]"
        cond = _object(item, cpath)
        expr = _string(cond.get("expression"), f"{cpath}.expression")
        if not expr.strip():
            errs.append(meta.required(f"{cpath}.expression"))
        else:
            # matchConditions compile without composition: `variables` has no fields there
            _check_expression(errs, f"{cpath}.expression", expr.strip(), celadm.Declarations(params=has_params),
                              "bool")
        cname = _string(cond.get("name"), f"{cpath}.name")
        if not cname:
            errs.append(meta.required(f"{cpath}.name"))
        else:
            errs.check(meta.check_qualified_name, f"{cpath}.name", cname)
            if cname in names:
                errs.append(meta.duplicate(f"{cpath}.name", cname))
            names.add(cname)


def _check_validation(raw: Any, has_params: bool, declared: list[tuple[str, str]], path: str, errs: Errors) -> None:
    """validateValidation."""
    from nodeagent.cel import admission as celadm  # as in validate_policy_spec

    val = _object(raw, path)
    expr = _string(val.get("expression"), f"{path}.expression")
    message = _string(val.get("message"), f"{path}.message")
    message_expr = _string(val.get("messageExpression"), f"{path}.messageExpression")
    if not expr.strip():
        errs.append(meta.required(f"{path}.expression", "expression is not specified"))
    else:
        _check_expression(errs, f"{path}.expression", expr, celadm.declarations(has_params, declared), "bool")
    if message_expr and not message_expr.strip():
        errs.append(_invalid(f"{path}.messageExpression", message_expr, "must be non-empty if specified"))
    elif message_expr.strip():
        # upstream declares params in a message expression only with a paramKind too, never the authorizer
        _check_expression(errs, f"{path}.messageExpression", message_expr,
                          celadm.declarations(has_params, declared, authorizer=False), "string")
    if message and not message.strip():
        errs.append(_invalid(f"{path}.message", message, "must be non-empty if specified"))
    elif _NEWLINES.search(message.strip()):
        errs.append(_invalid(f"{path}.message", message, "must not contain line breaks"))
    reason = val.get("reason")
    if reason is not None and reason not in REASONS:
        errs.append(meta.not_supported(f"{path}.reason", reason, REASONS))


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def validate_policy(obj: Mapping[str, Any]) -> JSON:
    """The `default` hook of ValidatingAdmissionPolicy: defaults, then every check."""
    out = default_policy(obj)
    errs = Errors()
    validate_policy_spec(out.get("spec"), _name(out), errs)
    _check_status(out.get("status"), errs)
    errs.raise_all()
    return out


def _check_status(raw: Any, errs: Errors) -> None:
    """validateValidatingAdmissionPolicyStatus: typeChecking's warnings need a warning and a fieldRef."""
    status = _object(raw, "status")
    checking = _object(status.get("typeChecking"), "status.typeChecking")
    for i, item in enumerate(_list(checking.get("expressionWarnings"), "status.typeChecking.expressionWarnings")):
        wpath = f"status.typeChecking.expressionWarnings[{i}]"
        warning = _object(item, wpath)
        if not warning.get("warning"):
            errs.append(meta.required(f"{wpath}.warning"))
        if not str(warning.get("fieldRef") or "").strip():
            errs.append(meta.required(f"{wpath}.fieldRef"))


# --- bindings ----------------------------------------------------------------------------------


def validate_binding(obj: Mapping[str, Any]) -> JSON:
    """The `default` hook of ValidatingAdmissionPolicyBinding: defaults, then
    validateValidatingAdmissionPolicyBindingSpec."""
    out = default_binding(obj)
    errs = Errors()
    # v1.37's declarative validation (+k8s:required, beta) answers for policyName and validationActions
    # being empty: its errors replace the hand-written ones and come after all of them, in field order
    declarative = Errors()
    spec = _object(out.get("spec"), "spec")
    policy = _string(spec.get("policyName"), "spec.policyName")
    if not policy:
        declarative.append(meta.required("spec.policyName"))
    else:
        errs.check(meta.check_dns_subdomain, "spec.policyName", policy)
    _check_param_ref(spec.get("paramRef"), "spec.paramRef", errs)
    _check_match_resources(spec.get("matchResources"), "spec.matchResources", errs)
    _check_actions(spec.get("validationActions"), "spec.validationActions", errs, declarative)
    errs.extend(declarative)
    errs.raise_all()
    return out


def _check_param_ref(raw: Any, path: str, errs: Errors) -> None:
    if raw is None:
        return
    ref = _object(raw, path)
    name = _string(ref.get("name"), f"{path}.name")
    selector = ref.get("selector")
    if name:
        for bad in _path_segment_faults(name):
            errs.append(meta.invalid(f"{path}.name", name, bad))
        if selector is not None:
            errs.append(meta.forbidden(f"{path}.name", "name and selector are mutually exclusive"))
    if selector is not None:
        errs.check(check_label_selector, f"{path}.selector", selector)
        if name:
            errs.append(meta.forbidden(f"{path}.selector", "name and selector are mutually exclusive"))
    if not name and selector is None:
        errs.append(meta.required(path, "one of name or selector must be specified"))
    action = ref.get("parameterNotFoundAction")
    if not action:
        errs.append(meta.required(f"{path}.parameterNotFoundAction"))
    elif action not in ("Deny", "Allow"):
        errs.append(_unsorted_not_supported(f"{path}.parameterNotFoundAction", action, ("Deny", "Allow")))


def _check_actions(raw: Any, path: str, errs: Errors, declarative: Errors) -> None:
    actions = _strings(raw, path)
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in ACTIONS:
            errs.append(meta.not_supported(f"{path}[{i}]", action, ACTIONS))
        if action in seen:
            errs.append(meta.duplicate(f"{path}[{i}]", action))
        seen.add(action)
    if "Deny" in seen and "Warn" in seen:
        errs.append(meta.invalid(path, _Raw(actions), "must not contain both Deny and Warn (repeating the same "
                                 "validation failure information in the API response and headers serves no purpose)"))
    if not seen:
        declarative.append(meta.required(path))


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {
        "ValidatingAdmissionPolicy": {"default": validate_policy},
        "ValidatingAdmissionPolicyBinding": {"default": validate_binding},
    }
