"""One strategy per kind: what differs between kinds in the generic registry's verbs.

Shaped like k8s.io/apiserver's rest.RESTCreateStrategy / RESTUpdateStrategy: PrepareForCreate
(status reset on create), PrepareForUpdate (a spec write keeps the stored status, a status
write keeps the stored spec: the store does both), Validate / ValidateUpdate beyond what the
store's kind hooks already check, and GetAttrs (the field labels a fieldSelector may use).

Every built-in kind's strategy comes from its declaration (nodeagent/kinds): the generic
`Strategy` with the declared reset fields and field labels, or, where the declaration names
one (`strategy`), a subclass from SPECIAL. The declaration also says which objects/ module's
hooks the store runs on the kind (`store_hooks`): those validate the DRA kinds and Node on every
write; pods are validated here with the same parser the admin API and the node use
(pod_from_manifest), so a bad pod gets the same message either way. Pure: no I/O; the clock is
passed in.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

from nodeagent.errors import ValidationError
from nodeagent.kinds import BUILTIN
from nodeagent.kinds.model import FieldGetter, Kind, Reset, path
from nodeagent.objects import podcertificates, replication, secret
from nodeagent.objects.common import Errors, too_long_bytes
from nodeagent.objects.node_admission import admit_new_node, node_defaults
from nodeagent.objects.pod import admission as pod_admission
from nodeagent.objects.pod import gates
from nodeagent.objects.pod.defaults import pod_defaults
from nodeagent.objects.pod.manifest import check_identity, parse_key, pod_from_manifest
from nodeagent.objects.pod.status_checks import check_pod_status
from nodeagent.objects.pod_create_admission import admit_new_pod
from nodeagent.objects.service import keep_allocated
from nodeagent.pods.qos import pod_qos
from nodeagent.pods.updates import UPDATE_FORBIDDEN
from nodeagent.store import validation as objmeta
from nodeagent.store.meta import rfc3339
from nodeagent.util.clock import Clock

Obj = dict[str, Any]

_DEFAULT_FIELDS: dict[str, FieldGetter] = {
    "metadata.name": path("metadata", "name"),
    "metadata.namespace": path("metadata", "namespace"),
}


@dataclass(frozen=True)
class Prepared:
    """What a create's preparation already checked of the object it prepared (`prepare_for_create`
    returns it, the registry hands it to `validate_prepared` right after): the object, its spec
    and its metadata as they were, so a change in between is seen."""

    obj: Obj
    spec: Any
    metadata: Any

    @classmethod
    def of(cls, obj: Obj) -> Prepared:
        return cls(obj, obj.get("spec"), obj.get("metadata"))

    def still(self, obj: Obj) -> bool:
        """Whether `obj` is the very object prepared, with the same spec and metadata."""
        return self.obj is obj and self.spec is obj.get("spec") and self.metadata is obj.get("metadata")


class Reader(Protocol):
    """What a kind's admission reads of the store (other objects, as the admission plugins' listers)."""

    def peek(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def scan(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]: ...

    def generate_name(self, prefix: str) -> str: ...


@dataclass(frozen=True)
class Strategy:
    """The generic kind: its reset fields and field labels, metadata fields always.

    `reset`: upstream's reset fields as the kind's declaration names them; a create drops
    `reset.on_create`. `reset_status_on_create` adds status to those (custom resources with a
    status subresource, whose CRD says so at run time).
    """

    kind: str
    uid_before_create: ClassVar[bool] = False
    """Whether the create's uid is chosen before prepare_for_create (a Job's selector names it)."""
    defaults_apart: ClassVar[bool] = False
    """Whether `decode_defaults` sets every default kube-apiserver's decoding sets (none waits for
    prepare_for_create): a create then takes its managedFields from the object as decoded and
    defaulted, before mutating admission and PrepareForCreate, as upstream's create handler does,
    so what admission adds (a pod's service account volume and mounts, tolerations, priority) is
    nobody's field. Kinds without it take them after admission and preparation."""
    reset_status_on_create: bool = False
    fields: Mapping[str, FieldGetter] = field(default_factory=dict)
    reset: Reset = field(default_factory=Reset)

    def __post_init__(self) -> None:
        if self.reset_status_on_create and "status" not in self.reset.on_create:
            object.__setattr__(self, "reset", replace(self.reset, on_create=(*self.reset.on_create, "status")))
        elif not self.reset_status_on_create and "status" in self.reset.on_create:
            object.__setattr__(self, "reset_status_on_create", True)

    @classmethod
    def of(cls, decl: Kind) -> Strategy:
        """The strategy a kind's declaration describes (its reset fields and field labels)."""
        return cls(decl.kind, fields=decl.field_labels, reset=decl.reset)

    def field_getters(self) -> Mapping[str, FieldGetter]:
        return {**_DEFAULT_FIELDS, **self.fields}

    def admit(self, obj: Obj, old: Mapping[str, Any] | None, read: Reader) -> None:
        """kube-apiserver's default mutating admission plugins for a write of the object proper (not a
        subresource; `old` None on create), before PrepareForCreate/PrepareForUpdate as upstream's
        handlers run them; a refusal is a ValidationError whose text says `... is forbidden: ...`.
        None for most kinds."""

    def decode_defaults(self, obj: Obj) -> None:
        """SetObjectDefaults as the request's decoding runs them (called only with `defaults_apart`)."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> Prepared | None:
        """PrepareForCreate; answers what it already checked of `obj` (for `validate_prepared`),
        or None when it checked nothing."""
        for name in self.reset.on_create:
            obj.pop(name, None)
        return None

    def prepare_for_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        """A spec write: the store keeps the stored status."""

    def prepare_for_status_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        """What the status strategy's PrepareForUpdate (and the decoding's defaults) add to a /status
        write beyond the kept fields the registry restores (nothing for most kinds)."""

    def validate(self, obj: Obj, clock: Clock) -> None:
        """Checks beyond the store's metadata checks and kind hooks; ValidationError names the field."""

    def validate_update(self, new: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        """Transition rules beyond the store's `validate_update` hook."""

    def validate_prepared(self, obj: Obj, clock: Clock, prepared: Prepared | None) -> None:
        """`validate` of a create, right after `prepare_for_create` answered `prepared`: a strategy
        whose preparation already checked the object does not check it again."""
        self.validate(obj, clock)

    def validate_status(self, obj: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        """The checks of a status write (which keeps the stored spec): by default all of `validate`."""
        self.validate(obj, clock)

    def validate_finalize(self, obj: Obj) -> None:
        """The defaults and checks of a namespaces/finalize write (only Namespace has that subresource)."""

    def graceful_delete_period(self, obj: Mapping[str, Any], requested: int | None) -> int | None:
        """RESTGracefulDeleteStrategy.CheckGracefulDelete: the grace period a deletion of `obj` gets
        (`requested`: DeleteOptions.gracePeriodSeconds), or None for a kind deleted at once."""
        return None


@dataclass(frozen=True)
class PodStrategy(Strategy):
    """Pods: validated by the node's own parser; status starts Pending with its QoS class;
    updates may change only what the API server lets change (images, labels, annotations...).

    A create parses the pod in prepare_for_create, which answers that it did (`Prepared`), and
    the registry hands that answer to `validate_prepared` right after: the parse is not
    repeated for the very object (and spec and metadata) just parsed. The strategy keeps no
    state between the two calls; across creates it remembers only the QoS class of equal pods
    (`parsed`)."""

    defaults_apart: ClassVar[bool] = True
    parsed: dict[bytes, str] = field(default_factory=dict, compare=False, repr=False)
    """The QoS class of pods this strategy's creates parsed, by manifest.parse_key (bounded): an
    equal pod (a replica: only its names, uid, volumes and mounts differ, which the parse does not
    read but for the names' checks) needs only those checks, not the whole parse again."""

    def decode_defaults(self, obj: Obj) -> None:
        pod_defaults(obj)

    def admit(self, obj: Obj, old: Mapping[str, Any] | None, read: Reader) -> None:
        """The ServiceAccount (objects/serviceaccount.py), Priority and DefaultTolerationSeconds plugins
        (objects/pod/admission.py), in kube-apiserver's order."""
        if not isinstance(obj.get("spec"), dict):
            return  # the parse in prepare_for_create names what is wrong
        if old is None:
            admit_new_pod(obj, read.peek, lambda: read.scan("PriorityClass"), read.generate_name)
        else:
            pod_admission.admit_update(obj, old)

    def prepare_for_create(self, obj: Obj, clock: Clock) -> Prepared:
        # SetObjectDefaults_Pod, as kube-apiserver's decoding runs it (schedulerName among them: a
        # scheduler serves a pod only under its own name); the registry ran them before admission
        # already (decode_defaults): again here for what admission added (idempotent)
        pod_defaults(obj)
        key = parse_key(obj) if type(obj.get("metadata")) is dict else None
        qos = self.parsed.get(key) if key is not None else None
        if qos is None:
            qos = pod_qos(pod_from_manifest(obj, clock=clock))
            if key is not None:
                if len(self.parsed) >= _MAX_PARSED:
                    self.parsed.clear()
                self.parsed[key] = qos
        else:
            check_identity(obj)
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("schedulingGates"):
            gates.create_errors(spec).raise_all()
        obj["status"] = {"phase": "Pending", "qosClass": qos}
        gates.add_gated_condition(obj)
        return Prepared.of(obj)

    def prepare_for_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        """The decoding's defaults on every write: an update that omits a defaulted field does not
        change it (the spec's immutability is checked on defaulted specs, as upstream's)."""
        pod_defaults(new)

    def validate(self, obj: Obj, clock: Clock) -> None:
        pod_from_manifest(obj, clock=clock)

    def validate_prepared(self, obj: Obj, clock: Clock, prepared: Prepared | None) -> None:
        if prepared is None or not prepared.still(obj):
            self.validate(obj, clock)

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
        spec = new.get("spec")
        if spec is old.get("spec") and isinstance(spec, dict) and spec.get("schedulerName"):
            # a status write (and a patch of the status) keeps the stored spec itself: it compares
            # equal to itself and its schedulerName needs no default, so there is nothing to carry
            # over or compare (the two defaulted copies were a status write's largest validation cost)
            return
        old_spec, new_spec = _defaulted_spec(old), dict(new.get("spec") or {})
        if not new_spec.get("schedulerName") and old_spec.get("schedulerName"):
            new_spec["schedulerName"] = old_spec["schedulerName"]  # defaulted again, as on create
            new["spec"] = new_spec
        if old_spec.get("nodeName") and not new_spec.get("nodeName"):
            new_spec["nodeName"] = old_spec["nodeName"]  # a client that omits the binding keeps it
            new["spec"] = new_spec
        errs = gates.update_errors(new_spec, old_spec)
        if _without_images(old_spec) != _without_images(gates.comparable(_defaulted_spec({"spec": new_spec}),
                                                                         old_spec)):
            errs.append(ValidationError("spec", f"Forbidden: {UPDATE_FORBIDDEN}"))
        errs.raise_all()


def _defaulted_spec(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a pod's spec as defaulted now: both sides of an update compare defaulted (one stored
    by an earlier release, or written by a caller that skipped the decoding, may lack a default)."""
    defaulted = {"spec": copy.deepcopy(dict(pod.get("spec") or {}))}
    pod_defaults(defaulted)
    return defaulted["spec"]


_MAX_PARSED = 1024

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
        super().prepare_for_create(obj, clock)
        obj["status"] = {"phase": "Active"}
        obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
        labels = obj.setdefault("metadata", {}).setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = str(obj["metadata"].get("name") or "")

    def validate(self, obj: Obj, clock: Clock) -> None:
        objmeta.check_dns_label("metadata.name", str((obj.get("metadata") or {}).get("name") or ""))

    def prepare_for_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        """PrepareForUpdate: spec.finalizers are namespaces/finalize's to write, kept from the stored
        object; SetDefaults_Namespace's name label on every write, as upstream's decoding sets it."""
        _name_label(new)
        finalizers = (old.get("spec") or {}).get("finalizers")
        spec = new.get("spec")
        spec = dict(spec) if isinstance(spec, dict) else {}
        if finalizers is None:
            spec.pop("finalizers", None)
        else:
            spec["finalizers"] = finalizers
        new["spec"] = spec

    def prepare_for_status_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        """The name label SetDefaults_Namespace sets when any write is decoded, /status's too."""
        _name_label(new)

    def validate_finalize(self, obj: Obj) -> None:
        """ValidateNamespaceFinalizeUpdate: each finalizer a qualified name, and one without a
        prefix a standard one (kubernetes, orphan, foregroundDeletion). The name label is
        defaulted and an empty list dropped, as upstream's decoding and encoding do."""
        _name_label(obj)
        spec = obj.get("spec")
        if isinstance(spec, dict) and not spec.get("finalizers") and "finalizers" in spec:
            obj["spec"] = {k: v for k, v in spec.items() if k != "finalizers"}
        errs = Errors()
        for i, name in enumerate(((obj.get("spec") or {}).get("finalizers")) or ()):
            path = f"spec.finalizers[{i}]"
            errs.check(objmeta.check_qualified_name, path, str(name))
            if "/" not in str(name) and name not in ("kubernetes", "orphan", "foregroundDeletion"):
                errs.append(objmeta.invalid(path, name, "name is neither a standard finalizer name nor is it fully "
                                            "qualified"))
        errs.raise_all()


def _name_label(ns: Obj) -> None:
    """SetDefaults_Namespace: the kubernetes.io/metadata.name label is the namespace's name."""
    md = ns.get("metadata")
    if isinstance(md, dict) and md.get("name"):
        md["labels"] = {**(md.get("labels") or {}), "kubernetes.io/metadata.name": str(md["name"])}


@dataclass(frozen=True)
class ConfigMapStrategy(Strategy):
    """ConfigMaps as ValidateConfigMap: data/binaryData keys are config keys, a data key also in
    binaryData is reported on `data[key]`, the values together (binaryData decoded) at most
    core.MaxSecretSize bytes, reported on the whole object (`[]`); every failure at once."""

    def validate(self, obj: Obj, clock: Clock) -> None:
        maps: dict[str, dict[str, Any]] = {}
        for attr in ("data", "binaryData"):
            values = obj.get(attr)
            if values is None:
                continue
            if not isinstance(values, dict):
                raise ValidationError(attr, f"Invalid value: must be an object, not {objmeta.go_type(values)}")
            for key, value in values.items():
                if not isinstance(value, str):
                    raise ValidationError(f"{attr}[{key}]", f"Invalid value: must be a string, not "
                                          f"{objmeta.go_type(value)}")
            maps[attr] = values
        data, binary = maps.get("data", {}), maps.get("binaryData", {})
        errs = Errors()
        size = 0
        for attr, values in (("data", data), ("binaryData", binary)):
            for key, value in values.items():
                errs.extend(objmeta.invalid(f"{attr}[{key}]", key, msg) for msg in secret.config_key_errors(key))
                if attr == "data":
                    if key in binary:
                        errs.append(objmeta.invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
                    size += len(value.encode())
                else:
                    size += secret.decoded_length(value)
        if size > secret.MAX_SECRET_SIZE:
            errs.append(too_long_bytes("[]", secret.MAX_SECRET_SIZE))
        errs.raise_all()


@dataclass(frozen=True)
class ServiceStrategy(Strategy):
    """Services: an update that omits what was allocated (cluster IPs, node ports) keeps it, as
    upstream's REST storage does (patchAllocatedValues); the rest is the store's hooks
    (objects/service.py: defaulting, validation, allocation)."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> None:
        super().prepare_for_create(obj, clock)
        obj["status"] = {"loadBalancer": {}}  # an empty status as upstream's JSON shows it (a struct, never omitted)

    def prepare_for_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        keep_allocated(new, old)

    def validate(self, obj: Obj, clock: Clock) -> None:
        """The name is a DNS label (RelaxedServiceNameValidation, GA in 1.37): checked before the
        store's metadata checks, which would report the wider DNS-subdomain rule."""
        objmeta.check_dns_label("metadata.name", str((obj.get("metadata") or {}).get("name") or ""))


@dataclass(frozen=True)
class PersistentVolumeStrategy(Strategy):
    """PersistentVolumes: created Pending with lastPhaseTransitionTime now; a status write that
    changes the phase without setting a new transition time gets now, one that keeps the phase
    keeps the stored time (upstream's persistentvolumeStatusStrategy.PrepareForUpdate, done here
    in the status validation step, the strategy's only status hook)."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> None:
        super().prepare_for_create(obj, clock)
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": rfc3339(clock.now())}

    def validate_status(self, obj: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        status, old_status = obj.get("status"), old.get("status") or {}
        if isinstance(status, dict):
            stamp, old_stamp = status.get("lastPhaseTransitionTime"), old_status.get("lastPhaseTransitionTime")
            if status.get("phase") == old_status.get("phase") and stamp is None and old_stamp is not None:
                obj["status"] = {**status, "lastPhaseTransitionTime": old_stamp}
            elif status.get("phase") != old_status.get("phase") and stamp in (None, old_stamp):
                obj["status"] = {**status, "lastPhaseTransitionTime": rfc3339(clock.now())}
        super().validate_status(obj, old, clock)


@dataclass(frozen=True)
class ReplicationControllerStrategy(Strategy):
    """ReplicationControllers: defaults (selector and labels from the template), the zero status
    upstream writes, and ValidateReplicationController (objects/replication.py)."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> None:
        super().prepare_for_create(obj, clock)
        replication.set_defaults(obj)
        obj["status"] = dict(replication.EMPTY_STATUS)

    def prepare_for_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        replication.set_defaults(new)

    def validate(self, obj: Obj, clock: Clock) -> None:
        replication.validate(obj, clock)

    def validate_status(self, obj: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        """A status write keeps the stored spec (already valid): only the status counters."""
        replication.validate_status(obj)


@dataclass(frozen=True)
class PodCertificateRequestStrategy(Strategy):
    """podcertificaterequest's status strategy: ValidatePodCertificateRequestStatusUpdate, which
    reads kube-apiserver's clock (an issued NotBefore within 5 minutes of now). The create and
    update checks are the store's hooks (objects/podcertificates.py). The v1 defaults
    (maxExpirationSeconds) are applied here, before managedFields are computed, as decoding does
    upstream; a create's status is the empty struct kube-apiserver answers as `{}`."""

    def prepare_for_create(self, obj: Obj, clock: Clock) -> None:
        super().prepare_for_create(obj, clock)
        podcertificates.default_request(obj)
        obj["status"] = {}

    def prepare_for_update(self, new: Obj, old: Mapping[str, Any]) -> None:
        podcertificates.default_request(new)

    def validate_status(self, obj: Obj, old: Mapping[str, Any], clock: Clock) -> None:
        podcertificates.validate_status(obj, old, podcertificates.at(clock.now()))


@dataclass(frozen=True)
class NodeStrategy(Strategy):
    """Nodes: the decoding's defaults (allocatable from capacity), then, on a create, the
    TaintNodesByCondition admission (objects/node_admission.py). The create's managedFields are
    taken before admission, as upstream's create handler: the not-ready taint is nobody's field."""

    defaults_apart: ClassVar[bool] = True

    def decode_defaults(self, obj: Obj) -> None:
        node_defaults(obj)

    def admit(self, obj: Obj, old: Mapping[str, Any] | None, read: Reader) -> None:
        if old is None:
            admit_new_node(obj)


def special() -> dict[str, type[Strategy]]:
    """The strategies beyond the generic one, by the key a kind's declaration names (`strategy`)."""
    from nodeagent.apiserver.crds import CRDStrategy  # subclasses Strategy
    from nodeagent.apiserver.strategies_apps import DaemonSetStrategy, JobStrategy, WorkloadStrategy
    from nodeagent.apiserver.strategies_taints import SliceStrategy, TaintRuleStrategy

    return {
        "pod": PodStrategy,
        "node": NodeStrategy,
        "namespace": NamespaceStrategy,
        "configmap": ConfigMapStrategy,
        "service": ServiceStrategy,
        "persistentvolume": PersistentVolumeStrategy,
        "replicationcontroller": ReplicationControllerStrategy,
        "resourceslice": SliceStrategy,
        "devicetaintrule": TaintRuleStrategy,
        "customresourcedefinition": CRDStrategy,
        "workload": WorkloadStrategy,
        "job": JobStrategy,
        "daemonset": DaemonSetStrategy,
        "podcertificaterequest": PodCertificateRequestStrategy,
    }


def builtin_strategies() -> dict[str, Strategy]:
    """By store kind: each built-in kind's strategy as its declaration describes it."""
    classes = special()
    out: dict[str, Strategy] = {}
    for decl in BUILTIN:
        if decl.strategy and decl.strategy not in classes:
            raise KeyError(f"kind {decl.kind}: no strategy {decl.strategy!r}")
        out[decl.kind] = classes.get(decl.strategy, Strategy).of(decl)
    return out
