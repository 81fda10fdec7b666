"""The CEL declarations of Kubernetes' admission expressions, for the type checker (checker.py).

Why one place: the API server's compile of a policy's expressions (admission.py: object, oldObject and
params dyn) and kube-controller-manager's type check of a policy (apiserver/policy/typecheck.py: object,
oldObject and params typed by the matched kinds' schemas) declare the same `request` and
`namespaceObject` message types, `authorizer`, and `variables` (a message type whose fields are the
composited variables' output types), as k8s.io/apiserver pkg/admission/plugin/cel (compile.go
BuildRequestType, BuildNamespaceType; composition.go) does. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodeagent.cel import checker as C
from nodeagent.cel import syntax

REQUEST, NAMESPACE, VARIABLES = "kubernetes.AdmissionRequest", "kubernetes.Namespace", "kubernetes.variables"


def request_types() -> dict[str, dict[str, C.Type]]:
    """BuildRequestType and BuildNamespaceType: the message types, by name."""
    s, strings = C.STRING, C.list_of(C.STRING)
    gvk, gvr = C.struct("kubernetes.GroupVersionKind"), C.struct("kubernetes.GroupVersionResource")
    return {
        "kubernetes.GroupVersionKind": {"group": s, "version": s, "kind": s},
        "kubernetes.GroupVersionResource": {"group": s, "version": s, "resource": s},
        "kubernetes.UserInfo": {"username": s, "uid": s, "groups": strings, "extra": C.map_of(s, strings)},
        REQUEST: {"kind": gvk, "resource": gvr, "subResource": s, "requestKind": gvk, "requestResource": gvr,
                  "requestSubResource": s, "name": s, "namespace": s, "operation": s,
                  "userInfo": C.struct("kubernetes.UserInfo"), "dryRun": C.BOOL, "options": C.DYN},
        "kubernetes.NamespaceSpec": {"finalizers": strings},
        "kubernetes.NamespaceCondition": {"status": s, "type": s, "lastTransitionTime": C.TIMESTAMP, "message": s,
                                          "reason": s},
        "kubernetes.NamespaceStatus": {"conditions": C.list_of(C.struct("kubernetes.NamespaceCondition")),
                                       "phase": s},
        "kubernetes.NamespaceMetadata": {
            "name": s, "generateName": s, "namespace": s, "labels": C.map_of(s, s), "annotations": C.map_of(s, s),
            "UID": s, "creationTimestamp": C.TIMESTAMP, "deletionGracePeriodSeconds": C.INT,
            "deletionTimestamp": C.TIMESTAMP, "generation": C.INT, "resourceVersion": s, "finalizers": strings},
        NAMESPACE: {"metadata": C.struct("kubernetes.NamespaceMetadata"), "spec": C.struct("kubernetes.NamespaceSpec"),
                    "status": C.struct("kubernetes.NamespaceStatus")},
    }


def declared(t: C.Type) -> C.Type:
    """convertCelTypeToDeclType: a variable's output type as its field's type (messages and the rest dyn)."""
    if t.kind == "list":
        return C.list_of(declared(t.params[0]))
    if t.kind == "map":
        return C.map_of(declared(t.params[0]), declared(t.params[1]))
    if t.kind in ("int", "uint", "double", "bool", "string", "bytes", "null", "timestamp", "duration"):
        return t
    return C.DYN


def env(object_type: C.Type, params: C.Type | None, *, authorizer: bool = True,
        variables: Mapping[str, C.Type] | None = None,
        structs: Mapping[str, Mapping[str, C.Type]] | None = None) -> C.Env:
    """The declarations of one expression: `params` None when the policy has no paramKind."""
    declared_vars: dict[str, C.Type] = {
        "object": object_type, "oldObject": object_type, "request": C.struct(REQUEST),
        "namespaceObject": C.struct(NAMESPACE), "variables": C.struct(VARIABLES)}
    if params is not None:
        declared_vars["params"] = params
    if authorizer:
        declared_vars["authorizer"] = C.DYN
        declared_vars["authorizer.requestResource"] = C.DYN
    all_structs: dict[str, Mapping[str, C.Type]] = {**request_types(), **(structs or {})}
    all_structs[VARIABLES] = dict(variables or {})
    return C.Env(declared_vars, all_structs)


def variable_types(base: C.Env, variables: Sequence[tuple[str, str]]) -> dict[str, C.Type]:
    """CompileAndStoreVariables: each variable's field type, in order (each sees those before it); a
    variable that does not compile is dyn. `base`'s `variables` message fields are filled in place."""
    fields = base.structs[VARIABLES]
    assert isinstance(fields, dict)
    for name, expression in variables:
        try:
            result = C.check(expression, base)
            fields[name] = declared(result.type) if not result.issues else C.DYN
        except syntax.ParseError:
            fields[name] = C.DYN
    return dict(fields)
