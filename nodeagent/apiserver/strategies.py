"""One strategy per kind: what differs between kinds in the generic registry's verbs.

Shaped like k8s.io/apiserver's rest.RESTCreateStrategy / RESTUpdateStrategy: PrepareForCreate
(status reset on create), PrepareForUpdate (a spec write keeps the stored status, a status
write keeps the stored spec: the store does both), Validate / ValidateUpdate beyond what the
store's kind hooks already check, and GetAttrs (the field labels a fieldSelector may use).
The store's hooks (objects/resource.py) validate the DRA kinds and Node on every write; pods
are validated here with the same parser the admin API and the node use (pod_from_manifest),
so a bad pod gets the same message either way. Pure: no I/O; the clock is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodeagent.clock import Clock
from nodeagent.errors import ValidationError
from nodeagent.objects.pod_manifest import pod_from_manifest
from nodeagent.objects.pod_status_checks import check_pod_status
from nodeagent.pods.qos import pod_qos
from nodeagent.pods.updates import UPDATE_FORBIDDEN
from nodeagent.store import validation as objmeta

Obj = dict[str, Any]
FieldGetter = Callable[[Mapping[str, Any]], str]


def _path(*keys: str) -> FieldGetter:
    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for key in keys:
            if not isinstance(cur, Mapping):
                return ""
            cur = cur.get(key)
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


_DEFAULT_FIELDS: dict[str, FieldGetter] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}


@dataclass(frozen=True)
class Strategy:
    """The generic kind: no status reset beyond the store's, metadata fields only.

    `reset_status_on_create`: the kind has a status subresource, so a create drops the
    status a client sent (as upstream's PrepareForCreate does).
    """

    kind: str
    reset_status_on_create: bool = False
    fields: Mapping[str, FieldGetter] = field(default_factory=dict)

    def field_getters(self) -> Mapping[str, FieldGetter]:
        return {**_DEFAULT_FIELDS, **self.fields}

    def prepare_for_create(self, obj: Obj, clock: Clock) -> None:
        if self.reset_status_on_create:
            obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        """A spec write: the store keeps the stored status."""

    def validate(self, obj: Obj, clock: Clock) -> None:
        """Checks beyond the store's metadata checks and kind hooks; ValidationError names the field."""

    def validate_update(self, new: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        """Transition rules beyond the store's `validate_update` hook."""

    def validate_status(self, obj: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        """The checks of a status write (which keeps the stored spec): by default all of `validate`."""
        self.validate(obj, clock)

    def graceful_delete_period(self, obj: Mapping[str, Any], requested: int | None) -> int | None:
        """RESTGracefulDeleteStrategy.CheckGracefulDelete: the grace period a deletion of `obj` gets
        (`requested`: DeleteOptions.gracePeriodSeconds), or None for a kind deleted at once."""
        return None


@dataclass(frozen=True)
class PodStrategy(Strategy):
    """Pods: validated by the node's own parser; status starts Pending with its QoS class;
    updates may change only what the API server lets change (images, labels, annotations...).

    A create parses the pod in prepare_for_create and the registry validates it right after,
    with nothing in between: the parse is not repeated for the very object (and spec and
    metadata) just parsed. `_parsed` holds that one object until its validate, no longer."""

    _parsed: list[tuple[Obj, Any, Any]] = field(default_factory=list, compare=False, repr=False)

    def prepare_for_create(self, obj: Obj, clock: Clock) -> None:
        self._parsed.clear()
        pod = pod_from_manifest(obj, clock=clock)
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos(pod)}
        self._parsed.append((obj, obj.get("spec"), obj.get("metadata")))

    def validate(self, obj: Obj, clock: Clock) -> None:
        parsed = self._parsed.pop() if self._parsed else None
        if parsed is not None and parsed[0] is obj and parsed[1] is obj.get("spec") \
                and parsed[2] is obj.get("metadata"):
            return
        pod_from_manifest(obj, clock=clock)

    def validate_status(self, obj: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        """A status write keeps the stored spec and labels: the pod parse (spec and metadata, no
        status) would see what it saw when the pod was stored; as upstream's status strategy,
        which validates the status and the metadata update, not the spec again. The status
        itself is held to ValidatePodStatusUpdate's allocatedResourcesStatus rules."""
        check_pod_status(obj)
        md, old_md = obj.get("metadata") or {}, old.get("metadata") or {}
        if obj.get("spec") is old.get("spec") and all(md.get(k) == old_md.get(k) for k in _PARSED_META):
            return
        self.validate(obj, clock)

    def graceful_delete_period(self, obj: Mapping[str, Any], requested: int | None) -> int:
        """The pod strategy's CheckGracefulDelete: the requested period, else the pod's
        terminationGracePeriodSeconds (0 when unset); 0 for a pod no node runs (unscheduled, or
        already Succeeded/Failed); a negative period is 1."""
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        period = requested if requested is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            period = 0
        return 1 if period < 0 else period

    def validate_update(self, new: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        old_spec, new_spec = dict(old.get("spec") or {}), dict(new.get("spec") or {})
        if old_spec.get("nodeName") and not new_spec.get("nodeName"):
            new_spec["nodeName"] = old_spec["nodeName"]  # a client that omits the binding keeps it
            new["spec"] = new_spec
        if _without_images(old_spec) != _without_images(new_spec):
            raise ValidationError("spec", f"Forbidden: {UPDATE_FORBIDDEN}")


_PARSED_META = ("name", "namespace", "generateName", "uid", "labels", "annotations", "ownerReferences",
                "deletionTimestamp", "deletionGracePeriodSeconds", "creationTimestamp")
"""The metadata of a pod its parse reads (a status write that keeps these and the spec is not parsed again)."""


def _without_images(spec: Mapping[str, Any]) -> Any:
    """A pod spec without what may change on update: images and activeDeadlineSeconds, and
    tolerations may grow."""
    out = {k: v for k, v in spec.items() if k not in ("activeDeadlineSeconds", "tolerations")}
    for key in ("containers", "initContainers"):
        out[key] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get(key) or [] if isinstance(c, dict)]
    return out


@dataclass(frozen=True)
class NamespaceStrategy(Strategy):
    """Namespaces: status.phase Active, the `kubernetes` finalizer in spec as upstream shows it,
    and the name must be a DNS label."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> None:
        obj["status"] = {"phase": "Active"}
        obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = str(obj["metadata"].get("name") or "")

    def validate(self, obj: Obj, clock: Clock) -> None:
        objmeta.check_dns_label("metadata.name", str((obj.get("metadata") or {}).get("name") or ""))


@dataclass(frozen=True)
class ConfigMapStrategy(Strategy):
    """ConfigMaps: data/binaryData keys are config keys, no key in both (upstream's messages)."""

    def validate(self, obj: Obj, clock: Clock) -> None:
        seen: set[str] = set()
        for attr in ("data", "binaryData"):
            values = obj.get(attr)
            if values is None:
                continue
            if not isinstance(values, dict):
                raise ValidationError(attr, f"Invalid value: must be an object, not {objmeta.go_type(values)}")
            for key, value in values.items():
                _check_config_key(f"{attr}[{key}]", str(key))
                if not isinstance(value, str):
                    raise ValidationError(f"{attr}[{key}]", f"Invalid value: must be a string, not "
                                          f"{objmeta.go_type(value)}")
                if key in seen:
                    raise ValidationError(f"{attr}[{key}]", f'Invalid value: "{key}": duplicate of key present '
                                          "in data")
                seen.add(key)


def _check_config_key(path: str, key: str) -> None:
    import re

    if not key or len(key) > 253 or not re.fullmatch(r"[-._a-zA-Z0-9]+", key) or key in (".", ".."):
        raise ValidationError(path, f'Invalid value: "{key}": a valid config key must consist of alphanumeric '
                              "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', "
                              "regex used for validation is '[-._a-zA-Z0-9]+')")


_POD_FIELDS: dict[str, FieldGetter] = {
    "spec.nodeName": _path("spec", "nodeName"),
    "spec.restartPolicy": _path("spec", "restartPolicy"),
    "spec.schedulerName": _path("spec", "schedulerName"),
    "spec.serviceAccountName": _path("spec", "serviceAccountName"),
    "spec.hostNetwork": lambda o: "true" if (o.get("spec") or {}).get("hostNetwork") else "false",
    "status.phase": _path("status", "phase"),
    "status.podIP": _path("status", "podIP"),
    "status.nominatedNodeName": _path("status", "nominatedNodeName"),
}
_EVENT_FIELDS: dict[str, FieldGetter] = {
    **{f"involvedObject.{f}": _path("involvedObject", f)
       for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": lambda o: str((o.get("source") or {}).get("component") or o.get("reportingComponent") or ""),
    "type": _path("type"),
}
_SLICE_FIELDS: dict[str, FieldGetter] = {
    "spec.nodeName": _path("spec", "nodeName"),
    "spec.driver": _path("spec", "driver"),
    "spec.pool.name": _path("spec", "pool", "name"),
}


def builtin_strategies() -> dict[str, Strategy]:
    """By store kind."""
    from nodeagent.apiserver.strategies_taints import taint_strategies  # subclasses Strategy

    return {
        "Pod": PodStrategy("Pod", fields=_POD_FIELDS),
        "Node": Strategy("Node", fields={"spec.unschedulable": lambda o: "true" if (o.get("spec") or {}).get(
            "unschedulable") else "false"}),
        "Namespace": NamespaceStrategy("Namespace", fields={"status.phase": _path("status", "phase")}),
        "Event": Strategy("Event", fields=_EVENT_FIELDS),
        "ResourceQuota": Strategy("ResourceQuota", reset_status_on_create=True),
        "ConfigMap": ConfigMapStrategy("ConfigMap"),
        "ServiceAccount": Strategy("ServiceAccount"),
        "Lease": Strategy("Lease"),
        "DeviceClass": Strategy("DeviceClass"),
        "ResourceClaim": Strategy("ResourceClaim", reset_status_on_create=True),
        "ResourceClaimTemplate": Strategy("ResourceClaimTemplate"),
        "ResourceSlice": Strategy("ResourceSlice", fields=_SLICE_FIELDS),
        "PodSchedulingContext": Strategy("PodSchedulingContext", reset_status_on_create=True),
        **taint_strategies(_SLICE_FIELDS),
    }
