"""Schemas of the review kinds: authentication.k8s.io/v1 TokenReview and SelfSubjectReview,
authorization.k8s.io/v1 SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview and
SelfSubjectRulesReview (k8s.io/api authentication/v1 and authorization/v1 types.go).

Why: they are served create-only (apiserver/reviews.py answers them); the OpenAPI documents and
discovery list them as kube-apiserver does, so kubectl and clients generated from the OpenAPI find
them. Never stored, so never pruned or merged: the schema is what the documents say.
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import arr, b, i64, kind, mapof, meta, obj, ref, s, strs
from nodeagent.apiserver.schema.model import Schema

AN = "io.k8s.api.authentication.v1."
AZ = "io.k8s.api.authorization.v1."
META = "io.k8s.apimachinery.pkg.apis.meta.v1."


def _extra(desc: str) -> Schema:
    return mapof(arr(s()), desc)


def reviews_definitions() -> dict[str, Schema]:
    return {**_authentication(), **_authorization()}


def _authentication() -> dict[str, Schema]:
    return {
        AN + "TokenReview": kind("Asks who a token belongs to.", {
            "spec": ref(AN + "TokenReviewSpec", "The token."),
            "status": ref(AN + "TokenReviewStatus", "Who, filled in by the server."),
        }, ["spec"]),
        AN + "TokenReviewSpec": obj("The token to authenticate.", {
            "token": s("The opaque bearer token."),
            "audiences": strs("Audiences the token must be valid for."),
        }),
        AN + "TokenReviewStatus": obj("The answer.", {
            "authenticated": b("Whether the token belongs to someone."),
            "user": ref(AN + "UserInfo", "Who."),
            "audiences": strs("Audiences the token is valid for."),
            "error": s("Why it could not be checked."),
        }),
        AN + "UserInfo": obj("A user as the authenticator found them.", {
            "username": s("The name."), "uid": s("A unique id."), "groups": strs("The groups."),
            "extra": _extra("Further attributes."),
        }),
        AN + "SelfSubjectReview": kind("Asks who the caller is.", {
            "status": ref(AN + "SelfSubjectReviewStatus", "Who, filled in by the server."),
        }),
        AN + "SelfSubjectReviewStatus": obj("The answer.", {"userInfo": ref(AN + "UserInfo", "Who.")}),
        # the body of serviceaccounts/NAME/token (apiserver/tokenrequest.py), a subresource's kind
        AN + "TokenRequest": kind("Requests a token for a given service account.", {
            "spec": ref(AN + "TokenRequestSpec", "What is asked for."),
            "status": ref(AN + "TokenRequestStatus", "The token, filled in by the server."),
        }, ["spec"]),
        AN + "TokenRequestSpec": obj("Client provided parameters of a token request.", {
            "audiences": strs("Intended audiences of the token (the API's when empty)."),
            "expirationSeconds": i64("Requested duration of validity, at least 600."),
            "boundObjectRef": ref(AN + "BoundObjectReference", "An object the token is bound to."),
            "attestations": _extra("Well-known keys the API server is asked to attest to."),
        }, ["audiences"]),
        AN + "TokenRequestStatus": obj("The result of a token request.", {
            "token": s("The opaque bearer token."),
            "expirationTimestamp": meta("Time", "When the token expires."),
        }, ["token", "expirationTimestamp"]),
        AN + "BoundObjectReference": obj("An object a token is bound to.", {
            "kind": s("Kind of the referent: Pod, Secret or Node."), "apiVersion": s("API version of the referent."),
            "name": s("Name of the referent."), "uid": s("Uid of the referent."),
        }),
    }


def _authorization() -> dict[str, Schema]:
    sar_status = ref(AZ + "SubjectAccessReviewStatus", "The answer, filled in by the server.")
    return {
        AZ + "SubjectAccessReview": kind("Asks whether a user may do something.", {
            "spec": ref(AZ + "SubjectAccessReviewSpec", "The question."), "status": sar_status,
        }, ["spec"]),
        AZ + "LocalSubjectAccessReview": kind("Asks whether a user may do something in one namespace.", {
            "spec": ref(AZ + "SubjectAccessReviewSpec", "The question (its namespace the path's)."),
            "status": sar_status,
        }, ["spec"]),
        AZ + "SubjectAccessReviewSpec": obj("The request and the user to ask about.", {
            "resourceAttributes": ref(AZ + "ResourceAttributes", "A resource request."),
            "nonResourceAttributes": ref(AZ + "NonResourceAttributes", "A non-resource request."),
            "user": s("The user."), "groups": strs("Their groups."), "extra": _extra("Their further attributes."),
            "uid": s("Their uid."),
        }),
        AZ + "SelfSubjectAccessReview": kind("Asks whether the caller may do something.", {
            "spec": ref(AZ + "SelfSubjectAccessReviewSpec", "The question."), "status": sar_status,
        }, ["spec"]),
        AZ + "SelfSubjectAccessReviewSpec": obj("The request to ask about.", {
            "resourceAttributes": ref(AZ + "ResourceAttributes", "A resource request."),
            "nonResourceAttributes": ref(AZ + "NonResourceAttributes", "A non-resource request."),
        }),
        AZ + "ResourceAttributes": obj("A resource request's attributes, as the authorizer sees them.", {
            "namespace": s("The namespace."), "verb": s("The verb."), "group": s("The API group."),
            "version": s("The API version."), "resource": s("The resource."), "subresource": s("The subresource."),
            "name": s("The object's name."),
            "fieldSelector": ref(AZ + "FieldSelectorAttributes", "The request's field selector."),
            "labelSelector": ref(AZ + "LabelSelectorAttributes", "The request's label selector."),
        }),
        AZ + "FieldSelectorAttributes": obj("A field selector, raw or parsed.", {
            "rawSelector": s("As written in the query."),
            "requirements": arr(meta("FieldSelectorRequirement"), "Parsed.", atomic=True),
        }),
        AZ + "LabelSelectorAttributes": obj("A label selector, raw or parsed.", {
            "rawSelector": s("As written in the query."),
            "requirements": arr(meta("LabelSelectorRequirement"), "Parsed.", atomic=True),
        }),
        META + "FieldSelectorRequirement": obj("A field, an operator and values.", {
            "key": s("The field."), "operator": s("In, NotIn, Exists or DoesNotExist."),
            "values": strs("The values."),
        }, ["key", "operator"]),
        AZ + "NonResourceAttributes": obj("A non-resource request's attributes.", {
            "path": s("The URL path."), "verb": s("The HTTP verb, lower case."),
        }),
        AZ + "SubjectAccessReviewStatus": obj("The answer.", {
            "allowed": b("Whether the request is allowed."), "denied": b("Whether it is denied outright."),
            "reason": s("Why."), "evaluationError": s("What went wrong while deciding."),
        }, ["allowed"]),
        AZ + "SelfSubjectRulesReview": kind("Asks what the caller may do in a namespace.", {
            "spec": ref(AZ + "SelfSubjectRulesReviewSpec", "The namespace."),
            "status": ref(AZ + "SubjectRulesReviewStatus", "The rules, filled in by the server."),
        }, ["spec"]),
        AZ + "SelfSubjectRulesReviewSpec": obj("The namespace to ask about.", {"namespace": s("The namespace.")}),
        AZ + "SubjectRulesReviewStatus": obj("The rules.", {
            "resourceRules": arr(ref(AZ + "ResourceRule"), "Allowed resource requests.", atomic=True),
            "nonResourceRules": arr(ref(AZ + "NonResourceRule"), "Allowed non-resource requests.", atomic=True),
            "incomplete": b("Whether the list is partial."),
            "evaluationError": s("What went wrong while listing."),
        }, ["resourceRules", "nonResourceRules", "incomplete"]),
        AZ + "ResourceRule": obj("Verbs allowed on resources.", {
            "verbs": strs("The verbs."), "apiGroups": strs("The API groups."), "resources": strs("The resources."),
            "resourceNames": strs("The names."),
        }, ["verbs"]),
        AZ + "NonResourceRule": obj("Verbs allowed on URLs.", {
            "verbs": strs("The verbs."), "nonResourceURLs": strs("The URL paths."),
        }, ["verbs"]),
    }
