"""`POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`: the TokenRequest subresource.

Why as kube-apiserver answers it (pkg/registry/core/serviceaccount/storage/token.go, authentication
validation ValidateTokenRequest, SetDefaults_TokenRequestSpec): `kubectl create token`, the kubelet's
projected tokens and client-go's TokenRequest callers read its answer and its refusals. The request is
checked in upstream's order (name and namespace match, the service account exists, the uid, then
defaults, validation, the bound object: a Pod of the same service account, also naming the pod's node;
a Node; a Secret), then signed (authn/serviceaccount.py) and answered with the request, its defaults
filled in, and status {token, expirationTimestamp}, its metadata naming the service account (uid included) and
the fields the request set as an Update of subresource token by its field manager (as upstream's
create handler records them). kube-apiserver's --service-account-extend-token-
expiration (on by default) is kept: a pod-bound token of the API's audiences asked for 3607 s is valid a
year and warns after 3607 s. Not served: tokens bound to webhook configurations (attestations) and a
--service-account-max-token-expiration (nodeagent has none). Nothing is stored. The path and the
TokenRequest schema are in the OpenAPI documents as upstream lists them (schema/openapi.py). Pure: lookups, signer
and time are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeagent.apiserver.authn import serviceaccount as sa_tokens
from nodeagent.apiserver.errors import APIError, bad_request, invalid, not_found
from nodeagent.store.meta import rfc3339

AUTHN = "authentication.k8s.io"
_REF_KEYS = ("kind", "apiVersion", "name", "uid")  # BoundObjectReference's fields, in its order
_KINDS = {"Pod": ("Pod", "pods", True), "Node": ("Node", "nodes", False), "Secret": ("Secret", "secrets", True)}


def _md(obj: Mapping[str, Any] | None, key: str) -> str:
    return str(((obj or {}).get("metadata") or {}).get(key) or "")


def _conflict(group: str, resource: str, name: str, text: str) -> APIError:
    qualified = f"{resource}.{group}" if group else resource
    details = {"name": name, "group": group, "kind": resource} if group else {"name": name, "kind": resource}
    return APIError(409, "Conflict", f'Operation cannot be fulfilled on {qualified} "{name}": {text}',
                    details=details)


@dataclass(frozen=True)
class Issued:
    """The TokenRequest answered (status filled) and the warnings to send with it."""

    answer: dict[str, Any]
    warnings: tuple[str, ...] = ()


def _spec(body: Mapping[str, Any]) -> tuple[dict[str, Any], list[str], int, Mapping[str, Any] | None]:
    spec = body.get("spec")
    spec = dict(spec) if isinstance(spec, Mapping) else {}
    audiences = spec.get("audiences")
    auds = [str(a) for a in audiences] if isinstance(audiences, list) else []
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = sa_tokens.DEFAULT_EXPIRATION
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise bad_request("spec.expirationSeconds: must be an integer")
    ref = spec.get("boundObjectRef")
    return spec, auds, seconds, ref if isinstance(ref, Mapping) else None


def create(namespace: str, name: str, body: Any, *, get: sa_tokens.ObjectGetter, signer: sa_tokens.Signer,
           now: float, api_audiences: Sequence[str] = sa_tokens.API_AUDIENCES, extend_expiration: bool = True,
           new_jti: Callable[[], str] = sa_tokens.new_jti, manager: str = "unknown",
           admit: Callable[[Mapping[str, Any]], None] | None = None) -> Issued:
    """TokenREST.Create for service account `name` in `namespace` (`admit` sees the request first, as
    kube-apiserver's admission does)."""
    if not isinstance(body, Mapping):
        raise bad_request("the body of the request is not a TokenRequest")
    if admit is not None:  # mutating admission (NodeRestriction) runs before the REST create
        admit(body)
    meta = body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {}
    req_name, req_ns, req_uid = (str((meta or {}).get(k) or "") for k in ("name", "namespace", "uid"))
    if req_name and req_name != name:
        raise invalid(AUTHN, "TokenRequest", name, [
            ("metadata.name", f'Invalid value: "{req_name}": must match the service account name if specified')])
    if req_ns and req_ns != namespace:
        raise invalid(AUTHN, "TokenRequest", name, [
            ("metadata.namespace", f'Invalid value: "{req_ns}": must match the service account namespace if '
                                   "specified")])
    account = get("ServiceAccount", namespace, name)
    if account is None:
        raise not_found("", "serviceaccounts", name)
    sa_uid = _md(account, "uid")
    if req_uid and req_uid != sa_uid:  # TokenRequestServiceAccountUIDValidation, beta and on in 1.37
        raise _conflict(AUTHN, "TokenRequest", name, f"the UID in the token request ({req_uid}) does not match the "
                                                     f"UID of the service account ({sa_uid})")
    spec, audiences, seconds, ref = _spec(body)
    # the fields the request set (expirationSeconds defaulted at decoding), as the managed fields of the
    # answer say (kube-apiserver's create handler records them before the REST create defaults audiences)
    owned: dict[str, Any] = {"f:audiences": {}} if audiences else {}
    if ref is not None:
        owned["f:boundObjectRef"] = {f"f:{k}": {} for k in sorted(_REF_KEYS) if ref.get(k)}
    owned["f:expirationSeconds"] = {}
    if not audiences:
        audiences = list(api_audiences)
    bound_ref = None if ref is None else {k: str(ref[k]) for k in _REF_KEYS if ref.get(k)}
    # the fields TokenRequestSpec has, in its order (unknown ones are dropped, as decoding into it drops them)
    spec = {"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": bound_ref,
            **({"attestations": spec["attestations"]} if spec.get("attestations") else {})}
    errors = []
    if seconds < sa_tokens.MIN_EXPIRATION:
        errors.append(("spec.expirationSeconds", f"Invalid value: {seconds}: may not specify a duration less than "
                                                 "10 minutes"))
    if seconds > 1 << 32:
        errors.append(("spec.expirationSeconds", f"Invalid value: {seconds}: may not specify a duration larger "
                                                 "than 2^32 seconds"))
    if spec.get("attestations"):
        errors = [("spec.attestations", "Invalid value: \"object\": attestations may only be specified with a "
                                        "webhook bound object reference")]
    if errors:
        err = invalid(AUTHN, "TokenRequest", "", errors)
        err.details.pop("name", None)  # StatusDetails.name is omitempty
        raise err
    created = rfc3339(now)
    answer: dict[str, Any] = {
        "kind": "TokenRequest", "apiVersion": f"{AUTHN}/v1",
        "metadata": {"name": name, "namespace": namespace, "uid": sa_uid, "creationTimestamp": created,
                     "managedFields": [{"manager": manager, "operation": "Update", "apiVersion": f"{AUTHN}/v1",
                                        "time": created, "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:spec": owned}, "subresource": "token"}]},
        "spec": spec,
    }
    bound = _bound(namespace, name, ref, get)
    warn_after = 0
    expiry = seconds
    if (extend_expiration and bound.pod is not None and seconds == sa_tokens.WARN_ONLY_EXPIRATION
            and all(a in api_audiences for a in audiences)):
        warn_after, expiry = seconds, sa_tokens.EXTENDED_EXPIRATION
    claims = sa_tokens.claims(account, bound, audiences=audiences, expiration=expiry, now=now, jti=new_jti(),
                              warn_after=warn_after)
    answer["status"] = {"token": signer.sign(claims), "expirationTimestamp": rfc3339(int(now) + seconds)}
    return Issued(answer)


def _bound(namespace: str, name: str, ref: Mapping[str, Any] | None, get: sa_tokens.ObjectGetter) -> sa_tokens.Bound:
    if ref is None:
        return sa_tokens.Bound()
    api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    ref_name, ref_uid = str(ref.get("name") or ""), str(ref.get("uid") or "")
    if group or kind not in _KINDS:
        version = api_version.rpartition("/")[2]
        raise bad_request(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
    store_kind, plural, namespaced = _KINDS[kind]
    obj = get(store_kind, namespace if namespaced else "", ref_name)
    if obj is None:
        raise not_found("", plural, ref_name)
    if kind == "Pod":
        if name != str((obj.get("spec") or {}).get("serviceAccountName") or ""):
            raise bad_request(f'cannot bind token for serviceaccount "{name}" to pod running with different '
                              "serviceaccount name.")
        node_name = str((obj.get("spec") or {}).get("nodeName") or "")
        node = None
        if node_name:  # ServiceAccountTokenPodNodeInfo: a node gone is named without a uid
            node = get("Node", "", node_name) or {"metadata": {"name": node_name}}
        bound = sa_tokens.Bound(pod=obj, node=node)
    elif kind == "Node":
        bound = sa_tokens.Bound(node=obj)
    else:
        bound = sa_tokens.Bound(secret=obj)
    if ref_uid and ref_uid != _md(obj, "uid"):
        raise _conflict("", kind, ref_name, f"the UID in the bound object reference ({ref_uid}) does not match the "
                                            "UID in record. The object might have been deleted and then recreated")
    return bound
