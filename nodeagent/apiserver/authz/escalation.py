"""RBAC's escalation check (k8s.io/kubernetes pkg/registry/rbac: escalation_check.go, the
policybased storages of roles, clusterroles and their bindings, validation.Covers and
CompactRules): a role or binding may grant only what its writer holds.

Why: the authorizer lets whoever may write Roles or RoleBindings write them; without this check
such a user could grant itself cluster-admin. system:masters may grant anything; a writer allowed
the `escalate` verb on the role (or `bind` on the role a binding names) too; anyone else must hold
every rule granted, or is refused with upstream's text listing what it lacks. Pure: no I/O beyond
the authorizer's reader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.apiserver.authn.user import SYSTEM_PRIVILEGED_GROUP, UserInfo
from nodeagent.apiserver.authz.attributes import Attributes
from nodeagent.apiserver.authz.chain import Authorizer

Rule = Mapping[str, Any]
FULL_AUTHORITY: tuple[Rule, ...] = ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                                    {"verbs": ["*"], "nonResourceURLs": ["*"]})


def _list(rule: Rule, key: str) -> list[str]:
    value = rule.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def _breakdown(rule: Rule) -> list[dict[str, list[str]]]:
    """BreakdownRule: one verb and one group, resource (and name) or URL per sub-rule."""
    out: list[dict[str, list[str]]] = []
    for group in _list(rule, "apiGroups"):
        for resource in _list(rule, "resources"):
            for verb in _list(rule, "verbs"):
                names = _list(rule, "resourceNames")
                if names:
                    out += [{"apiGroups": [group], "resources": [resource], "verbs": [verb], "resourceNames": [n]}
                            for n in names]
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    for url in _list(rule, "nonResourceURLs"):
        for verb in _list(rule, "verbs"):
            out.append({"nonResourceURLs": [url], "verbs": [verb]})
    return out


def _resources_cover(owner: list[str], wanted: list[str]) -> bool:
    if "*" in owner or all(r in owner for r in wanted):
        return True
    for path in wanted:
        if path in owner:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owner:
            return False
    return True


def _urls_cover(owner: list[str], wanted: list[str]) -> bool:
    return all(any(o == w or (o.endswith("*") and w.startswith(o.rstrip("*"))) for o in owner) for w in wanted)


def _covers(owner: Rule, sub: Mapping[str, list[str]]) -> bool:
    """ruleCovers: every attribute of the sub-rule is within the owner rule."""
    verbs, groups = _list(owner, "verbs"), _list(owner, "apiGroups")
    if "*" not in verbs and not all(v in verbs for v in sub.get("verbs", [])):
        return False
    if "*" not in groups and not all(g in groups for g in sub.get("apiGroups", [])):
        return False
    if not _resources_cover(_list(owner, "resources"), sub.get("resources", [])):
        return False
    if not _urls_cover(_list(owner, "nonResourceURLs"), sub.get("nonResourceURLs", [])):
        return False
    names, wanted = _list(owner, "resourceNames"), sub.get("resourceNames", [])
    return (not names) if not wanted else (not names or all(n in names for n in wanted))


def missing_rules(owner: Sequence[Rule], rules: Sequence[Rule]) -> list[dict[str, list[str]]]:
    """validation.Covers: the sub-rules of `rules` no owner rule covers."""
    return [sub for rule in rules for sub in _breakdown(rule) if not any(_covers(o, sub) for o in owner)]


def _compact(rules: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
    """CompactRules: simple rules of one group and resource (and at most one name) merge their verbs."""
    out: list[dict[str, list[str]]] = []
    simple: dict[tuple[str, str, str], dict[str, list[str]]] = {}
    for rule in rules:
        if len(rule.get("resourceNames", [])) > 1 or rule.get("nonResourceURLs") \
                or len(rule.get("apiGroups", [])) != 1 or len(rule.get("resources", [])) != 1:
            out.append(rule)
            continue
        key = (rule["apiGroups"][0], rule["resources"][0], (rule.get("resourceNames") or [""])[0])
        if key in simple:
            simple[key]["verbs"] = simple[key]["verbs"] + rule["verbs"]
        else:
            simple[key] = {k: list(v) for k, v in rule.items()}
    return out + list(simple.values())


def _go_quoted(values: list[str]) -> str:
    """Go's %q of a []string: `["a" "b"]`."""
    return "[" + " ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def compact_string(rule: Mapping[str, list[str]]) -> str:
    """rbacv1helpers.CompactString."""
    parts = [f"{label}:{_go_quoted(rule[key])}" for key, label in (
        ("apiGroups", "APIGroups"), ("resources", "Resources"), ("nonResourceURLs", "NonResourceURLs"),
        ("resourceNames", "ResourceNames"), ("verbs", "Verbs")) if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def confirm_no_escalation(authz: Authorizer, user: UserInfo, namespace: str, rules: Sequence[Rule]) -> str:
    """ConfirmNoEscalation: "" when `user`'s RBAC rules in `namespace` cover `rules`, else upstream's text."""
    owner, errors = authz.rbac.rules_for(user, namespace)
    missing = missing_rules(owner, rules)
    if not missing:
        return ""
    described = sorted({compact_string(r) for r in _compact(missing)})
    groups = "[" + " ".join(f'"{g}"' for g in user.groups) + "]"
    text = (f'user "{user.name}" (groups={groups}) is attempting to grant RBAC permissions not currently held:\n'
            + "\n".join(described))
    if errors:
        text += "; resolution errors: [" + " ".join(errors) + "]"
    return text


def check_write(authz: Authorizer, user: UserInfo, kind: str, namespace: str, name: str,
                obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> str:
    """The refusal text for `user` writing the RBAC object `obj` ("" when allowed)."""
    if SYSTEM_PRIVILEGED_GROUP in user.groups:
        return ""
    group = "rbac.authorization.k8s.io"
    if kind in ("Role", "ClusterRole"):
        plural = "roles" if kind == "Role" else "clusterroles"
        if authz.authorize(Attributes(user, "escalate", True, namespace=namespace, api_group=group, api_version="*",
                                      resource=plural, name=name)).allowed:
            return ""
        own: list[Rule] = [r for r in obj.get("rules") or [] if isinstance(r, Mapping)]
        refusal = confirm_no_escalation(authz, user, namespace, own)
        if refusal:
            return refusal
        aggregated = obj.get("aggregationRule") is not None or (old is not None and old.get("aggregationRule"))
        if kind == "ClusterRole" and aggregated and confirm_no_escalation(authz, user, namespace, FULL_AUTHORITY):
            return "must have cluster-admin privileges to use the aggregationRule"
        return ""
    raw_ref = obj.get("roleRef")
    ref: Mapping[str, Any] = raw_ref if isinstance(raw_ref, Mapping) else {}
    ref_kind, ref_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
    if ref_kind not in ("Role", "ClusterRole"):
        return ""
    if authz.authorize(Attributes(user, "bind", True, namespace=namespace, api_group=str(ref.get("apiGroup") or ""),
                                  api_version="*", resource="roles" if ref_kind == "Role" else "clusterroles",
                                  name=ref_name)).allowed:
        return ""
    rules, error = authz.rbac.role_rules(ref, namespace)
    if error:
        return error
    return confirm_no_escalation(authz, user, namespace, rules)
