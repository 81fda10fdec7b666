"""meta.k8s.io/v1 messages (apimachinery pkg/apis/meta/v1/generated.proto).

Why its own module: every object's metadata, owner references and managed fields, label selectors
and the DeleteOptions body of a typed Delete are these messages whatever the kind, as are the API
server's protobuf answers' list metadata, Status errors and PartialObjectMetadata views; the API
server's decoder and encoder and the Pods API's encoder read the same lines. Field order is the Go struct's, so decoded
objects list their keys as encoding/json would. Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

META = package({
    "ObjectMeta": """
        1 name string; 2 generateName string; 3 namespace string; 4 selfLink string; 5 uid string
        6 resourceVersion string; 7 generation int64; 8 creationTimestamp Time; 9 deletionTimestamp Time*
        10 deletionGracePeriodSeconds int64?; 11 labels {}string; 12 annotations {}string
        13 ownerReferences []OwnerReference; 14 finalizers []string; 17 managedFields []ManagedFieldsEntry""",
    "OwnerReference": """
        5 apiVersion string!; 1 kind string!; 3 name string!; 4 uid string!; 6 controller bool?
        7 blockOwnerDeletion bool?""",
    "ManagedFieldsEntry": """
        1 manager string; 2 operation string; 3 apiVersion string; 4 time Time*; 6 fieldsType string
        7 fieldsV1 FieldsV1*; 8 subresource string""",
    "Condition": """
        1 type string!; 2 status string!; 3 observedGeneration int64; 4 lastTransitionTime Time
        5 reason string!; 6 message string!""",
    "DeleteOptions": """
        1 gracePeriodSeconds int64?; 2 preconditions Preconditions*; 3 orphanDependents bool?
        4 propagationPolicy string?; 5 dryRun []string; 6 ignoreStoreReadErrorWithClusterBreakingPotential bool?""",
    "Preconditions": "1 uid string?; 2 resourceVersion string?",
    "LabelSelector": "1 matchLabels {}string; 2 matchExpressions []LabelSelectorRequirement",
    "LabelSelectorRequirement": "1 key string!; 2 operator string!; 3 values []string",
    "FieldSelectorRequirement": "1 key string!; 2 operator string!; 3 values []string",
    "GroupResource": "1 group string!; 2 resource string!",
    # what the API server answers besides the kinds themselves: lists' metadata, errors, metadata-only views
    "ListMeta": "1 selfLink string; 2 resourceVersion string; 3 continue string; 4 remainingItemCount int64?",
    "Status": """
        1 metadata ListMeta; 2 status string; 3 message string; 4 reason string; 5 details StatusDetails*
        6 code int32""",
    "StatusDetails": """
        1 name string; 2 group string; 3 kind string; 6 uid string; 4 causes []StatusCause
        5 retryAfterSeconds int32""",
    "StatusCause": "1 reason string; 2 message string; 3 field string",
    "PartialObjectMetadata": "1 metadata ObjectMeta",
})
