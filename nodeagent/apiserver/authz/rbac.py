"""The RBAC authorizer: k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac with the rule resolver of
pkg/registry/rbac/validation (rule.go) and the matching helpers of pkg/apis/rbac/v1
(evaluation_helpers.go).

Why its own module: every identity but a node's and the administrator's (system:masters) is
authorized by the roles bound to it, read from the stored Role, ClusterRole, RoleBinding and
ClusterRoleBinding objects through a `Reader` (the object store in process). Bindings are visited
as upstream visits them (every ClusterRoleBinding, then the RoleBindings of the request's
namespace), so the reason of an allowed request names the same binding kube-apiserver's would.
Pure: no I/O beyond the reader.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from nodeagent.apiserver.authn.user import SERVICE_ACCOUNT_PREFIX, UserInfo
from nodeagent.apiserver.authz.attributes import Attributes

Rule = Mapping[str, Any]


class Reader(Protocol):
    """What the authorizers read: stored objects by kind (read-only views)."""

    def scan(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]: ...

    def peek(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...


def _strings(rule: Rule, key: str) -> Sequence[str]:
    value = rule.get(key)
    return value if isinstance(value, list) else ()


def rule_allows(attrs: Attributes, rule: Rule) -> bool:
    """RuleAllows: verb, then group, resource (`*`, exact, `*/sub`) and name for a resource request;
    verb and URL (`*`, exact, a trailing-`*` prefix) for a non-resource one."""
    verbs = _strings(rule, "verbs")
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        for url in _strings(rule, "nonResourceURLs"):
            if url in ("*", attrs.path) or (url.endswith("*") and attrs.path.startswith(url.rstrip("*"))):
                return True
        return False
    groups = _strings(rule, "apiGroups")
    if "*" not in groups and attrs.api_group not in groups:
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not any(r in ("*", combined) or (attrs.subresource and r == f"*/{attrs.subresource}")
               for r in _strings(rule, "resources")):
        return False
    names = _strings(rule, "resourceNames")
    return not names or attrs.name in names


def applies_to(user: UserInfo, subject: Mapping[str, Any], namespace: str) -> bool:
    """appliesToUser: a User by name, a Group by membership, a ServiceAccount by its username
    (the binding's namespace when the subject names none)."""
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and user.name == f"{SERVICE_ACCOUNT_PREFIX}{sa_namespace}:{name}"
    return False


def describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    """describeSubject, with upstream's `name/namespace` order for a service account."""
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


Visitor = Callable[[str, Rule | None, str], bool]
"""(source description, rule or None, error text) -> whether to keep visiting."""


class RBACAuthorizer:
    """Authorizes by the RBAC objects a reader holds."""

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def role_rules(self, ref: Mapping[str, Any], namespace: str) -> tuple[Sequence[Rule], str]:
        """GetRoleReferenceRules: the rules of the role a binding names, or the NotFound text."""
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "Role":
            role = self._reader.peek("Role", namespace, name)
            if role is None:
                return (), f'role.rbac.authorization.k8s.io "{name}" not found'
        elif kind == "ClusterRole":
            role = self._reader.peek("ClusterRole", "", name)
            if role is None:
                return (), f'clusterrole.rbac.authorization.k8s.io "{name}" not found'
        else:
            return (), f'unsupported role reference kind: "{kind}"'
        rules = role.get("rules")
        return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else [], ""

    def visit_rules(self, user: UserInfo, namespace: str, visit: Visitor) -> None:
        """VisitRulesFor: the rules of every ClusterRoleBinding that applies to `user`, then of the
        RoleBindings of `namespace`, each with the text naming where it came from."""
        for binding in self._reader.scan("ClusterRoleBinding"):
            if not self._visit_binding(binding, user, "", visit):
                return
        if namespace:
            for binding in self._reader.scan("RoleBinding", namespace):
                if not self._visit_binding(binding, user, namespace, visit):
                    return

    def _visit_binding(self, binding: Mapping[str, Any], user: UserInfo, namespace: str, visit: Visitor) -> bool:
        subjects = binding.get("subjects") or []
        subject = next((s for s in subjects if isinstance(s, Mapping) and applies_to(user, s, namespace)), None)
        if subject is None:
            return True
        ref = binding.get("roleRef") or {}
        rules, error = self.role_rules(ref, namespace)
        if error:
            return visit("", None, error)
        name = binding["metadata"]["name"]
        if namespace:
            source = (f'RoleBinding "{name}/{namespace}" of {ref.get("kind")} "{ref.get("name")}" to '
                      f"{describe_subject(subject, namespace)}")
        else:
            source = (f'ClusterRoleBinding "{name}" of {ref.get("kind")} "{ref.get("name")}" to '
                      f"{describe_subject(subject, '')}")
        return all(visit(source, rule, "") for rule in rules)

    def authorize(self, attrs: Attributes) -> tuple[str, str]:
        """(decision, reason): "allow" with `RBAC: allowed by ...`, else "no-opinion" with the
        resolution errors met (a binding to a missing role), as upstream."""
        allowed: list[str] = []
        errors: list[str] = []

        def visit(source: str, rule: Rule | None, error: str) -> bool:
            if rule is not None and rule_allows(attrs, rule):
                allowed.append(f"RBAC: allowed by {source}")
                return False
            if error:
                errors.append(error)
            return True

        self.visit_rules(attrs.user, attrs.namespace, visit)
        if allowed:
            return ALLOW, allowed[0]
        return NO_OPINION, f"RBAC: {_aggregate(errors)}" if errors else ""

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """RulesFor: every rule that applies to `user` in `namespace` and the resolution errors
        (a SelfSubjectRulesReview's answer)."""
        rules: list[Rule] = []
        errors: list[str] = []

        def visit(_source: str, rule: Rule | None, error: str) -> bool:
            if rule is not None:
                rules.append(rule)
            if error:
                errors.append(error)
            return True

        self.visit_rules(user, namespace, visit)
        return rules, errors


def _aggregate(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate's text: one error as is, several as `[a, b]`."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


ALLOW, DENY, NO_OPINION = "allow", "deny", "no-opinion"
