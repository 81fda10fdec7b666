"""One v1 Pod document -> the Pod model: the entry point, metadata and pod-wide spec fields.

Why this module: `pod_from_manifest` is the single door through which API, static and admin
pods enter nodeagent; it checks apiVersion/kind, the metadata (names, generated names,
labels, annotations, nodeagent's own annotations), restart policy and priority, and delegates
the rest with the same API-server field paths and wording: containers and resource claims to
containers.py, requests and limits to resources.py, scheduling constraints to
scheduling.py. Parsing is lenient about fields nodeagent does not read (volumes, env,
ports...), strict about the ones it does. The output direction lives in output.py; its
functions and the resource-name helpers are re-exported here for existing callers. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any

import orjson

from nodeagent.objects.common import QUANTITY_MSG, Errors, type_error
from nodeagent.objects.pod.containers import parse_container, parse_pod_claims
from nodeagent.objects.pod.fields import get_list, get_mapping, get_str, get_string_map
from nodeagent.objects.pod.model import ANNOTATION_EXIT_CODE, ANNOTATION_FINISH_AFTER, Pod
from nodeagent.objects.pod.output import pod_to_manifest, rfc3339, status_to_json
from nodeagent.objects.pod.resources import (
    HUGEPAGES_PREFIX,
    NEGATIVE_MSG,
    NOT_INTEGER_MSG,
    POD_LEVEL_RESOURCES,
    STANDARD_CONTAINER_RESOURCES,
    aggregate_container_requests,
    is_extended,
    is_hugepages,
    is_native,
    is_overcommit_allowed,
    parse_pod_resources,
)
from nodeagent.objects.pod.scheduling import check_scheduling
from nodeagent.store import validation as meta
from nodeagent.util.clock import Clock

__all__ = [
    "HUGEPAGES_PREFIX",
    "NEGATIVE_MSG",
    "NOT_INTEGER_MSG",
    "POD_LEVEL_RESOURCES",
    "QUANTITY_MSG",
    "RESTART_POLICIES",
    "STANDARD_CONTAINER_RESOURCES",
    "aggregate_container_requests",
    "check_identity",
    "is_extended",
    "is_hugepages",
    "is_native",
    "is_overcommit_allowed",
    "parse_key",
    "pod_from_manifest",
    "pod_to_manifest",
    "rfc3339",
    "status_to_json",
]

RESTART_POLICIES = ("Always", "OnFailure", "Never")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def pod_from_manifest(
    doc: Mapping[str, Any],
    *,
    default_namespace: str = "default",
    source: str = "api",
    uid: str | None = None,
    clock: Clock,
) -> Pod:
    """Parse, default and validate one v1 Pod document; raise ValidationError naming the field."""
    if not isinstance(doc, Mapping):
        raise type_error("", doc, "object")
    api_version = doc.get("apiVersion")
    if api_version != "v1":
        if api_version is None:
            raise meta.required("apiVersion")
        raise meta.not_supported("apiVersion", api_version, ["v1"])
    kind = doc.get("kind")
    if kind != "Pod":
        if kind is None:
            raise meta.required("kind")
        raise meta.not_supported("kind", kind, ["Pod"])

    md = get_mapping(doc, "metadata", "metadata")
    errs = Errors()
    pod_uid, name, namespace = _identity(md, errs, uid, default_namespace)
    labels = errs.check(get_string_map, md, "labels", "metadata.labels")
    if labels is not None:
        errs.check(meta.check_labels, "metadata.labels", labels)
    annotations = errs.check(get_string_map, md, "annotations", "metadata.annotations")
    if annotations is not None:
        errs.check(meta.check_annotations, "metadata.annotations", annotations)
        errs.check(_check_nodeagent_annotations, annotations)

    if doc.get("spec") is None:
        errs.append(meta.required("spec"))
        errs.raise_all()
    spec = get_mapping(doc, "spec", "spec")
    # ValidatePodSpec's order: claims, containers, init containers, pod resources, restart
    # policy, scheduling constraints, priority class; every error reported (ManyErrors)
    claims = errs.check(parse_pod_claims, spec)
    raw_claims = spec.get("resourceClaims")
    claim_names = {str(c["name"]) for c in raw_claims if isinstance(c, Mapping) and c.get("name")} \
        if isinstance(raw_claims, list) else set()
    names: set[str] = set()
    raw_containers = errs.check(get_list, spec, "containers", "spec.containers")
    if raw_containers is not None and not raw_containers:
        errs.append(meta.required("spec.containers"))
    containers = tuple(
        errs.check(lambda c=c, i=i: parse_container(c, f"spec.containers[{i}]", init=False, names=names,
                                                    claim_names=claim_names))
        for i, c in enumerate(raw_containers or ())
    )
    init = tuple(
        errs.check(lambda c=c, i=i: parse_container(c, f"spec.initContainers[{i}]", init=True, names=names,
                                                    claim_names=claim_names))
        for i, c in enumerate(errs.check(get_list, spec, "initContainers", "spec.initContainers") or ())
    )
    resources = None
    if not errs:
        resources = errs.check(parse_pod_resources, spec, containers, init)
    restart_policy = errs.check(get_str, spec, "restartPolicy", "spec.restartPolicy", "Always")
    if restart_policy is not None and restart_policy not in RESTART_POLICIES:
        errs.append(meta.not_supported("spec.restartPolicy", restart_policy, RESTART_POLICIES, ordered=True))
    errs.check(check_scheduling, spec)
    priority_class = errs.check(get_str, spec, "priorityClassName", "spec.priorityClassName")
    if priority_class:
        errs.check(meta.check_dns_subdomain, "spec.priorityClassName", priority_class)
    priority = spec.get("priority", 0)
    if priority is None:
        priority = 0
    if not isinstance(priority, int) or isinstance(priority, bool):
        errs.append(type_error("spec.priority", priority, "integer"))
    node_name = errs.check(get_str, spec, "nodeName", "spec.nodeName")
    errs.raise_all()
    assert labels is not None and annotations is not None and claims is not None and resources is not None
    assert restart_policy is not None and priority_class is not None and node_name is not None
    pod_requests, pod_limits = resources
    container_models = tuple(c for c in containers if c is not None)
    init_models = tuple(c for c in init if c is not None)

    created = clock.now()
    manifest = _plain(doc)
    manifest.setdefault("metadata", {})
    manifest["metadata"].update(
        name=name, namespace=namespace, uid=pod_uid, creationTimestamp=rfc3339(created)
    )
    return Pod(
        uid=pod_uid,
        name=name,
        namespace=namespace,
        labels=labels,
        annotations=annotations,
        containers=container_models,
        init_containers=init_models,
        priority=priority,
        priority_class_name=priority_class,
        node_name=node_name,
        restart_policy=restart_policy,
        resource_claims=claims,
        pod_requests=pod_requests,
        pod_limits=pod_limits,
        source=source,
        creation_timestamp=created,
        manifest=manifest,
    )


def _identity(md: Mapping[str, Any], errs: Errors, uid: str | None, default_namespace: str) -> tuple[str, str, str]:
    """The pod's uid, name and namespace, checked (what of the parse depends on them besides its model's names)."""
    pod_uid = get_str(md, "uid", "metadata.uid") or uid or str(uuid.uuid4())
    if "/" in pod_uid or pod_uid in (".", ".."):
        # The uid names the pod's cgroup (pod<uid>) and folders under rootDir/pods: one with "/"
        # or a dot name would nest or escape them; the kubelet's cgroup names refuse "/" too.
        raise meta.invalid("metadata.uid", pod_uid, 'must not contain "/" or be "." or ".."')
    name = get_str(md, "name", "metadata.name")
    generate_name = get_str(md, "generateName", "metadata.generateName")
    if not name:
        if not generate_name:
            raise meta.required("metadata.name", "name or generateName is required")
        name = generate_name + _generated_suffix(pod_uid)
    errs.check(meta.check_dns_subdomain, "metadata.name", name)
    namespace = get_str(md, "namespace", "metadata.namespace") or default_namespace
    errs.check(meta.check_dns_label, "metadata.namespace", namespace)
    return pod_uid, name, namespace


def check_identity(doc: Mapping[str, Any], *, default_namespace: str = "default") -> None:
    """The checks `pod_from_manifest` makes of a pod's uid, name and namespace, raised as it raises
    them: for a caller that parsed a pod equal to `doc` by `parse_key` (which leaves these out) and
    needs only to know that `doc` parses too. `doc` has a metadata mapping."""
    errs = Errors()
    _identity(doc["metadata"], errs, None, default_namespace)
    errs.raise_all()


_MOUNTED = ("containers", "initContainers", "ephemeralContainers")


def parse_key(doc: Mapping[str, Any]) -> bytes | None:
    """What `pod_from_manifest`'s answer (its model but the names, its error) depends on besides the
    names and uid: apiVersion, kind, labels, annotations, generateName and the spec but its volumes
    and the containers' volumeMounts, which this parser does not read (if it ever does, they go into
    the key); None when not plain JSON. For callers that remember parses of equal pods (the
    scheduler's requests, the virtual nodes' generated status).

    Why without them: the ServiceAccount admission gives every pod its own kube-api-access-XXXXX
    volume (a generated name) mounted in each container, so with them no two replicas of a
    workload shared a key and each pod was parsed again (the scheduler's parse was about a
    twentieth of the control plane's time per pod at 100 nodes)."""
    md = doc.get("metadata") or {}
    spec = doc.get("spec")
    if type(spec) is dict and "volumes" in spec:
        spec = {k: v for k, v in spec.items() if k != "volumes"}
        for field_name in _MOUNTED:
            listed = spec.get(field_name)
            if type(listed) is list:
                spec[field_name] = [{k: v for k, v in c.items() if k != "volumeMounts"} if type(c) is dict else c
                                    for c in listed]
    try:
        return orjson.dumps([doc.get("apiVersion"), doc.get("kind"), md.get("labels"), md.get("annotations"),
                             md.get("generateName"), spec], option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError
        return None


def _check_nodeagent_annotations(annotations: Mapping[str, str]) -> None:
    """nodeagent's own annotations must be usable: a typo would silently never finish the pod."""
    finish = annotations.get(ANNOTATION_FINISH_AFTER)
    if finish is not None:
        path = f"metadata.annotations[{ANNOTATION_FINISH_AFTER}]"
        try:
            seconds = float(finish)
        except ValueError:
            raise meta.invalid(path, finish, "must be a number of seconds") from None
        if not seconds >= 0 or seconds == float("inf"):
            raise meta.invalid(path, finish, NEGATIVE_MSG)
    code = annotations.get(ANNOTATION_EXIT_CODE)
    if code is not None:
        path = f"metadata.annotations[{ANNOTATION_EXIT_CODE}]"
        try:
            value = int(code)
        except ValueError:
            raise meta.invalid(path, code, "must be an integer exit code") from None
        if not 0 <= value <= 255:
            raise meta.invalid(path, code, "must be between 0 and 255, inclusive")


def _generated_suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_GENERATE_ALPHABET[b % len(_GENERATE_ALPHABET)] for b in digest[:5])


def _plain(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-clean deep copy of the document (YAML may carry dates and other scalars).

    The json module's round trip is the definition; orjson's gives the same copy about ten times
    faster for what the API and the store hand in (plain JSON values), and every pod parse makes one
    (three per pod created through the API: its strategy, the scheduler's cache and the virtual
    node's status). orjson refuses what the json module would turn into text (dates, times, sets,
    bytes, non-string keys, integers beyond 64 bits): those, and a document where orjson wrote a
    null (it writes NaN and infinities as null where the json module keeps them), take the json
    module's round trip."""
    try:
        text = orjson.dumps(doc, option=orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS)
    except TypeError:  # orjson.JSONEncodeError
        text = b"null"
    if b"null" not in text and type(doc) is dict:
        fast: dict[str, Any] = orjson.loads(text)
        return fast
    out: dict[str, Any] = json.loads(json.dumps(doc, default=str))
    return out
