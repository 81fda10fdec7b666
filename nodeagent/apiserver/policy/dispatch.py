"""The ValidatingAdmissionPolicy admission plugin: every stored binding's policy is matched
against a write and its CEL validations evaluated, as k8s.io/apiserver
pkg/admission/plugin/policy/validating (dispatcher.go, validator.go) does in kube-apiserver v1.37.2.

What it does, in upstream's order: policies that have bindings (a binding naming no stored policy
is ignored; policies and bindings in name order, where upstream's is its informer's) are matched
by matchConstraints, then each binding by its matchResources; the params come from paramRef
(by name or selector, namespaced params from the request's namespace unless paramRef names one;
parameterNotFoundAction Deny refuses when none is found); matchConditions, then the validations
(variables composited lazily, messageExpression, message, reason), are evaluated per param
(evaluation.py, imported with the first binding that matches: the CEL is no part of a start).
Failures become Deny (the request's 4xx: `ValidatingAdmissionPolicy 'P' with binding 'B' denied
request: MESSAGE`, the reason's code, Invalid by default), Warn (a Warning header:
`Validation failed for ValidatingAdmissionPolicy 'P' with binding 'B': MESSAGE`) or Audit
(nodeagent keeps no audit log: logged at info level instead). An expression that fails to
evaluate, or a binding that cannot be configured, follows the policy's failurePolicy.
Intended differences, written down: the `authorizer` variable's values are tagged maps
(policy/authorizer.py); auditAnnotations are checked for errors and otherwise only logged; the
runtime cost budget is not enforced.

Where it runs: the HTTP edge hands every write of a client (create, update, patch, delete) here
after the kind's validation, as upstream's validating admission runs after the strategy. The
embedded controllers write in process and are not checked (they write what kube-controller-manager
would, and upstream's policies exempt nothing of theirs on purpose either: a policy that refuses
a controller's write makes that controller retry here as there, so keeping them out only changes
what a misconfigured policy breaks). Reads the store only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeagent.apiserver.catalog import Catalog, Resource
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.policy import authorizer as authz_library
from nodeagent.apiserver.policy import matching
from nodeagent.store.selectors import from_label_selector

logger = logging.getLogger(__name__)

Obj = Mapping[str, Any]
POLICY, BINDING = "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"
EXEMPT_KINDS = frozenset({"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", POLICY, BINDING,
                          "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"})
REASON_CODES = {"Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413, "Unauthorized": 401}


@dataclass(frozen=True)
class Attributes:
    """One request as admission sees it (admission.Attributes): objects in the request's version."""

    operation: str
    resource: Resource
    subresource: str
    namespace: str
    name: str
    object: Obj | None
    old_object: Obj | None
    user: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, Sequence[str]] = field(default_factory=dict)
    dry_run: bool = False
    options: Obj | None = None


@dataclass
class _Denial:
    policy: str
    binding: str
    message: str
    reason: str = ""


class PolicyAdmission:
    """The plugin over the store's policies and bindings; `admit` answers the warnings or raises
    the refusal (APIError)."""

    def __init__(self, store: Any, catalog: Catalog, to_version: Callable[[Obj, str], Obj],
                 authorize: authz_library.Authorize | None = None) -> None:
        self._store = store
        self._catalog = catalog
        self._to_version = to_version
        self._functions = authz_library.functions(authorize or (lambda _target, _verb: (True, "")))

    def active(self) -> bool:
        """Whether any binding is stored (nothing to do otherwise: the common case costs a count)."""
        return bool(self._store.count(BINDING))

    def admit(self, attrs: Attributes) -> tuple[list[str], APIError | None]:
        """The warnings of the request, and its refusal (None when admitted): the Warn bindings'
        warnings are sent with a refusal too, as upstream's warning recorder does."""
        if attrs.resource.group == "admissionregistration.k8s.io" and attrs.resource.kind in EXEMPT_KINDS:
            return [], None
        bindings = sorted(self._store.scan(BINDING), key=_name)
        if not bindings:
            return [], None
        by_policy: dict[str, list[Obj]] = {}
        for binding in bindings:
            by_policy.setdefault(str((binding.get("spec") or {}).get("policyName") or ""), []).append(binding)
        req = matching.Request(attrs.operation, _gvr(attrs.resource), attrs.subresource, attrs.namespace,
                               attrs.name, attrs.object, attrs.old_object)
        denials: list[_Denial] = []
        warnings: list[str] = []
        for policy_name in sorted(by_policy):
            policy = self._store.peek(POLICY, "", policy_name)
            if policy is not None:
                self._dispatch(policy, by_policy[policy_name], attrs, req, denials, warnings)
        return warnings, (_refusal(attrs, denials[0]) if denials else None)

    # --- one policy ---

    def _dispatch(self, policy: Obj, bindings: Sequence[Obj], attrs: Attributes, req: matching.Request,
                  denials: list[_Denial], warnings: list[str]) -> None:
        spec = policy.get("spec") or {}
        pname = _name(policy)
        failure = str(spec.get("failurePolicy") or "Fail")

        def config_error(message: str, binding: str = "") -> None:
            if failure == "Ignore":
                return
            prefix = "failed to configure binding: " if binding else "failed to configure policy: "
            if failure != "Fail":
                denials.append(_Denial(pname, binding, f"unrecognized failure policy: '{failure}'"))
                return
            denials.append(_Denial(pname, binding, prefix + message))

        try:
            matched = matching.matches(spec.get("matchConstraints") or {}, req, self._namespace_labels,
                                       self._equivalents)
        except matching.MatchError as err:
            config_error(str(err))
            return
        if matched is None:
            return
        param_res, param_error = self._param_resource(spec.get("paramKind"))
        if param_error:
            config_error(param_error)
            return
        for binding in bindings:
            bname = _name(binding)
            bspec = binding.get("spec") or {}
            match_resources = bspec.get("matchResources")
            if match_resources is not None:
                try:
                    if matching.matches(match_resources, req, self._namespace_labels, self._equivalents) is None:
                        continue
                except matching.MatchError as err:
                    config_error(str(err), bname)
                    continue
            try:
                params = self._params(spec.get("paramKind"), param_res, bspec.get("paramRef"), attrs.namespace)
            except _ParamError as err:
                config_error(str(err), bname)
                continue
            obj, old = attrs.object, attrs.old_object
            if matched != req.resource and matched.kind:
                api_version = f"{matched.group}/{matched.version}" if matched.group else matched.version
                obj = None if obj is None else self._to_version(obj, api_version)
                old = None if old is None else self._to_version(old, api_version)
            namespace_obj = self._namespace_object(attrs)
            from nodeagent.apiserver.policy import evaluation  # with the first match: the CEL (evaluation.py)

            for param in params:
                decisions, refused = evaluation.evaluate(spec, attrs, matched, obj, old, param, namespace_obj,
                                                         failure, self._functions)
                for message, reason in decisions:
                    self._act(bspec, pname, bname, message, reason, denials, warnings)
                denials.extend(_Denial(pname, bname, message) for message in refused)

    def _act(self, bspec: Obj, pname: str, bname: str, message: str, reason: str, denials: list[_Denial],
             warnings: list[str]) -> None:
        for action in bspec.get("validationActions") or ():
            if action == "Deny":
                denials.append(_Denial(pname, bname, message, reason))
            elif action == "Warn":
                warnings.append(f"Validation failed for ValidatingAdmissionPolicy '{pname}' with binding "
                                f"'{bname}': {message}")
            elif action == "Audit":
                logger.info("validating admission policy audit policy=%s binding=%s message=%s", pname, bname,
                            message)

    # --- the store's facts ---

    def _namespace_labels(self, name: str) -> Mapping[str, str] | None:
        ns = self._store.peek("Namespace", "", name)
        if ns is None:
            return None
        return (ns.get("metadata") or {}).get("labels") or {}

    def _namespace_object(self, attrs: Attributes) -> Obj | None:
        """namespaceObject: the request's namespace (none for a Namespace itself), with the fields
        CreateNamespaceObject keeps."""
        if not attrs.namespace or (attrs.resource.kind == "Namespace" and not attrs.resource.group):
            return None
        ns = self._store.peek("Namespace", "", attrs.namespace)
        if ns is None:
            return None
        md = ns.get("metadata") or {}
        kept = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "finalizers")
        return {"metadata": {k: md[k] for k in kept if k in md}, "spec": ns.get("spec") or {},
                "status": ns.get("status") or {}}

    def _equivalents(self, gvr: matching.GVR, subresource: str) -> list[matching.GVR]:
        """Every served version of the same stored kind (upstream's EquivalentResourceMapper: the
        resources that share one storage), with `subresource` where it is served."""
        own = self._catalog.find(gvr.group, gvr.version, gvr.resource)
        if own is None:
            return [gvr]
        out = [gvr]
        for res in self._catalog:
            if res.store_kind == own.store_kind and res.stored and (res.group, res.version) != (gvr.group, gvr.version):
                if subresource and subresource not in res.subresources:
                    continue
                out.append(_gvr(res))
        return out

    def _param_resource(self, param_kind: Obj | None) -> tuple[Resource | None, str]:
        if param_kind is None:
            return None, ""
        api_version, kind = str(param_kind.get("apiVersion") or ""), str(param_kind.get("kind") or "")
        res = self._catalog.for_kind(api_version, kind)
        if res is None:
            group, _, version = api_version.rpartition("/")
            return None, f"failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
        return res, ""

    def _params(self, param_kind: Obj | None, res: Resource | None, ref: Obj | None,
                namespace: str) -> list[Obj | None]:
        """generic.CollectParams: [None] without a paramKind or paramRef, else the params found."""
        if param_kind is None or ref is None or res is None:
            return [None]
        ns = ""
        if res.namespaced:
            ns = str(ref.get("namespace") or "") or namespace
            if not ns:
                raise _ParamError("cannot use namespaced paramRef in policy binding that matches cluster-scoped "
                                  "resources")
        elif ref.get("namespace"):
            raise _ParamError("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
        name, selector = ref.get("name"), ref.get("selector")
        found: list[Obj]
        if name:
            if selector is not None:
                raise _ParamError("paramRef.name and paramRef.selector are mutually exclusive")
            one = self._store.peek(res.store_kind, ns, str(name))
            found = [] if one is None else [one]
        elif selector is not None:
            sel = from_label_selector(selector)
            found = [o for o in self._store.scan(res.store_kind, ns if res.namespaced else None)
                     if sel.matches((o.get("metadata") or {}).get("labels") or {})]
        else:
            raise _ParamError("one of name or selector must be provided")
        if not found and ref.get("parameterNotFoundAction") == "Deny":
            raise _ParamError("no params found for policy binding with `Deny` parameterNotFoundAction")
        return [self._to_version(p, res.api_version) for p in found]


class _ParamError(Exception):
    pass


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _gvr(res: Resource) -> matching.GVR:
    return matching.GVR(res.group, res.version, res.plural, res.kind)


def _refusal(attrs: Attributes, denial: _Denial) -> APIError:
    """admission.NewForbidden with the decision's reason and code, and the message as a cause."""
    if denial.binding:
        message = (f"ValidatingAdmissionPolicy '{denial.policy}' with binding '{denial.binding}' denied request: "
                   f"{denial.message}")
    else:
        message = f"ValidatingAdmissionPolicy '{denial.policy}' denied request: {denial.message}"
    name = attrs.name
    if not name:
        md = (attrs.object or {}).get("metadata") or {}
        name = str(md.get("name") or md.get("generateName") or "Unknown")
    plural = attrs.resource.plural + (f"/{attrs.subresource}" if attrs.subresource else "")
    qualified = f"{plural}.{attrs.resource.group}" if attrs.resource.group else plural
    reason = denial.reason or "Invalid"
    details: dict[str, Any] = {"name": name}
    if attrs.resource.group:
        details["group"] = attrs.resource.group
    details["kind"] = plural
    details["causes"] = [{"message": message}]
    return APIError(REASON_CODES.get(reason, 500), reason, f'{qualified} "{name}" is forbidden: {message}',
                    details=details)
