"""Whether a policy's matchConstraints or a binding's matchResources select a request, as
k8s.io/apiserver pkg/admission/plugin/policy/matching and webhook/predicates (rules, namespace,
object) decide it.

One responsibility: rules, scopes, selectors, exclusions and matchPolicy Equivalent over plain
request facts. It reads no store: the namespace's labels and the equivalent resources come in
as arguments. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.store.selectors import from_label_selector


@dataclass(frozen=True)
class GVR:
    """A group, version and resource (with the kind served there)."""

    group: str
    version: str
    resource: str
    kind: str = ""


@dataclass(frozen=True)
class Request:
    """The admission attributes a match reads."""

    operation: str
    resource: GVR
    subresource: str
    namespace: str
    name: str
    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None


class MatchError(Exception):
    """A match that could not be decided (a namespace that is gone): the policy's failurePolicy applies."""

    def __init__(self, message: str, status: Any = None) -> None:
        super().__init__(message)
        self.status = status


NamespaceLabels = Callable[[str], Mapping[str, str] | None]
"""The labels of a namespace by name; None when it does not exist."""
Equivalents = Callable[[GVR, str], Sequence[GVR]]
"""The resources equivalent to one (the same storage, other versions or groups), itself included."""

NAMESPACES = GVR("", "v1", "namespaces")


def _exact_or_wildcard(items: Sequence[str], requested: str) -> bool:
    return "*" in items or requested in items


def _rule_matches(rule: Mapping[str, Any], req: Request, resource: GVR) -> bool:
    """rules.Matcher.Matches: scope, operation, group, version, resource/subresource."""
    scope = rule.get("scope") or "*"
    is_namespace = (resource.group, resource.version, resource.resource) == ("", "v1", "namespaces")
    if scope == "Namespaced" and (is_namespace or not req.namespace):
        return False
    if scope == "Cluster" and not (is_namespace or not req.namespace):
        return False
    if scope not in ("*", "Namespaced", "Cluster"):
        return False
    ops = rule.get("operations") or ()
    if "*" not in ops and req.operation not in ops:
        return False
    if not _exact_or_wildcard(rule.get("apiGroups") or (), resource.group):
        return False
    if not _exact_or_wildcard(rule.get("apiVersions") or (), resource.version):
        return False
    for item in rule.get("resources") or ():
        res, _, sub = str(item).partition("/")
        if (res == "*" or res == resource.resource) and (sub == "*" or sub == req.subresource):
            return True
    return False


def _named(rule: Mapping[str, Any], name: str) -> bool:
    names = rule.get("resourceNames") or ()
    return not names or name in names


def _rules_match(rules: Sequence[Mapping[str, Any]], match_policy: str, req: Request,
                 equivalents: Equivalents) -> GVR | None:
    """matchesResourceRules: the resource (and kind) matched, the request's own first; with
    matchPolicy Equivalent, an equivalent resource a rule names."""
    for rule in rules:
        if _rule_matches(rule, req, req.resource) and _named(rule, req.name):
            return req.resource
    if match_policy != "Equivalent":
        return None
    for rule in rules:
        for other in equivalents(req.resource, req.subresource):
            if other == req.resource:
                continue
            if _rule_matches(rule, req, other) and _named(rule, req.name):
                return other
    return None


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, str] | None:
    if obj is None:
        return None
    return (obj.get("metadata") or {}).get("labels") or {}


def matches(criteria: Mapping[str, Any], req: Request, namespace_labels: NamespaceLabels,
            equivalents: Equivalents) -> GVR | None:
    """Matcher.Matches: the matched resource, or None. Raises MatchError when the namespace a
    namespaceSelector needs is gone (after the rules matched, as upstream orders it)."""
    ns_error: MatchError | None = None
    ns_selector = from_label_selector(criteria.get("namespaceSelector") or {})
    if not ns_selector.empty and (req.namespace or req.resource.resource == "namespaces"):
        labels: Mapping[str, str] | None
        if req.resource.resource == "namespaces" and not req.subresource and req.operation in ("CREATE", "UPDATE"):
            labels = _labels(req.object)
        else:
            labels = namespace_labels(req.namespace)
            if labels is None:
                ns_error = MatchError(f'namespaces "{req.namespace}" not found',
                                      status=("", "namespaces", req.namespace))
        if ns_error is None and not ns_selector.matches(labels):
            return None
    obj_selector = from_label_selector(criteria.get("objectSelector") or {})
    if not obj_selector.empty:
        new, old = _labels(req.object), _labels(req.old_object)
        if not ((new is not None and obj_selector.matches(new)) or (old is not None and obj_selector.matches(old))):
            return None
    policy = str(criteria.get("matchPolicy") or "Exact")
    excluded = criteria.get("excludeResourceRules") or ()
    if excluded and _rules_match(excluded, policy, req, equivalents) is not None:
        return None
    rules = criteria.get("resourceRules") or ()
    found = req.resource if not rules else _rules_match(rules, policy, req, equivalents)
    if found is None:
        return None
    if ns_error is not None:
        raise ns_error
    return found
