"""The apps/v1 kinds: Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision, and the
batch/v1 kinds: Job, CronJob. Facts from k8s.io/kubernetes pkg/registry/apps/* and batch/*
(scope, short names, categories, subresources, reset fields). Pure: no I/O.

Why one module for two groups: the workload kinds are one family (a pod template, a status the
controllers write, a scale subresource on three of them) and one strategy serves them all
(apiserver/strategies_apps.py); discovery still lists apps and batch as the groups they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.kinds.model import GENERATION_SPEC, FieldGetter, Kind, Reset

APPS_V1 = "apps/v1"
BATCH_V1 = "batch/v1"
APPS = {"apps": "io.k8s.api.apps"}
BATCH = {"batch": "io.k8s.api.batch"}

def _count(*keys: str) -> FieldGetter:
    """A counter field label: its value as a number, "0" when unset (strconv.Itoa of the int)."""

    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for key in keys:
            cur = cur.get(key) if isinstance(cur, Mapping) else None
        return str(cur) if isinstance(cur, int) and not isinstance(cur, bool) else "0"

    return get


WORKLOAD_RESET = Reset(on_create=("status",), spec_write=("status",), status_write=("spec",))
"""PrepareForCreate drops the status; the main strategy resets status, the status strategy spec."""

DEPLOYMENT = Kind(
    "Deployment", "deployments", namespaced=True, versions=(APPS_V1,), definition=APPS, short_names=("deploy",),
    categories=("all",), subresources=("status", "scale"),
    # deploymentStatusStrategy also resets metadata.labels (upstream's GetResetFields)
    reset=Reset(on_create=("status",), spec_write=("status",), status_write=("spec", "metadata.labels")),
    strategy="workload", printer="deployment",
    generation=GENERATION_SPEC,
)
REPLICA_SET = Kind(
    "ReplicaSet", "replicasets", namespaced=True, versions=(APPS_V1,), definition=APPS, short_names=("rs",),
    categories=("all",), subresources=("status", "scale"), reset=WORKLOAD_RESET,
    strategy="workload", printer="replicaset",
    generation=GENERATION_SPEC,
)
STATEFUL_SET = Kind(
    "StatefulSet", "statefulsets", namespaced=True, versions=(APPS_V1,), definition=APPS, short_names=("sts",),
    categories=("all",), subresources=("status", "scale"), reset=WORKLOAD_RESET,
    strategy="workload", printer="statefulset",
    generation=GENERATION_SPEC,
)
DAEMON_SET = Kind(
    "DaemonSet", "daemonsets", namespaced=True, versions=(APPS_V1,), definition=APPS, short_names=("ds",),
    categories=("all",), subresources=("status",), reset=WORKLOAD_RESET,
    strategy="daemonset", printer="daemonset",
    generation=GENERATION_SPEC,
)
CONTROLLER_REVISION = Kind(
    "ControllerRevision", "controllerrevisions", namespaced=True, versions=(APPS_V1,), definition=APPS,
    strategy="workload", printer="controllerrevision",
)

APPS_KINDS = (DEPLOYMENT, STATEFUL_SET, DAEMON_SET, REPLICA_SET, CONTROLLER_REVISION)

JOB = Kind(
    "Job", "jobs", namespaced=True, versions=(BATCH_V1,), definition=BATCH, categories=("all",),
    subresources=("status",), reset=WORKLOAD_RESET,
    # batch/v1's field label conversion (ReplicaSet's status.replicas is GetAttrs' only: apps/v1 refuses it)
    field_labels={"status.successful": _count("status", "succeeded")}, strategy="job", printer="job",
    generation=GENERATION_SPEC,
)
CRON_JOB = Kind(
    "CronJob", "cronjobs", namespaced=True, versions=(BATCH_V1,), definition=BATCH, short_names=("cj",),
    categories=("all",), subresources=("status",), reset=WORKLOAD_RESET, strategy="workload", printer="cronjob",
    generation=GENERATION_SPEC,
)

BATCH_KINDS = (CRON_JOB, JOB)

KINDS = (*APPS_KINDS, *BATCH_KINDS)
