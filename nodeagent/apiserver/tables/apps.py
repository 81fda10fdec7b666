"""Server-side printers of the workload kinds: Deployment, ReplicaSet, StatefulSet, DaemonSet,
ControllerRevision (apps/v1), Job and CronJob (batch/v1).

Why written out: `kubectl get deploy,rs,sts,ds,job,cronjob` shows the cells computed here, and
`kubectl get` users read them as they read upstream's (k8s.io/kubernetes
pkg/printers/internalversion/printers.go: printDeployment, printReplicaSet, ...), so each
follows upstream's function; column descriptions are upstream's (the Go types' doc strings).
Objects are printed as stored (defaults applied on create), as upstream prints the internal
type. Pure: no I/O; `now` is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodeagent.apiserver.tables.common import (
    AGE_COLUMN,
    NAME_COLUMN,
    Cells,
    Printer,
    age,
    column,
    get,
    items,
    name_of,
    parse_time,
    since,
    text,
)
from nodeagent.objects.workloads import selector_string
from nodeagent.util.timefmt import human_duration

_CONTAINERS = column("Containers", "Names of each container in the template.", priority=1)
_IMAGES = column("Images", "Images referenced by each container in the template.", priority=1)
_READY_PODS = column("Ready", "Number of the pod with ready state")


def _int_column(name: str, description: str) -> dict[str, Any]:
    return column(name, description, type_="integer")


def _selector_column(description: str) -> dict[str, Any]:
    return column("Selector", description, priority=1)


def _count(obj: Any, *keys: str) -> int:
    value = get(obj, *keys)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def format_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: the selector's string, `<none>` when it selects by nothing."""
    return selector_string(selector) or "<none>"


def format_labels(labels: Any) -> str:
    """labels.FormatLabels: sorted `k=v` joined by commas, `<none>` when empty."""
    if not isinstance(labels, Mapping) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _containers(template: Any) -> Cells:
    """layoutContainerCells: the template's container names and images, comma-joined."""
    containers = [c for c in items(template, "spec", "containers") if isinstance(c, Mapping)]
    return [",".join(text(c, "name") for c in containers), ",".join(text(c, "image") for c in containers)]


# --- Deployment ----------------------------------------------------------------------------------

_DEPLOYMENT_COLUMNS = (
    NAME_COLUMN,
    _READY_PODS,
    column("Up-to-date", "Total number of non-terminating pods targeted by this deployment that have the desired "
           "template spec."),
    column("Available", "Total number of available non-terminating pods (ready for at least minReadySeconds) "
           "targeted by this deployment."),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    _selector_column("Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones "
                     "affected by this deployment. It must match the pod template's labels."),
)


def _deployment_cells(obj: Mapping[str, Any], now: float) -> Cells:
    ready, desired = _count(obj, "status", "readyReplicas"), _count(obj, "spec", "replicas")
    return [name_of(obj), f"{ready}/{desired}", _count(obj, "status", "updatedReplicas"),
            _count(obj, "status", "availableReplicas"), age(obj, now),
            *_containers(get(obj, "spec", "template")), selector_string(get(obj, "spec", "selector"))]


# --- ReplicaSet ----------------------------------------------------------------------------------

_REPLICA_SET_COLUMNS = (
    NAME_COLUMN,
    _int_column("Desired", "Replicas is the number of desired pods. This is a pointer to distinguish between explicit "
                "zero and unspecified. Defaults to 1. More info: "
                "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
    _int_column("Current", "Replicas is the most recently observed number of non-terminating pods. More info: "
                "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
    _int_column("Ready", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    _selector_column("Selector is a label query over pods that should match the replica count. Label keys and values "
                     "that must match in order to be controlled by this replica set. It must match the pod "
                     "template's labels. More info: "
                     "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
)


def _replica_set_cells(obj: Mapping[str, Any], now: float) -> Cells:
    return [name_of(obj), _count(obj, "spec", "replicas"), _count(obj, "status", "replicas"),
            _count(obj, "status", "readyReplicas"), age(obj, now),
            *_containers(get(obj, "spec", "template")), format_selector(get(obj, "spec", "selector"))]


# --- StatefulSet ---------------------------------------------------------------------------------

_STATEFUL_SET_COLUMNS = (NAME_COLUMN, _READY_PODS, AGE_COLUMN, _CONTAINERS, _IMAGES)


def _stateful_set_cells(obj: Mapping[str, Any], now: float) -> Cells:
    ready, desired = _count(obj, "status", "readyReplicas"), _count(obj, "spec", "replicas")
    return [name_of(obj), f"{ready}/{desired}", age(obj, now), *_containers(get(obj, "spec", "template"))]


# --- DaemonSet -----------------------------------------------------------------------------------

_DAEMON_SET_COLUMNS = (
    NAME_COLUMN,
    _int_column("Desired", "The total number of nodes that should be running the daemon pod (including nodes "
                "correctly running the daemon pod). More info: "
                "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
    _int_column("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to run the "
                "daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
    _int_column("Ready", "numberReady is the number of nodes that should be running the daemon pod and have one or "
                "more of the daemon pod running with a Ready Condition."),
    _int_column("Up-to-date", "The total number of nodes that are running updated daemon pod"),
    _int_column("Available", "The number of nodes that should be running the daemon pod and have one or more of the "
                "daemon pod running and available (ready for at least spec.minReadySeconds)"),
    column("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node. Selector "
           "which must match a node's labels for the pod to be scheduled on that node. More info: "
           "https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    _selector_column("A label query over pods that are managed by the daemon set. Must match in order to be "
                     "controlled. It must match the pod template's labels. More info: "
                     "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
)


def _daemon_set_cells(obj: Mapping[str, Any], now: float) -> Cells:
    st = get(obj, "status")
    return [name_of(obj), _count(st, "desiredNumberScheduled"), _count(st, "currentNumberScheduled"),
            _count(st, "numberReady"), _count(st, "updatedNumberScheduled"), _count(st, "numberAvailable"),
            format_labels(get(obj, "spec", "template", "spec", "nodeSelector")), age(obj, now),
            *_containers(get(obj, "spec", "template")), format_selector(get(obj, "spec", "selector"))]


# --- ControllerRevision --------------------------------------------------------------------------

_CONTROLLER_REVISION_COLUMNS = (
    NAME_COLUMN,
    column("Controller", "Controller of the object"),
    column("Revision", "Revision indicates the revision of the state represented by Data."),
    AGE_COLUMN,
)


def _controller_revision_cells(obj: Mapping[str, Any], now: float) -> Cells:
    controller = "<none>"
    for ref in items(obj, "metadata", "ownerReferences"):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            group = str(ref.get("apiVersion") or "").rpartition("/")[0]
            kind = str(ref.get("kind") or "")
            group_kind = f"{kind}.{group}" if group else kind
            controller = f"{group_kind.lower()}/{ref.get('name') or ''}" if group_kind else str(ref.get("name") or "")
            break
    return [name_of(obj), controller, _count(obj, "revision"), age(obj, now)]


# --- Job -----------------------------------------------------------------------------------------

_JOB_COLUMNS = (
    NAME_COLUMN,
    column("Status", "Status of the job."),
    column("Completions", "The number of pods which reached phase Succeeded. The value increases monotonically for a "
           "given spec. However, it may decrease in reaction to scale down of elastic indexed jobs."),
    column("Duration", "Time required to complete the job."),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    _selector_column("A label query over pods that should match the pod count. Normally, the system sets this field "
                     "for you. More info: "
                     "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
)

_JOB_STATES = ("Complete", "Failed", "", "Suspended", "FailureTarget", "SuccessCriteriaMet")
"""printJob's order of conditions ("" stands for a pending deletion: Terminating)."""


def _job_status(obj: Mapping[str, Any]) -> str:
    true = {text(c, "type") for c in items(obj, "status", "conditions") if text(c, "status") == "True"}
    for state in _JOB_STATES:
        if not state:
            if get(obj, "metadata", "deletionTimestamp"):
                return "Terminating"
        elif state in true:
            return state
    return "Running"


def _job_cells(obj: Mapping[str, Any], now: float) -> Cells:
    succeeded = _count(obj, "status", "succeeded")
    completions = get(obj, "spec", "completions")
    if isinstance(completions, int):
        done = f"{succeeded}/{completions}"
    else:
        parallelism = _count(obj, "spec", "parallelism")
        done = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    start, end = parse_time(get(obj, "status", "startTime")), parse_time(get(obj, "status", "completionTime"))
    duration = "" if start is None else human_duration((end if end is not None else now) - start)
    return [name_of(obj), _job_status(obj), done, duration, age(obj, now),
            *_containers(get(obj, "spec", "template")), format_selector(get(obj, "spec", "selector"))]


# --- CronJob -------------------------------------------------------------------------------------

_CRON_JOB_COLUMNS = (
    NAME_COLUMN,
    column("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    column("Timezone", "The time zone name for the given schedule, see "
           "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the "
           "time zone of the kube-controller-manager process. The set of valid time zone names and the time zone "
           "offset is loaded from the system-wide time zone database by the API server during CronJob validation and "
           "the controller manager during execution. If no system-wide time zone database can be found a bundled "
           "version of the database is used instead. If the time zone name becomes invalid during the lifetime of a "
           "CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will "
           "create a system event with the reason UnknownTimeZone. More information can be found in "
           "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones"),
    column("Suspend", "This flag tells the controller to suspend subsequent executions, it does not apply to already "
           "started executions.  Defaults to false.", type_="boolean"),
    _int_column("Active", "A list of pointers to currently running jobs."),
    column("Last Schedule", "Information when was the last time the job was successfully scheduled."),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    _selector_column("A label query over pods that should match the pod count. Normally, the system sets this field "
                     "for you. More info: "
                     "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
)


def _cron_job_cells(obj: Mapping[str, Any], now: float) -> Cells:
    spec = get(obj, "spec")
    last = get(obj, "status", "lastScheduleTime")
    suspend = get(spec, "suspend")
    job = get(spec, "jobTemplate", "spec")
    return [name_of(obj), text(spec, "schedule"), text(spec, "timeZone") if get(spec, "timeZone") is not None
            else "<none>", "<unset>" if not isinstance(suspend, bool) else ("True" if suspend else "False"),
            len(items(obj, "status", "active")), since(last, now) if last else "<none>", age(obj, now),
            *_containers(get(job, "template")), format_selector(get(job, "selector"))]


PRINTERS: dict[str, Printer] = {
    "deployment": Printer(_DEPLOYMENT_COLUMNS, _deployment_cells),
    "replicaset": Printer(_REPLICA_SET_COLUMNS, _replica_set_cells),
    "statefulset": Printer(_STATEFUL_SET_COLUMNS, _stateful_set_cells),
    "daemonset": Printer(_DAEMON_SET_COLUMNS, _daemon_set_cells),
    "controllerrevision": Printer(_CONTROLLER_REVISION_COLUMNS, _controller_revision_cells),
    "job": Printer(_JOB_COLUMNS, _job_cells),
    "cronjob": Printer(_CRON_JOB_COLUMNS, _cron_job_cells),
}
