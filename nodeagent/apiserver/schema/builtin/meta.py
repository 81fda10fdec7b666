"""Schemas of apimachinery's shared types: ObjectMeta, LabelSelector, Condition, Status,
DeleteOptions, WatchEvent, Quantity, IntOrString and the timestamp/raw types.

Why apart: every kind embeds them; they are named under io.k8s.apimachinery like upstream so
published documents, SMP merge keys and SSA list types line up with client expectations.
"""

from __future__ import annotations

from dataclasses import replace

from nodeagent.apiserver.schema.builtin.dsl import (
    INT_OR_STRING,
    META,
    QUANTITY,
    arr,
    b,
    i32,
    i64,
    kind,
    lmap,
    loose,
    meta,
    obj,
    s,
    smap,
    sset,
    strs,
    time,
)
from nodeagent.apiserver.schema.model import Schema


def meta_definitions() -> dict[str, Schema]:
    m = META
    return {
        QUANTITY: Schema(
            int_or_string=True,
            description="A fixed-point amount such as 500m, 1Gi or 2 (a string, or a plain number).",
        ),
        INT_OR_STRING: Schema(int_or_string=True, description="A value that is either an integer or a string."),
        # managed as one value (structured-merge-diff types it untyped atomic): one writer owns it whole
        "io.k8s.apimachinery.pkg.runtime.RawExtension": replace(loose("An embedded object of any kind, kept verbatim."),
                                                                map_type="atomic"),
        m + "Time": s("A timestamp in RFC 3339 form, to the second.", fmt="date-time"),
        m + "MicroTime": s("A timestamp in RFC 3339 form with microseconds.", fmt="date-time"),
        m + "FieldsV1": loose("The set of fields a manager owns, in the FieldsV1 trie encoding."),
        m + "Patch": obj("The body of a PATCH request; its shape depends on the patch content type.", {}),
        m + "ObjectMeta": obj("Metadata every persisted object carries.", {
            "name": s("Unique name within a namespace (or the cluster for cluster-scoped kinds)."),
            "generateName": s("Prefix the server uses to make a unique name when name is empty."),
            "namespace": s("The namespace the object lives in; empty for cluster-scoped kinds."),
            "selfLink": s("Deprecated; never set by the server."),
            "uid": s("Unique id the server assigns at creation; never reused."),
            "resourceVersion": s("Opaque version of the object, for optimistic concurrency and watches."),
            "generation": i64("Sequence number of changes to the desired state (spec)."),
            "creationTimestamp": time("When the server created the object."),
            "deletionTimestamp": time("When deletion was requested; the object goes once finalizers are gone."),
            "deletionGracePeriodSeconds": i64("Seconds the object is allowed to terminate gracefully."),
            "labels": smap("Key/value pairs used to select and group objects."),
            "annotations": smap("Key/value pairs for tools and extensions; not used to select."),
            "ownerReferences": lmap(meta("OwnerReference"), "Objects this one depends on (garbage collection).",
                                    "uid"),
            "finalizers": sset("Names that must be removed before the object is deleted.", merge=True),
            "managedFields": arr(meta("ManagedFieldsEntry"), "Which manager owns which fields (server-side apply).",
                                 atomic=True),
        }),
        m + "OwnerReference": obj("Identifies an owning object in the same namespace.", {
            "apiVersion": s("API version of the owner."),
            "kind": s("Kind of the owner."),
            "name": s("Name of the owner."),
            "uid": s("UID of the owner."),
            "controller": b("True when the owner is the managing controller."),
            "blockOwnerDeletion": b("When true, the owner cannot be deleted in foreground before this object."),
        }, ["apiVersion", "kind", "name", "uid"], map_type="atomic"),
        m + "ManagedFieldsEntry": obj("Fields one manager set through one operation.", {
            "manager": s("Name of the workflow managing these fields."),
            "operation": s("Apply or Update.", enum=["Apply", "Update"]),
            "apiVersion": s("Version of the object the fields refer to."),
            "time": time("When the entry was last changed."),
            "fieldsType": s("Encoding of fieldsV1; only FieldsV1."),
            "fieldsV1": meta("FieldsV1", "The owned fields."),
            "subresource": s("Subresource the update came through, if any."),
        }),
        m + "LabelSelector": obj("Selects objects by labels; requirements are ANDed.", {
            "matchLabels": smap("Exact key/value pairs to match."),
            "matchExpressions": arr(meta("LabelSelectorRequirement"), "Set-based requirements.", atomic=True),
        }, map_type="atomic"),
        m + "LabelSelectorRequirement": obj("A key, an operator and values.", {
            "key": s("The label key."),
            "operator": s("In, NotIn, Exists or DoesNotExist."),
            "values": strs("Values for In and NotIn; empty for Exists and DoesNotExist."),
        }, ["key", "operator"]),
        m + "Condition": obj("One aspect of an object's current state.", {
            "type": s("Condition type, CamelCase."),
            "status": s("True, False or Unknown.", enum=["True", "False", "Unknown"]),
            "observedGeneration": i64("metadata.generation the condition was computed from."),
            "lastTransitionTime": time("When status last changed."),
            "reason": s("Machine-readable CamelCase reason for the last transition."),
            "message": s("Human-readable detail."),
        }, ["type", "status", "lastTransitionTime", "reason", "message"]),
        m + "ListMeta": obj("Metadata of list responses.", {
            "resourceVersion": s("Version of the collection, to start a watch from."),
            "continue": s("Token for the next page, when the list was limited."),
            "remainingItemCount": i64("Estimated number of items not yet returned."),
            "selfLink": s("Deprecated; never set by the server."),
        }),
        m + "Status": kind("The result of a call that returns no object, or of a failed call.", {
            "metadata": meta("ListMeta", "Standard list metadata."),
            "status": s("Success or Failure."),
            "message": s("Human-readable description of the result."),
            "reason": s("Machine-readable reason, e.g. NotFound or Conflict."),
            "details": meta("StatusDetails", "Extra data about the reason."),
            "code": i32("Suggested HTTP status code."),
        }),
        m + "StatusDetails": obj("Data about a failure.", {
            "name": s("Name of the object concerned."),
            "group": s("API group of the object."),
            "kind": s("Kind of the object."),
            "uid": s("UID of the object."),
            "causes": arr(meta("StatusCause"), "The individual errors.", atomic=True),
            "retryAfterSeconds": i32("Seconds to wait before retrying."),
        }),
        m + "StatusCause": obj("One error behind a failure.", {
            "reason": s("Machine-readable cause, e.g. FieldValueInvalid."),
            "message": s("Human-readable description."),
            "field": s("Path of the field at fault, e.g. spec.containers[0].name."),
        }),
        m + "Preconditions": obj("Must hold for an operation to proceed.", {
            "uid": s("Expected UID."),
            "resourceVersion": s("Expected resourceVersion."),
        }),
        m + "DeleteOptions": obj("Options of a delete request.", {
            **_type_meta(),
            "gracePeriodSeconds": i64("Seconds before the object is removed; 0 deletes at once."),
            "preconditions": meta("Preconditions", "Conditions that must hold to delete."),
            "orphanDependents": b("Deprecated: orphan dependents instead of deleting them."),
            "propagationPolicy": s("Orphan, Background or Foreground garbage collection."),
            "dryRun": strs("All: process the request without persisting it."),
            "ignoreStoreReadErrorWithClusterBreakingPotential": b("Delete even an object that cannot be decoded."),
        }),
        m + "WatchEvent": obj("One change seen by a watch.", {
            "type": s("ADDED, MODIFIED, DELETED, BOOKMARK or ERROR."),
            "object": Schema(ref="io.k8s.apimachinery.pkg.runtime.RawExtension",
                             description="The object after the change, or a Status on ERROR."),
        }, ["type", "object"]),
        m + "APIResource": obj("One resource served in a group version.", {
            "name": s("Plural resource name."),
            "singularName": s("Singular name."),
            "namespaced": b("Whether the resource lives in namespaces."),
            "group": s("Preferred group of the resource."),
            "version": s("Preferred version of the resource."),
            "kind": s("Kind of the resource."),
            "verbs": strs("Supported verbs."),
            "shortNames": strs("Short aliases."),
            "categories": strs("Groups of resources it belongs to, e.g. all."),
            "storageVersionHash": s("Hash of the storage version."),
        }, ["name", "singularName", "namespaced", "kind", "verbs"]),
        m + "APIResourceList": obj("The resources of one group version.", {
            **_type_meta(),
            "groupVersion": s("The group version."),
            "resources": arr(meta("APIResource"), "The resources.", atomic=True),
        }, ["groupVersion", "resources"]),
    }


def _type_meta() -> dict[str, Schema]:
    return {
        "apiVersion": s("The versioned schema of this object."),
        "kind": s("The REST resource this object represents, in CamelCase."),
    }
