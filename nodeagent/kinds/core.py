"""The core group's kinds (and Event, which events.k8s.io/v1 serves too): Namespace, Node, Pod,
Event, ResourceQuota, ConfigMap, ServiceAccount, Service, Secret, PersistentVolume,
PersistentVolumeClaim, ReplicationController, Endpoints. Facts from k8s.io/kubernetes pkg/registry/core/*
(scope, short names, subresources, field labels, reset fields) and pkg/apis/events/v1/conversion.go
(the Event renames). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.kinds.model import GENERATION_SPEC, STATUS_RESET, Conversion, Kind, Obj, Reset, flag, path

CORE_V1 = "v1"
EVENTS_V1 = "events.k8s.io/v1"
CORE = {"": "io.k8s.api.core"}

# core v1 name -> events.k8s.io/v1 name; fields not listed keep their name.
EVENT_RENAMES = {
    "involvedObject": "regarding",
    "message": "note",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
    "reportingComponent": "reportingController",
}
_EVENT_RENAMES_BACK = {v: k for k, v in EVENT_RENAMES.items()}


def _renamed(renames: Mapping[str, str]) -> Any:
    def convert(obj: Mapping[str, Any]) -> Obj:
        return {renames.get(key, key): value for key, value in obj.items()}

    return convert


NAMESPACE = Kind(
    "Namespace", "namespaces", namespaced=False, versions=(CORE_V1,), definition=CORE, short_names=("ns",),
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"), subresources=("status", "finalize"),
    # the strategy sets status.phase Active on create (upstream's PrepareForCreate); only
    # namespaces/finalize writes spec.finalizers (the strategy keeps them on other writes)
    reset=Reset(spec_write=("status",), status_write=("spec",)),
    field_labels={"status.phase": path("status", "phase")}, strategy="namespace", printer="namespace",
    returns_deleted=True,
)
NODE = Kind(
    "Node", "nodes", namespaced=False, versions=(CORE_V1,), definition=CORE, short_names=("no",),
    subresources=("status",),
    # a node may be created with its status (upstream's nodeStrategy keeps it)
    reset=Reset(spec_write=("status",), status_write=("spec",)),
    field_labels={"spec.unschedulable": flag("spec", "unschedulable")}, store_hooks="resource", printer="node",
    strategy="node",
)
POD = Kind(
    "Pod", "pods", namespaced=True, versions=(CORE_V1,), definition=CORE, short_names=("po",), categories=("all",),
    subresources=("status", "binding", "eviction"),
    # the strategy replaces the status on create (Pending, its QoS class)
    reset=Reset(spec_write=("status",),
                status_write=("spec", "metadata.deletionTimestamp", "metadata.ownerReferences")),
    field_labels={
        "spec.nodeName": path("spec", "nodeName"),
        "spec.restartPolicy": path("spec", "restartPolicy"),
        "spec.schedulerName": path("spec", "schedulerName"),
        "spec.serviceAccountName": path("spec", "serviceAccountName"),
        "spec.hostNetwork": flag("spec", "hostNetwork"),
        "status.phase": path("status", "phase"),
        "status.podIP": path("status", "podIP"),
        "status.nominatedNodeName": path("status", "nominatedNodeName"),
    },
    store_hooks="core", strategy="pod", printer="pod", returns_deleted=True,
    generation=GENERATION_SPEC,
)
EVENT_TTL = 3600.0
"""kube-apiserver's --event-ttl default (1 h): an Event expires that long after its last write."""
EVENT = Kind(
    "Event", "events", namespaced=True, versions=(CORE_V1, EVENTS_V1),
    definition={**CORE, "events.k8s.io": "io.k8s.api.events"}, short_names=("ev",),
    conversions={EVENTS_V1: Conversion(_renamed(_EVENT_RENAMES_BACK), _renamed(EVENT_RENAMES))},
    field_labels={
        **{f"involvedObject.{f}": path("involvedObject", f)
           for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
        "reason": path("reason"),
        "reportingComponent": path("reportingComponent"),
        "source": lambda o: str((o.get("source") or {}).get("component") or o.get("reportingComponent") or ""),
        "type": path("type"),
    },
    store_hooks="core", printer="event", ttl=EVENT_TTL,
)
RESOURCE_QUOTA = Kind(
    "ResourceQuota", "resourcequotas", namespaced=True, versions=(CORE_V1,), definition=CORE,
    short_names=("quota",), subresources=("status",), reset=STATUS_RESET, store_hooks="core", printer="resourcequota",
    returns_deleted=True,
)
CONFIG_MAP = Kind(
    "ConfigMap", "configmaps", namespaced=True, versions=(CORE_V1,), definition=CORE, short_names=("cm",),
    strategy="configmap", printer="configmap",
)
SERVICE_ACCOUNT = Kind(
    "ServiceAccount", "serviceaccounts", namespaced=True, versions=(CORE_V1,), definition=CORE,
    short_names=("sa",), subresources=("token",), printer="serviceaccount", returns_deleted=True,
)

SERVICE = Kind(
    "Service", "services", namespaced=True, versions=(CORE_V1,), definition=CORE, short_names=("svc",),
    categories=("all",), subresources=("status",), reset=STATUS_RESET,
    field_labels={"spec.clusterIP": path("spec", "clusterIP"), "spec.type": path("spec", "type")},
    # defaulting, validation and the cluster-IP / node-port allocation (objects/service.py)
    store_hooks="service", strategy="service", printer="service", returns_deleted=True,
)
SECRET = Kind(
    "Secret", "secrets", namespaced=True, versions=(CORE_V1,), definition=CORE,
    field_labels={"type": path("type")}, store_hooks="secret", printer="secret",
)
PERSISTENT_VOLUME = Kind(
    "PersistentVolume", "persistentvolumes", namespaced=False, versions=(CORE_V1,), definition=CORE,
    short_names=("pv",), subresources=("status",),
    # the strategy sets status.phase Pending and its lastPhaseTransitionTime on create
    reset=Reset(spec_write=("status",), status_write=("spec",)),
    field_labels={"name": path("metadata", "name")}, store_hooks="volumes", strategy="persistentvolume",
    printer="persistentvolume", returns_deleted=True,
)
PERSISTENT_VOLUME_CLAIM = Kind(
    "PersistentVolumeClaim", "persistentvolumeclaims", namespaced=True, versions=(CORE_V1,), definition=CORE,
    short_names=("pvc",), subresources=("status",), reset=STATUS_RESET,
    field_labels={"name": path("metadata", "name")}, store_hooks="volumes", printer="persistentvolumeclaim",
    returns_deleted=True,
)
REPLICATION_CONTROLLER = Kind(
    "ReplicationController", "replicationcontrollers", namespaced=True, versions=(CORE_V1,), definition=CORE,
    short_names=("rc",), categories=("all",), subresources=("status", "scale"),
    reset=Reset(on_create=("status",), spec_write=("status",), status_write=("spec",)),
    field_labels={"status.replicas": path("status", "replicas")}, strategy="replicationcontroller",
    printer="replicationcontroller",
    generation=GENERATION_SPEC,
)
ENDPOINTS = Kind(
    "Endpoints", "endpoints", namespaced=True, versions=(CORE_V1,), definition=CORE, short_names=("ep",),
    singular="endpoints", store_hooks="endpoints", printer="endpoints",
)

KINDS = (NAMESPACE, NODE, POD, EVENT, RESOURCE_QUOTA, CONFIG_MAP, SERVICE_ACCOUNT, SERVICE, SECRET,
         PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, REPLICATION_CONTROLLER, ENDPOINTS)
