"""Admission for the rbac.authorization.k8s.io/v1 kinds: upstream's defaults (pkg/apis/rbac/v1
defaults.go) and the checks of pkg/apis/rbac/validation, with their field paths and wording, as
store hooks.

Why: the embedded API server's RBAC authorizer reads these objects, so a rule or binding the real
kube-apiserver refuses must not be stored here (a rule without verbs, a binding to a Role from a
ClusterRoleBinding, a subject of an unknown kind). Roles and ClusterRoles report every error, the
declarative ones (a rule's verbs Required) last as kube-apiserver v1.37 lists them. Differences from
upstream, on purpose: a binding reports its first error, not the whole list; the RBAC registry's
escalation check (a user may create a role or binding only with the permissions it holds, or with
the `escalate`/`bind` verbs) is the authorizer's (apiserver/authz), since the store does not know
who writes. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.common import Errors
from nodeagent.objects.storage import IMMUTABLE, _list, _object, _string, check_label_selector
from nodeagent.store import validation as meta

JSON = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT, USER, GROUP_KIND = "ServiceAccount", "User", "Group"


def _not_supported(path: str, value: str, supported: Sequence[str]) -> ValidationError:
    """field.NotSupported with the values in upstream's order (these lists are not sorted)."""
    values = ", ".join(meta.quote(v) for v in supported)
    return ValidationError(path, f"Unsupported value: {meta.quote(value)}: supported values: {values}")


def _strings(value: Any, path: str) -> list[str]:
    return [_string(v, f"{path}[{i}]") for i, v in enumerate(_list(value, path))]


def _go_json(value: Any) -> str:
    """A value as encoding/json writes it in an Invalid error (compact)."""
    return json.dumps(value, separators=(",", ":"))


class _Raw:
    """A bad value already rendered as field.Error renders a non-string (JSON), so quote() keeps it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def validate_rule(rule_raw: Any, namespaced: bool, path: str) -> None:
    """ValidatePolicyRule: verbs required; non-resource URLs only in cluster roles and never with
    resources; resource rules need apiGroups and resources. Every error is raised (ManyErrors)."""
    errs = Errors()
    late = _rule_errors(errs, rule_raw, namespaced, path)
    errs.extend(late)
    errs.raise_all()


def _rule_errors(errs: Errors, rule_raw: Any, namespaced: bool, path: str) -> list[ValidationError]:
    """One rule's hand-written errors into `errs`; answers its declarative ones (verbs Required),
    which kube-apiserver v1.37 lists after every hand-written error of the object."""
    rule = _object(rule_raw, path)
    verbs = _strings(rule.get("verbs"), f"{path}.verbs")
    groups = _strings(rule.get("apiGroups"), f"{path}.apiGroups")
    resources = _strings(rule.get("resources"), f"{path}.resources")
    names = _strings(rule.get("resourceNames"), f"{path}.resourceNames")
    urls = _strings(rule.get("nonResourceURLs"), f"{path}.nonResourceURLs")
    # kube-apiserver v1.37 answers with the declarative check's text (the hand-written
    # "verbs must contain at least one value" is MarkCoveredByDeclarative)
    late = [] if verbs else [meta.required(f"{path}.verbs")]
    if urls:
        if namespaced:
            errs.append(meta.invalid(f"{path}.nonResourceURLs", _Raw(_go_json(urls)),
                                     "namespaced rules cannot apply to non-resource URLs"))
        if groups or resources or names:
            errs.append(meta.invalid(f"{path}.nonResourceURLs", _Raw(_go_json(urls)),
                                     "rules cannot apply to both regular resources and non-resource URLs"))
        return late
    if not groups:
        errs.append(meta.required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not resources:
        errs.append(meta.required(f"{path}.resources", "resource rules must supply at least one resource"))
    return late


def _rules(obj: Mapping[str, Any], namespaced: bool, errs: Errors) -> list[ValidationError]:
    late: list[ValidationError] = []
    for i, rule in enumerate(_list(obj.get("rules"), "rules")):
        found = errs.check(_rule_errors, errs, rule, namespaced, f"rules[{i}]")
        late.extend(found or ())
    return late


def validate_role(obj: JSON) -> JSON:
    """ValidateRole: the rules of a namespaced role (every error, the declarative ones last)."""
    errs = Errors()
    late = _rules(obj, True, errs)
    errs.extend(late)
    errs.raise_all()
    return obj


def validate_cluster_role(obj: JSON) -> JSON:
    """ValidateClusterRole: the rules, and an aggregationRule has at least one valid selector
    (every error, the declarative ones last)."""
    errs = Errors()
    late = _rules(obj, False, errs)
    if obj.get("aggregationRule") is not None:
        rule = _object(obj.get("aggregationRule"), "aggregationRule")
        selectors = _list(rule.get("clusterRoleSelectors"), "aggregationRule.clusterRoleSelectors")
        if not selectors:
            errs.append(meta.required("aggregationRule.clusterRoleSelectors",
                                      "at least one clusterRoleSelector required if aggregationRule is non-nil"))
        for i, selector in enumerate(selectors):
            errs.check(check_label_selector, f"aggregationRule.clusterRoleSelectors[{i}]", selector)
    errs.extend(late)
    errs.raise_all()
    return obj


def _default_subjects(obj: JSON) -> None:
    """SetDefaults_Subject: User and Group subjects are in the RBAC group, service accounts in ""."""
    subjects = obj.get("subjects")
    if not isinstance(subjects, list):
        return
    for subject in subjects:
        if isinstance(subject, dict) and not subject.get("apiGroup") and subject.get("kind") in (USER, GROUP_KIND):
            subject["apiGroup"] = GROUP


def _default_binding(obj: JSON) -> None:
    """SetDefaults_RoleBinding / _ClusterRoleBinding: roleRef.apiGroup is the RBAC group."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    _default_subjects(obj)


def _validate_binding(obj: JSON, namespaced: bool) -> None:
    ref = _object(obj.get("roleRef"), "roleRef")
    api_group = _string(ref.get("apiGroup"), "roleRef.apiGroup")
    if api_group != GROUP:
        raise _not_supported("roleRef.apiGroup", api_group, [GROUP])
    kind = _string(ref.get("kind"), "roleRef.kind")
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if kind not in kinds:
        raise _not_supported("roleRef.kind", kind, kinds)
    name = _string(ref.get("name"), "roleRef.name")
    if not name:
        raise meta.required("roleRef.name")
    meta.check_path_segment("roleRef.name", name)
    for i, subject in enumerate(_list(obj.get("subjects"), "subjects")):
        validate_subject(subject, namespaced, f"subjects[{i}]")


def validate_subject(subject_raw: Any, namespaced: bool, path: str) -> None:
    """ValidateRoleBindingSubject: a name; a service account's name is a DNS subdomain, its
    apiGroup "", its namespace required in a ClusterRoleBinding; users and groups are in the RBAC
    group; no other kind."""
    subject = _object(subject_raw, path)
    name = _string(subject.get("name"), f"{path}.name")
    kind = _string(subject.get("kind"), f"{path}.kind")
    api_group = _string(subject.get("apiGroup"), f"{path}.apiGroup")
    if not name:
        raise meta.required(f"{path}.name")
    if kind == SERVICE_ACCOUNT:
        meta.check_dns_subdomain(f"{path}.name", name)
        if api_group:
            raise _not_supported(f"{path}.apiGroup", api_group, [""])
        if not namespaced and not _string(subject.get("namespace"), f"{path}.namespace"):
            raise meta.required(f"{path}.namespace")
    elif kind in (USER, GROUP_KIND):
        if api_group != GROUP:
            raise _not_supported(f"{path}.apiGroup", api_group, [GROUP])
    else:
        raise _not_supported(f"{path}.kind", kind, [SERVICE_ACCOUNT, USER, GROUP_KIND])


def _go_role_ref(ref: Mapping[str, Any]) -> _Raw:
    """The internal rbac.RoleRef as encoding/json prints it (Go field names: no json tags)."""
    return _Raw(_go_json({"APIGroup": ref.get("apiGroup") or "", "Kind": ref.get("kind") or "",
                          "Name": ref.get("name") or ""}))


def _validate_binding_update(new: JSON, old: JSON) -> None:
    """roleRef is immutable (ValidateImmutableField)."""
    ref, old_ref = _object(new.get("roleRef"), "roleRef"), _object(old.get("roleRef"), "roleRef")
    if dict(ref) != dict(old_ref):
        raise meta.invalid("roleRef", _go_role_ref(ref), IMMUTABLE)


def role_binding(obj: JSON) -> JSON:
    """Defaults then ValidateRoleBinding."""
    _default_binding(obj)
    _validate_binding(obj, namespaced=True)
    return obj


def cluster_role_binding(obj: JSON) -> JSON:
    """Defaults then ValidateClusterRoleBinding."""
    _default_binding(obj)
    _validate_binding(obj, namespaced=False)
    return obj


def role_rules(obj: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """A role's rules as stored (a list of objects; validation made them so)."""
    rules = obj.get("rules")
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else []


def hooks() -> dict[str, dict[str, Any]]:
    """Hook fields for nodeagent.store.kinds.KindRegistry.with_hooks."""
    return {
        "Role": {"default": validate_role},
        "ClusterRole": {"default": validate_cluster_role},
        "RoleBinding": {"default": role_binding, "validate_update": _validate_binding_update},
        "ClusterRoleBinding": {"default": cluster_role_binding, "validate_update": _validate_binding_update},
    }
