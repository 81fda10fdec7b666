"""Deletion propagation: which garbage-collection finalizers a delete leaves on an object.

Why: kube-apiserver's generic store (k8s.io/apiserver registry/generic/registry/store.go:
shouldOrphanDependents, shouldDeleteDependentsInForeground, deletionFinalizersForGarbageCollection)
turns a DELETE's propagationPolicy (or the deprecated orphanDependents) into finalizers the garbage
collector acts on: `orphan` (dependents lose their ownerReference to the object, then it goes) and
`foregroundDeletion` (it stays, with deletionTimestamp set, until its dependents with
blockOwnerDeletion are gone). Background (the default) adds neither: the object goes now, its
dependents after. The API server and the embedded garbage collector (which deletes dependents with
a policy too) share this. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

ORPHAN = "orphan"
"""metav1.FinalizerOrphanDependents."""
FOREGROUND = "foregroundDeletion"
"""metav1.FinalizerDeleteDependents."""
GC_FINALIZERS = (ORPHAN, FOREGROUND)

BACKGROUND_POLICY, FOREGROUND_POLICY, ORPHAN_POLICY = "Background", "Foreground", "Orphan"

_ORPHAN_BY_DEFAULT = frozenset({("ReplicationController", "v1"), ("Job", "batch/v1")})
"""The kinds whose strategy's DefaultGarbageCollectionPolicy is OrphanDependents in the request's group
version, for backward compatibility (pkg/registry/core/replicationcontroller, batch/job; CronJob only in
batch/v1beta1, which is not served). Every other served kind deletes dependents by default."""
_UNSUPPORTED = frozenset({"Event"})
"""Kinds whose strategy answers rest.Unsupported: a delete never adds the finalizers (core/event)."""


def deletion_finalizers(kind: str, api_version: str, finalizers: Sequence[str], policy: str) -> list[str] | None:
    """The finalizers a delete with `policy` ("", Background, Foreground, Orphan; orphanDependents already
    mapped to Orphan/Background) leaves, or None when they stay as they are: both GC finalizers are
    dropped, then the one the policy (or, with none, a finalizer already there, or the kind's default)
    asks for is added after the others, as deletionFinalizersForGarbageCollection orders them."""
    if kind in _UNSUPPORTED:
        return None
    orphan = _should_orphan(kind, api_version, finalizers, policy)
    foreground = _should_foreground(finalizers, policy)
    new = [f for f in finalizers if f not in GC_FINALIZERS]
    if orphan:
        new.append(ORPHAN)
    if foreground:
        new.append(FOREGROUND)
    return None if set(new) == set(finalizers) else new


def _should_orphan(kind: str, api_version: str, finalizers: Sequence[str], policy: str) -> bool:
    if policy:
        return policy == ORPHAN_POLICY
    for f in finalizers:
        if f == ORPHAN:
            return True
        if f == FOREGROUND:
            return False
    return (kind, api_version) in _ORPHAN_BY_DEFAULT


def _should_foreground(finalizers: Sequence[str], policy: str) -> bool:
    if policy:
        return policy == FOREGROUND_POLICY
    for f in finalizers:
        if f == ORPHAN:
            return False
        if f == FOREGROUND:
            return True
    return False
