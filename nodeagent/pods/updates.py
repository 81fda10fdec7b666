"""How an applied pod may change the stored one: the API server's rules for pod updates.

A pod's spec is immutable but for a few fields; labels, annotations and container images may
change, and the stored identity (uid, creation time, source) always wins. This is a pure
decision over two pods, kept out of the manager so the rule reads (and tests) on its own.
Also the outcome names `apply` reports, as kubectl prints them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from nodeagent.errors import ValidationError
from nodeagent.objects.pod.model import Pod

CREATED = "created"
UNCHANGED = "unchanged"
CONFIGURED = "configured"
REPLACED = "replaced"

UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_MUTABLE_SPEC_FIELDS = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")


def updated_pod(old: Pod, pod: Pod) -> Pod | None:
    """`old` changed as `pod` asks, keeping old's identity; None when nothing changes.

    Raises ValidationError when the spec changes beyond the fields an update may change.
    """
    old_spec = _comparable_spec(old.manifest)
    new_spec = _comparable_spec(pod.manifest)
    if old_spec != new_spec:
        raise ValidationError("spec", f"Forbidden: {UPDATE_FORBIDDEN}")
    images_changed = [c.image for c in old.all_containers()] != [c.image for c in pod.all_containers()]
    if not images_changed and old.labels == pod.labels and old.annotations == pod.annotations:
        return None
    manifest: dict[str, Any] = dict(pod.manifest)
    old_metadata: Mapping[str, Any] = old.manifest.get("metadata") or {}  # type: ignore[assignment]
    metadata: dict[str, Any] = dict(manifest.get("metadata") or {})
    metadata.update(uid=old.uid, creationTimestamp=old_metadata.get("creationTimestamp"))
    manifest["metadata"] = metadata
    return dataclasses.replace(
        pod, uid=old.uid, creation_timestamp=old.creation_timestamp, source=old.source, manifest=manifest
    )


def _comparable_spec(manifest: Mapping[str, Any]) -> Any:
    """The spec without the fields the API server lets an update change."""
    spec = dict(manifest.get("spec") or {})
    for name in _MUTABLE_SPEC_FIELDS:
        spec.pop(name, None)
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, Mapping) else c
                for c in spec[key]
            ]
    return spec
