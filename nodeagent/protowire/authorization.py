"""authorization.k8s.io/v1 SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview
and SelfSubjectRulesReview (k8s.io/api authorization/v1 generated.proto).

Why: `kubectl auth can-i` and client-go's typed clients (the kubelet's webhook authorizer, the real
controller manager) post these reviews as protobuf. Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

_REVIEW = "1 metadata meta.ObjectMeta; 2 spec SubjectAccessReviewSpec; 3 status SubjectAccessReviewStatus"

AUTHORIZATION_V1 = package({
    "SubjectAccessReview": _REVIEW,
    "LocalSubjectAccessReview": _REVIEW,
    "SelfSubjectAccessReview": """
        1 metadata meta.ObjectMeta; 2 spec SelfSubjectAccessReviewSpec; 3 status SubjectAccessReviewStatus""",
    "SelfSubjectRulesReview": """
        1 metadata meta.ObjectMeta; 2 spec SelfSubjectRulesReviewSpec; 3 status SubjectRulesReviewStatus""",
    "SubjectAccessReviewSpec": """
        1 resourceAttributes ResourceAttributes*; 2 nonResourceAttributes NonResourceAttributes*; 3 user string
        4 groups []string; 5 extra {}StringList; 6 uid string""",
    "SelfSubjectAccessReviewSpec": """
        1 resourceAttributes ResourceAttributes*; 2 nonResourceAttributes NonResourceAttributes*""",
    "SelfSubjectRulesReviewSpec": "1 namespace string",
    "ResourceAttributes": """
        1 namespace string; 2 verb string; 3 group string; 4 version string; 5 resource string
        6 subresource string; 7 name string; 8 fieldSelector FieldSelectorAttributes*
        9 labelSelector LabelSelectorAttributes*""",
    "FieldSelectorAttributes": "1 rawSelector string; 2 requirements []meta.FieldSelectorRequirement",
    "LabelSelectorAttributes": "1 rawSelector string; 2 requirements []meta.LabelSelectorRequirement",
    "NonResourceAttributes": "1 path string; 2 verb string",
    "SubjectAccessReviewStatus": "1 allowed bool!; 4 denied bool; 2 reason string; 3 evaluationError string",
    "SubjectRulesReviewStatus": """
        1 resourceRules []ResourceRule; 2 nonResourceRules []NonResourceRule; 3 incomplete bool!
        4 evaluationError string""",
    "ResourceRule": "1 verbs []string; 2 apiGroups []string; 3 resources []string; 4 resourceNames []string",
    "NonResourceRule": "1 verbs []string; 2 nonResourceURLs []string",
})
