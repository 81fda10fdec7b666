"""Service-account tokens (authn/serviceaccount.py) and TokenRequest (tokenrequest.py), pure: claims and
checks as kube-apiserver's pkg/serviceaccount and serviceaccount/storage/token.go make them."""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives import serialization

from nodeagent.apiserver import tokenrequest
from nodeagent.apiserver.authn import serviceaccount as sat
from nodeagent.apiserver.authn.chain import Authenticator
from nodeagent.apiserver.authn.tokens import TokenTable
from nodeagent.apiserver.authz import noderestriction
from nodeagent.apiserver.errors import APIError

NOW = 1_800_000_000.0


@functools.cache
def _key() -> Any:
    return sat.new_private_key()


def _obj(kind: str, name: str, uid: str, namespace: str = "", **spec: Any) -> dict[str, Any]:
    md = {"name": name, "uid": uid, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": md, **({"spec": spec} if spec else {})}


class World:
    """A few stored objects and a clock: what the token checks read."""

    def __init__(self) -> None:
        self.now = NOW
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        for obj in (_obj("ServiceAccount", "drv", "sa-1", "ns"), _obj("ServiceAccount", "other", "sa-2", "ns"),
                    _obj("Pod", "p", "pod-1", "ns", serviceAccountName="drv", nodeName="n1"),
                    _obj("Node", "n1", "node-1"), _obj("Secret", "s", "sec-1", "ns")):
            self.add(obj)

    def add(self, obj: dict[str, Any]) -> None:
        md = obj["metadata"]
        self.objects[(obj["kind"], md.get("namespace", ""), md["name"])] = obj

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def issue(self, name: str = "drv", **spec: Any) -> dict[str, Any]:
        return tokenrequest.create("ns", name, {"spec": spec}, get=self.get, signer=sat.Signer(_key()),
                                   now=self.now, new_jti=lambda: "jti-1").answer

    def authenticator(self) -> sat.TokenAuthenticator:
        return sat.TokenAuthenticator([_key().public_key()], self.get, lambda: self.now)


def _payload(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return dict(orjson.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))))


def test_token_request_answer_and_claims() -> None:
    world = World()
    answer = world.issue(boundObjectRef={"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-1"})
    assert answer["metadata"] == {"name": "drv", "namespace": "ns", "uid": "sa-1",
                                  "creationTimestamp": "2027-01-15T08:00:00Z", "managedFields": [{
                                      "manager": "unknown", "operation": "Update",
                                      "apiVersion": "authentication.k8s.io/v1", "time": "2027-01-15T08:00:00Z",
                                      "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {
                                          "f:boundObjectRef": {"f:apiVersion": {}, "f:kind": {}, "f:name": {},
                                                               "f:uid": {}},
                                          "f:expirationSeconds": {}}}, "subresource": "token"}]}
    assert answer["spec"]["audiences"] == list(sat.API_AUDIENCES)
    assert answer["spec"]["expirationSeconds"] == 3600
    assert answer["status"]["expirationTimestamp"] == "2027-01-15T09:00:00Z"
    token = answer["status"]["token"]
    header = orjson.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    der = _key().public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    assert header == {"alg": "RS256", "kid": sat.key_id(_key().public_key())}
    assert len(header["kid"]) == 43 and der  # base64url of a SHA-256, unpadded
    claims = _payload(token)
    assert list(claims) == sorted(claims)  # Go's map encoding
    assert claims == {
        "aud": list(sat.API_AUDIENCES), "exp": int(NOW) + 3600, "iat": int(NOW), "iss": sat.ISSUER, "jti": "jti-1",
        "kubernetes.io": {"namespace": "ns", "node": {"name": "n1", "uid": "node-1"},
                          "pod": {"name": "p", "uid": "pod-1"}, "serviceaccount": {"name": "drv", "uid": "sa-1"}},
        "nbf": int(NOW), "sub": "system:serviceaccount:ns:drv"}
    result = world.authenticator().authenticate(token)
    assert result.mine and result.user is not None and not result.error
    assert result.user.name == "system:serviceaccount:ns:drv" and result.user.uid == "sa-1"
    assert result.user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns")
    assert dict(result.user.extra) == {sat.POD_NAME: ("p",), sat.POD_UID: ("pod-1",), sat.NODE_NAME: ("n1",),
                                       sat.NODE_UID: ("node-1",), sat.CREDENTIAL_ID: ("JTI=jti-1",)}


def test_extended_expiration_for_the_kubelets_default_pod_token() -> None:
    world = World()
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "p"}
    answer = world.issue(boundObjectRef=ref, expirationSeconds=3607)
    claims = _payload(answer["status"]["token"])
    assert claims["exp"] == int(NOW) + sat.EXTENDED_EXPIRATION
    assert claims["kubernetes.io"]["warnafter"] == int(NOW) + 3607
    assert answer["status"]["expirationTimestamp"] == "2027-01-15T09:00:07Z"
    other = _payload(world.issue(boundObjectRef=ref, expirationSeconds=3607, audiences=["vault"])["status"]["token"])
    assert other["exp"] == int(NOW) + 3607 and "warnafter" not in other["kubernetes.io"]


@pytest.mark.parametrize(("name", "spec", "code", "message"), [
    ("drv", {"expirationSeconds": 599}, 422, 'TokenRequest.authentication.k8s.io "" is invalid: '
     "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"),
    ("drv", {"expirationSeconds": (1 << 32) + 1}, 422, 'TokenRequest.authentication.k8s.io "" is invalid: '
     "spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"),
    ("nope", {}, 404, 'serviceaccounts "nope" not found'),
    ("other", {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p"}}, 400,
     'cannot bind token for serviceaccount "other" to pod running with different serviceaccount name.'),
    ("drv", {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "gone"}}, 404, 'pods "gone" not found'),
    ("drv", {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "x"}}, 409,
     'Operation cannot be fulfilled on Pod "p": the UID in the bound object reference (x) does not match the UID in '
     "record. The object might have been deleted and then recreated"),
    ("drv", {"boundObjectRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}}, 400,
     "cannot bind token to object of type /v1, Kind=ConfigMap"),
    ("drv", {"boundObjectRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}, 400,
     "cannot bind token to object of type apps/v1, Kind=Deployment"),
])
def test_token_request_refusals(name: str, spec: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(APIError) as caught:
        World().issue(name, **spec)
    assert (caught.value.code, caught.value.message) == (code, message)


def test_token_request_uid_mismatch_is_a_conflict() -> None:
    world = World()
    with pytest.raises(APIError) as caught:
        tokenrequest.create("ns", "drv", {"metadata": {"uid": "old"}}, get=world.get, signer=sat.Signer(_key()),
                            now=NOW)
    assert caught.value.code == 409
    assert caught.value.message == ('Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "drv": the '
                                    "UID in the token request (old) does not match the UID of the service account "
                                    "(sa-1)")


@pytest.mark.parametrize(("change", "error"), [
    (lambda w: w.objects.pop(("Pod", "ns", "p")), sat.INVALIDATED),
    (lambda w: w.add(_obj("Pod", "p", "pod-2", "ns")), "pod UID (pod-2) does not match service account pod ref "
     "claim (pod-1)"),
    (lambda w: w.objects.pop(("ServiceAccount", "ns", "drv")), 'serviceaccounts "drv" not found'),
    (lambda w: w.add(_obj("ServiceAccount", "drv", "sa-9", "ns")), "service account UID (sa-9) does not match claim "
     "(sa-1)"),
    (lambda w: setattr(w, "now", NOW + 3600 + 61), "service account token has expired"),
    (lambda w: setattr(w, "now", NOW - 61), "service account token is not valid yet"),
    (lambda w: w.objects[("Pod", "ns", "p")]["metadata"].update(deletionTimestamp="2027-01-15T07:58:59Z"),
     sat.INVALIDATED),
])
def test_pod_bound_token_dies_with_what_it_names(change: Any, error: str) -> None:
    world = World()
    token = world.issue(boundObjectRef={"apiVersion": "v1", "kind": "Pod", "name": "p"})["status"]["token"]
    assert world.authenticator().authenticate(token).user is not None
    change(world)
    result = world.authenticator().authenticate(token)
    assert (result.mine, result.user, result.error) == (True, None, error)


def test_node_and_secret_bound_tokens() -> None:
    world = World()
    node_token = world.issue(boundObjectRef={"apiVersion": "v1", "kind": "Node", "name": "n1"})["status"]["token"]
    secret_token = world.issue(boundObjectRef={"apiVersion": "v1", "kind": "Secret", "name": "s"})["status"]["token"]
    assert _payload(secret_token)["kubernetes.io"]["secret"] == {"name": "s", "uid": "sec-1"}
    user = world.authenticator().authenticate(node_token).user
    assert user is not None and dict(user.extra)[sat.NODE_UID] == ("node-1",)
    world.add(_obj("Node", "n1", "node-2"))
    world.objects.pop(("Secret", "ns", "s"))
    assert world.authenticator().authenticate(node_token).error == ("node UID (node-2) does not match service "
                                                                    "account node ref claim (node-1)")
    assert world.authenticator().authenticate(secret_token).error == sat.INVALIDATED


def test_signature_issuer_and_audience_checks() -> None:
    world = World()
    token = world.issue(audiences=["vault"])["status"]["token"]
    auth = world.authenticator()
    assert auth.authenticate(token).error == ('token audiences ["vault"] is invalid for the target audiences '
                                              '["https://kubernetes.default.svc.cluster.local"]')
    assert auth.authenticate(token, ["vault"]).audiences == ("vault",)
    head, body, sig = world.issue()["status"]["token"].split(".")
    forged = _payload(f"{head}.{body}.{sig}")
    forged["sub"] = "system:serviceaccount:kube-system:admin"
    forged_body = base64.urlsafe_b64encode(orjson.dumps(forged)).rstrip(b"=").decode()
    assert auth.authenticate(f"{head}.{forged_body}.{sig}").error == \
        "go-jose/go-jose: error in cryptographic primitive"
    other_key = sat.TokenAuthenticator([sat.new_private_key().public_key()], world.get, lambda: NOW)
    assert other_key.authenticate(f"{head}.{body}.{sig}").error == "invalid signature, no keys found"
    foreign = dict(_payload(f"{head}.{body}.{sig}"), iss="https://elsewhere")
    foreign_token = sat.Signer(_key()).sign(foreign)
    assert not auth.authenticate(foreign_token).mine  # another issuer's token: not this authenticator's
    assert not auth.authenticate("not-a-jwt").mine


def test_chain_and_token_review_texts() -> None:
    world = World()
    chain = Authenticator(TokenTable(), anonymous=False, service_accounts=world.authenticator())
    token = world.issue()["status"]["token"]
    outcome = chain.authenticate(None, f"Bearer {token}")
    assert outcome.user is not None and "system:authenticated" in outcome.user.groups
    world.objects.pop(("ServiceAccount", "ns", "drv"))
    assert chain.authenticate(None, f"Bearer {token}").error == \
        '[invalid bearer token, serviceaccounts "drv" not found]'
    assert chain.token_user("garbage") == (None, "invalid bearer token", ())


@pytest.mark.parametrize(("spec", "pod_node", "audience_ok", "refusal"), [
    ({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-1"}}, "n1", True, ""),
    ({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-1"}}, "n1", False,
     'system:node:n1 is not authorized to request tokens for audience ""'),
    ({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p"}}, "n1", True,
     "node requested token with a pod binding without a uid"),
    ({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-9"}}, "n1", True,
     "the UID in the bound object reference (pod-9) does not match the UID in record. The object might have been "
     "deleted and then recreated"),
    ({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-1"}}, "n2", True,
     "node requested token bound to a pod scheduled on a different node"),
    ({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-1"}, "audiences": ["a", "b"]},
     "n1", True, "node may only request 0 or 1 audiences"),
])
def test_node_restriction_on_token_requests(spec: dict[str, Any], pod_node: str, audience_ok: bool,
                                            refusal: str) -> None:
    pod = _obj("Pod", "p", "pod-1", "ns", serviceAccountName="drv", nodeName=pod_node)
    request = {"spec": spec}
    assert noderestriction.token_pod_name(request) == ("p", "")
    assert noderestriction.admit_token_request("n1", "system:node:n1", request, pod,
                                               lambda _audience: audience_ok) == refusal


def test_node_restriction_audience_named_by_a_projected_volume() -> None:
    volume = {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"audience": "vault", "path": "t"}}]}}
    pod = _obj("Pod", "p", "pod-1", "ns", serviceAccountName="drv", nodeName="n1", volumes=[volume])
    request = {"spec": {"audiences": ["vault"],
                        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-1"}}}
    assert noderestriction.admit_token_request("n1", "system:node:n1", request, pod, lambda _a: False) == ""
    assert noderestriction.token_pod_name({"spec": {}}) == ("", "node requested token not bound to a pod")
    assert noderestriction.token_pod_name(
        {"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}})[1] != ""


def test_a_remembered_signature_is_judged_again_at_every_request() -> None:
    """The verified-signature cache keeps the claims' checks live: one authenticator, the pod deleted
    after the token was seen, and a forgery of a seen token's claims still refused."""
    world = World()
    auth = world.authenticator()
    token = world.issue(boundObjectRef={"apiVersion": "v1", "kind": "Pod", "name": "p"})["status"]["token"]
    assert auth.authenticate(token).user is not None
    assert auth.authenticate(token).user is not None  # from the cache
    head, body, sig = token.split(".")
    forged_sig = sig[:-4] + ("AAAA" if not sig.endswith("AAAA") else "BBBB")
    assert auth.authenticate(f"{head}.{body}.{forged_sig}").error == \
        "go-jose/go-jose: error in cryptographic primitive"
    world.objects.pop(("Pod", "ns", "p"))
    assert auth.authenticate(token).error == sat.INVALIDATED
    world.now = NOW + 3600 + 61
    assert auth.authenticate(token).error == "service account token has expired"


@pytest.mark.parametrize("body", [
    None, [], "x", {"metadata": "x"}, {"spec": "x"}, {"spec": {"audiences": "x"}},
    {"spec": {"audiences": [1, {"a": 1}]}}, {"spec": {"expirationSeconds": "600"}},
    {"spec": {"expirationSeconds": 1 << 70}}, {"spec": {"boundObjectRef": "p"}},
    {"spec": {"boundObjectRef": {"kind": "Pod"}}}, {"spec": {"boundObjectRef": {"apiVersion": 1, "kind": []}}},
    {"spec": {"attestations": {"a": ["b"]}}}, {"spec": {"unknown": 1}},
])
def test_odd_bodies_are_answered_never_raised(body: Any) -> None:
    """Whatever a client sends, the answer is a token or a Status (a fuzzer's bodies among them)."""
    world = World()
    try:
        answer = tokenrequest.create("ns", "drv", body, get=world.get, signer=sat.Signer(_key()), now=NOW).answer
    except APIError as err:
        assert 400 <= err.code < 500
    else:
        assert set(answer["spec"]) <= {"audiences", "expirationSeconds", "boundObjectRef"}
