"""The `authorizer` variable of admission-policy CEL (k8s.io/apiserver pkg/cel/library/authz.go):
`authorizer.group(g).resource(r)[.subresource(s)][.namespace(n)][.name(x)].check(verb)`,
`authorizer.path(p).check(verb)`, `authorizer.serviceAccount(ns, name)`, `authorizer.requestResource`,
and a decision's `allowed()`, `reason()`, `errored()`, `error()`, asking the API server's authorizer.

Why values are maps: nodeagent's CEL package converts only plain values, and a member call `x.f(y)`
is the function `f(x, y)`, so each step is a map tagged with what it is (`__authz`), and the library's
functions take and give such maps. A map's keys can be read by an expression (upstream's values are
opaque): an intended difference no policy relies on. Pure apart from the injected authorize call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Authorize = Callable[[Mapping[str, Any], str], tuple[bool, str]]
"""(a path or resource check, verb) -> (allowed, reason)."""
KEY = "__authz"


def value(user: str, uid: str, groups: Sequence[str], extra: Mapping[str, Sequence[str]], group: str,
          resource: str, subresource: str, namespace: str, name: str) -> dict[str, Any]:
    """The `authorizer` variable for a request's user, with `requestResource` for its resource."""
    who = {"user": user, "uid": uid, "groups": list(groups), "extra": {k: list(v) for k, v in extra.items()}}
    request_resource = {KEY: "resource", **who, "group": group, "resource": resource, "subresource": subresource,
                        "namespace": namespace, "name": name}
    return {KEY: "authorizer", **who, "requestResource": request_resource}


def functions(authorize: Authorize) -> dict[str, Callable[..., Any]]:
    """The library's functions over the tagged maps (a wrong receiver is `no such overload`)."""

    def want(obj: Any, *kinds: str) -> Mapping[str, Any]:
        if not isinstance(obj, Mapping) or obj.get(KEY) not in kinds:
            raise TypeError("no such overload")
        return obj

    def step(kinds: tuple[str, ...], new_kind: str, key: str) -> Callable[[Any, Any], dict[str, Any]]:
        def call(obj: Any, arg: Any) -> dict[str, Any]:
            base = want(obj, *kinds)
            if not isinstance(arg, str):
                raise TypeError("no such overload")
            return {**base, KEY: new_kind, key: arg}
        return call

    def resource(obj: Any, arg: Any) -> dict[str, Any]:
        base = step(("group",), "resource", "resource")(obj, arg)
        return {"subresource": "", "namespace": "", "name": "", **base}

    def service_account(obj: Any, namespace: Any, name: Any) -> dict[str, Any]:
        want(obj, "authorizer")
        user = f"system:serviceaccount:{namespace}:{name}"
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]
        return {KEY: "authorizer", "user": user, "uid": "", "groups": groups, "extra": {}}

    def check(obj: Any, verb: Any) -> dict[str, Any]:
        target = want(obj, "path", "resource")
        if not isinstance(verb, str):
            raise TypeError("no such overload")
        allowed, reason = authorize(target, verb)
        return {KEY: "decision", "allowed": allowed, "reason": reason}

    def decision(field: str) -> Callable[[Any], Any]:
        return lambda obj: want(obj, "decision")[field]

    return {
        "path": step(("authorizer",), "path", "path"),
        "group": step(("authorizer",), "group", "group"),
        "resource": resource,
        "subresource": step(("resource",), "resource", "subresource"),
        "namespace": step(("resource",), "resource", "namespace"),
        "name": step(("resource",), "resource", "name"),
        "serviceAccount": service_account,
        "check": check,
        "allowed": decision("allowed"),
        "reason": decision("reason"),
        "errored": lambda obj: want(obj, "decision") and False,
        "error": lambda obj: want(obj, "decision") and "",
    }
