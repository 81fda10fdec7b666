"""Schemas of the workload kinds: apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet,
ControllerRevision, batch/v1 Job and CronJob, core v1 PodTemplateSpec (their pod template) and
autoscaling/v1 Scale (the scale subresource's body).

Why apart: these kinds embed a pod (PodTemplateSpec) and add only their own spec and status
around it; the pod's own definitions stay in pod.py and are referenced, not repeated. Written
from k8s.io/api apps/v1, batch/v1 and autoscaling/v1 types.go (v1.37.2).
"""

from __future__ import annotations

from nodeagent.apiserver.schema.builtin.dsl import (
    CORE,
    INT_OR_STRING,
    arr,
    b,
    core,
    i32,
    i64,
    kind,
    lmap,
    meta,
    metadata,
    obj,
    ref,
    s,
    sset,
    time,
)
from nodeagent.apiserver.schema.model import Schema

APPS = "io.k8s.api.apps.v1."
BATCH = "io.k8s.api.batch.v1."
AUTOSCALING = "io.k8s.api.autoscaling.v1."
SELECTOR = "Label query over the pods this object manages; must match the template's labels."


def _conditions(name: str, desc: str) -> Schema:
    return lmap(ref(name), desc, "type")


def _condition(desc: str, *, update_time: bool = False, probe_time: bool = False) -> Schema:
    props: dict[str, Schema] = {
        "type": s("Type of the condition."),
        "status": s("True, False or Unknown."),
    }
    if update_time:
        props["lastUpdateTime"] = time("The last time this condition was updated.")
    if probe_time:
        props["lastProbeTime"] = time("Last time the condition was checked.")
    props.update({
        "lastTransitionTime": time("Last time the condition changed status."),
        "reason": s("One-word CamelCase reason for the last transition."),
        "message": s("Human-readable details of the last transition."),
    })
    return obj(desc, props, ["type", "status"] if probe_time else ())


def _intstr(desc: str) -> Schema:
    return ref(INT_OR_STRING, desc)


def _template(desc: str = "The pods this object creates.") -> Schema:
    return core("PodTemplateSpec", desc)


def workload_definitions() -> dict[str, Schema]:
    """The definitions, by upstream's names."""
    return {**_core_definitions(), **_apps_definitions(), **_batch_definitions(), **_scale_definitions()}


def _core_definitions() -> dict[str, Schema]:
    return {
        CORE + "PodTemplateSpec": obj("The pods a workload creates: their metadata and spec.", {
            "metadata": metadata("Metadata of the pods created from this template."),
            "spec": core("PodSpec", "Desired behaviour of the pods."),
        }),
    }


def _apps_definitions() -> dict[str, Schema]:
    a = APPS
    return {
        a + "Deployment": kind("Declarative updates of Pods through ReplicaSets.", {
            "spec": ref(a + "DeploymentSpec", "Desired behaviour of the Deployment."),
            "status": ref(a + "DeploymentStatus", "Most recently observed status of the Deployment."),
        }),
        a + "DeploymentSpec": obj("Desired state of a Deployment.", {
            "replicas": i32("Number of desired pods; 1 by default."),
            "selector": meta("LabelSelector", SELECTOR),
            "template": _template(),
            "strategy": Schema(ref=a + "DeploymentStrategy", description="How old pods are replaced by new ones.",
                               patch_strategy="retainKeys"),
            "minReadySeconds": i32("Seconds a new pod must be ready to count as available."),
            "revisionHistoryLimit": i32("Old ReplicaSets kept for rollback; 10 by default."),
            "paused": b("Whether the Deployment is paused."),
            "progressDeadlineSeconds": i32("Seconds before a stalled rollout is reported; 600 by default."),
        }, ["selector", "template"]),
        a + "DeploymentStrategy": obj("How a Deployment replaces its pods.", {
            "type": s("Recreate or RollingUpdate (the default).", enum=["Recreate", "RollingUpdate"]),
            "rollingUpdate": ref(a + "RollingUpdateDeployment", "Rolling update parameters."),
        }),
        a + "RollingUpdateDeployment": obj("Rolling update parameters of a Deployment.", {
            "maxUnavailable": _intstr("Pods that may be unavailable during the update; 25% by default."),
            "maxSurge": _intstr("Pods that may be created above the desired count; 25% by default."),
        }),
        a + "DeploymentStatus": obj("Most recently observed status of a Deployment.", {
            "observedGeneration": i64("The generation the deployment controller observed."),
            "replicas": i32("Non-terminating pods targeted by this Deployment."),
            "updatedReplicas": i32("Non-terminating pods with the desired template."),
            "readyReplicas": i32("Pods with a Ready condition."),
            "availableReplicas": i32("Pods ready for at least minReadySeconds."),
            "unavailableReplicas": i32("Pods still needed for 100% availability."),
            "terminatingReplicas": i32("Terminating pods (DeploymentReplicaSetTerminatingReplicas)."),
            "conditions": _conditions(a + "DeploymentCondition", "The latest observations of the Deployment."),
            "collisionCount": i32("Hash collisions seen when naming ReplicaSets."),
        }),
        a + "DeploymentCondition": _condition("A state of a Deployment at some point.", update_time=True),
        a + "ReplicaSet": kind("Keeps a number of pod replicas running.", {
            "spec": ref(a + "ReplicaSetSpec", "Desired behaviour of the ReplicaSet."),
            "status": ref(a + "ReplicaSetStatus", "Most recently observed status of the ReplicaSet."),
        }),
        a + "ReplicaSetSpec": obj("Desired state of a ReplicaSet.", {
            "replicas": i32("Number of desired pods; 1 by default."),
            "minReadySeconds": i32("Seconds a new pod must be ready to count as available."),
            "selector": meta("LabelSelector", SELECTOR),
            "template": _template(),
        }, ["selector"]),
        a + "ReplicaSetStatus": obj("Most recently observed status of a ReplicaSet.", {
            "replicas": i32("Most recently observed number of non-terminating pods."),
            "fullyLabeledReplicas": i32("Pods whose labels match the template's."),
            "readyReplicas": i32("Pods with a Ready condition."),
            "availableReplicas": i32("Pods ready for at least minReadySeconds."),
            "terminatingReplicas": i32("Terminating pods."),
            "observedGeneration": i64("The generation the replicaset controller observed."),
            "conditions": _conditions(a + "ReplicaSetCondition", "The latest observations of the ReplicaSet."),
        }, ["replicas"]),
        a + "ReplicaSetCondition": _condition("A state of a ReplicaSet at some point."),
        a + "StatefulSet": kind("Pods with stable identities and storage.", {
            "spec": ref(a + "StatefulSetSpec", "Desired behaviour of the StatefulSet."),
            "status": ref(a + "StatefulSetStatus", "Most recently observed status of the StatefulSet."),
        }),
        a + "StatefulSetSpec": obj("Desired state of a StatefulSet.", {
            "replicas": i32("Number of desired pods; 1 by default."),
            "selector": meta("LabelSelector", SELECTOR),
            "template": _template(),
            "volumeClaimTemplates": arr(core("PersistentVolumeClaim"), "Claims each pod of the set gets, named "
                                        "after the pod.", atomic=True),
            "serviceName": s("Governing Service of the set's network identities."),
            "podManagementPolicy": s("OrderedReady (the default) or Parallel.", enum=["OrderedReady", "Parallel"]),
            "updateStrategy": ref(a + "StatefulSetUpdateStrategy", "How pods are replaced on a template change."),
            "revisionHistoryLimit": i32("Revisions kept; 10 by default."),
            "minReadySeconds": i32("Seconds a new pod must be ready to count as available."),
            "persistentVolumeClaimRetentionPolicy": ref(a + "StatefulSetPersistentVolumeClaimRetentionPolicy",
                                                        "What happens to the claims on deletion and scale-down."),
            "ordinals": ref(a + "StatefulSetOrdinals", "The numbering of the replicas."),
        }, ["selector", "template"]),
        a + "StatefulSetUpdateStrategy": obj("How a StatefulSet replaces its pods.", {
            "type": s("RollingUpdate (the default) or OnDelete.", enum=["OnDelete", "RollingUpdate"]),
            "rollingUpdate": ref(a + "RollingUpdateStatefulSetStrategy", "Rolling update parameters."),
        }),
        a + "RollingUpdateStatefulSetStrategy": obj("Rolling update parameters of a StatefulSet.", {
            "partition": i32("Ordinal at which the set is partitioned for the update."),
            "maxUnavailable": _intstr("Pods that may be unavailable during the update."),
        }),
        a + "StatefulSetPersistentVolumeClaimRetentionPolicy": obj("The lifecycle of a set's claims.", {
            "whenDeleted": s("Retain (the default) or Delete, when the set is deleted."),
            "whenScaled": s("Retain (the default) or Delete, when the set is scaled down."),
        }),
        a + "StatefulSetOrdinals": obj("The numbering of a StatefulSet's replicas.", {
            "start": i32("The first replica's number; 0 by default."),
        }),
        a + "StatefulSetStatus": obj("Most recently observed status of a StatefulSet.", {
            "observedGeneration": i64("The generation the statefulset controller observed."),
            "replicas": i32("Pods created by the controller."),
            "readyReplicas": i32("Pods with a Ready condition."),
            "currentReplicas": i32("Pods of the currentRevision."),
            "updatedReplicas": i32("Pods of the updateRevision."),
            "currentRevision": s("Revision that made the pods 0 to currentReplicas-1."),
            "updateRevision": s("Revision that makes the pods of updatedReplicas."),
            "collisionCount": i32("Hash collisions seen when naming ControllerRevisions."),
            "conditions": _conditions(a + "StatefulSetCondition", "The latest observations of the StatefulSet."),
            "availableReplicas": i32("Pods ready for at least minReadySeconds."),
        }, ["replicas"]),
        a + "StatefulSetCondition": _condition("A state of a StatefulSet at some point."),
        a + "DaemonSet": kind("Runs a pod on every matching node.", {
            "spec": ref(a + "DaemonSetSpec", "Desired behaviour of the DaemonSet."),
            "status": ref(a + "DaemonSetStatus", "Most recently observed status of the DaemonSet."),
        }),
        a + "DaemonSetSpec": obj("Desired state of a DaemonSet.", {
            "selector": meta("LabelSelector", SELECTOR),
            "template": _template("The pod each matching node runs."),
            "updateStrategy": ref(a + "DaemonSetUpdateStrategy", "How pods are replaced on a template change."),
            "minReadySeconds": i32("Seconds a new pod must be ready to count as available."),
            "revisionHistoryLimit": i32("Old revisions kept; 10 by default."),
        }, ["selector", "template"]),
        a + "DaemonSetUpdateStrategy": obj("How a DaemonSet replaces its pods.", {
            "type": s("RollingUpdate (the default) or OnDelete.", enum=["OnDelete", "RollingUpdate"]),
            "rollingUpdate": ref(a + "RollingUpdateDaemonSet", "Rolling update parameters."),
        }),
        a + "RollingUpdateDaemonSet": obj("Rolling update parameters of a DaemonSet.", {
            "maxUnavailable": _intstr("Nodes whose pod may be unavailable during the update; 1 by default."),
            "maxSurge": _intstr("Nodes that may run an old and a new pod at once; 0 by default."),
        }),
        a + "DaemonSetStatus": obj("Most recently observed status of a DaemonSet.", {
            "currentNumberScheduled": i32("Nodes running at least one daemon pod that should."),
            "numberMisscheduled": i32("Nodes running the daemon pod that should not."),
            "desiredNumberScheduled": i32("Nodes that should run the daemon pod."),
            "numberReady": i32("Nodes whose daemon pod is ready."),
            "observedGeneration": i64("The generation the daemonset controller observed."),
            "updatedNumberScheduled": i32("Nodes running the updated daemon pod."),
            "numberAvailable": i32("Nodes whose daemon pod is available."),
            "numberUnavailable": i32("Nodes whose daemon pod is not available."),
            "collisionCount": i32("Hash collisions seen when naming ControllerRevisions."),
            "conditions": _conditions(a + "DaemonSetCondition", "The latest observations of the DaemonSet."),
        }, ["currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"]),
        a + "DaemonSetCondition": _condition("A state of a DaemonSet at some point."),
        a + "ControllerRevision": kind("An immutable snapshot of a controller's state data.", {
            "data": ref("io.k8s.apimachinery.pkg.runtime.RawExtension", "The serialized state."),
            "revision": i64("The revision this object stands for."),
        }, ["data"]),
    }


def _batch_definitions() -> dict[str, Schema]:
    j = BATCH
    return {
        j + "Job": kind("A job run to completion by its pods.", {
            "spec": ref(j + "JobSpec", "Desired behaviour of the Job."),
            "status": ref(j + "JobStatus", "Current status of the Job."),
        }),
        j + "JobSpec": obj("Desired state of a Job.", {
            "parallelism": i32("Pods that may run at once."),
            "completions": i32("Successful pods the job needs."),
            "activeDeadlineSeconds": i64("Seconds the job may be active before it is failed."),
            "podFailurePolicy": ref(j + "PodFailurePolicy", "How pod failures count."),
            "successPolicy": ref(j + "SuccessPolicy", "When the job may be declared succeeded."),
            "backoffLimit": i32("Retries before the job is failed; 6 by default."),
            "backoffLimitPerIndex": i32("Retries per index of an Indexed job."),
            "maxFailedIndexes": i32("Failed indexes before the job is failed."),
            "selector": meta("LabelSelector", "Label query over the job's pods; generated by default."),
            "manualSelector": b("Whether the selector is the user's rather than generated."),
            "template": _template("The pods the job runs."),
            "ttlSecondsAfterFinished": i32("Seconds after finishing before the job is deleted."),
            "completionMode": s("NonIndexed (the default) or Indexed.", enum=["Indexed", "NonIndexed"]),
            "suspend": b("Whether the job's pods are held back."),
            "podReplacementPolicy": s("TerminatingOrFailed or Failed.", enum=["Failed", "TerminatingOrFailed"]),
            "managedBy": s("Controller that syncs the job; kubernetes.io/job-controller by default."),
        }, ["template"]),
        j + "PodFailurePolicy": obj("How pod failures count toward the backoff limit.", {
            "rules": arr(ref(j + "PodFailurePolicyRule"), "Rules evaluated in order.", atomic=True),
        }, ["rules"]),
        j + "PodFailurePolicyRule": obj("One pod failure rule.", {
            "action": s("FailJob, FailIndex, Ignore or Count.", enum=["Count", "FailIndex", "FailJob", "Ignore"]),
            "onExitCodes": ref(j + "PodFailurePolicyOnExitCodesRequirement", "Exit codes the rule matches."),
            "onPodConditions": arr(ref(j + "PodFailurePolicyOnPodConditionsPattern"), "Pod conditions matched.",
                                   atomic=True),
        }, ["action"]),
        j + "PodFailurePolicyOnExitCodesRequirement": obj("Container exit codes a rule matches.", {
            "containerName": s("Container whose exit code is checked; all by default."),
            "operator": s("In or NotIn.", enum=["In", "NotIn"]),
            "values": Schema(type="array", items=i32(), description="The exit codes.", list_type="set"),
        }, ["operator", "values"]),
        j + "PodFailurePolicyOnPodConditionsPattern": obj("A pod condition a rule matches.", {
            "type": s("The condition type."),
            "status": s("The condition status; True by default."),
        }, ["type"]),
        j + "SuccessPolicy": obj("When a job may be declared succeeded.", {
            "rules": arr(ref(j + "SuccessPolicyRule"), "Rules; the first met wins.", atomic=True),
        }, ["rules"]),
        j + "SuccessPolicyRule": obj("One success rule.", {
            "succeededIndexes": s("Indexes that must succeed, as 1,3-5."),
            "succeededCount": i32("Succeeded indexes needed."),
        }),
        j + "JobStatus": obj("Current status of a Job.", {
            "conditions": Schema(type="array", items=ref(j + "JobCondition"), list_type="atomic",
                                 patch_strategy="merge", patch_merge_key="type",
                                 description="The latest observations of the job's state."),
            "startTime": time("When the job controller started the job."),
            "completionTime": time("When the job completed."),
            "active": i32("Pending and running pods that are not terminating."),
            "succeeded": i32("Pods that reached phase Succeeded."),
            "failed": i32("Pods that reached phase Failed."),
            "terminating": i32("Terminating pods."),
            "completedIndexes": s("Completed indexes of an Indexed job."),
            "failedIndexes": s("Failed indexes of an Indexed job."),
            "uncountedTerminatedPods": ref(j + "UncountedTerminatedPods", "Finished pods not yet counted."),
            "ready": i32("Active pods with a Ready condition."),
        }),
        j + "JobCondition": _condition("A state of a Job at some point.", probe_time=True),
        j + "UncountedTerminatedPods": obj("UIDs of finished pods the job controller has not counted yet.", {
            "succeeded": sset("UIDs of succeeded pods."),
            "failed": sset("UIDs of failed pods."),
        }),
        j + "JobTemplateSpec": obj("The Jobs a CronJob creates.", {
            "metadata": metadata("Metadata of the jobs created from this template."),
            "spec": ref(j + "JobSpec", "Desired behaviour of the jobs."),
        }),
        j + "CronJob": kind("Runs a Job on a schedule.", {
            "spec": ref(j + "CronJobSpec", "Desired behaviour of the CronJob."),
            "status": ref(j + "CronJobStatus", "Current status of the CronJob."),
        }),
        j + "CronJobSpec": obj("Desired state of a CronJob.", {
            "schedule": s("The schedule in Cron format."),
            "timeZone": s("Time zone name of the schedule; the controller's by default."),
            "startingDeadlineSeconds": i64("Seconds past the schedule a missed run may still start."),
            "concurrencyPolicy": s("Allow (the default), Forbid or Replace.", enum=["Allow", "Forbid", "Replace"]),
            "suspend": b("Whether later runs are held back."),
            "jobTemplate": ref(j + "JobTemplateSpec", "The Job each run creates."),
            "successfulJobsHistoryLimit": i32("Successful jobs kept; 3 by default."),
            "failedJobsHistoryLimit": i32("Failed jobs kept; 1 by default."),
        }, ["schedule", "jobTemplate"]),
        j + "CronJobStatus": obj("Current status of a CronJob.", {
            "active": arr(core("ObjectReference"), "The jobs running now.", atomic=True),
            "lastScheduleTime": time("When a job was last scheduled."),
            "lastSuccessfulTime": time("When a job last completed successfully."),
        }),
    }


def _scale_definitions() -> dict[str, Schema]:
    x = AUTOSCALING
    return {
        x + "Scale": kind("The scale subresource of a scalable object.", {
            "spec": ref(x + "ScaleSpec", "Desired number of instances."),
            "status": ref(x + "ScaleStatus", "Current number of instances; read-only."),
        }),
        x + "ScaleSpec": obj("Desired scale.", {"replicas": i32("Desired number of instances.")}),
        x + "ScaleStatus": obj("Current scale.", {
            "replicas": i32("Actual number of instances."),
            "selector": s("Label query over the pods counted in replicas, in the string form."),
        }, ["replicas"]),
    }

