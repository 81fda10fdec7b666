"""apps/v1 (Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision), batch/v1 (Job,
CronJob) and autoscaling/v1 (Scale, HorizontalPodAutoscaler) (k8s.io/api apps/v1, batch/v1,
autoscaling/v1 generated.proto), and
the core/v1 messages only the workloads embed (PodTemplateSpec; a StatefulSet's claim template is a
PersistentVolumeClaim, in corev1.py).

Why: kubectl's generators (`kubectl create deployment`) and the controllers send workloads through
client-go's typed clients, which send protobuf. JobSpec's field 17 (scheduling, WorkloadWithJob,
alpha) is left out with the schema's field (an unknown field number is skipped).
Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

WORKLOAD_CORE = package({
    "PodTemplateSpec": "1 metadata meta.ObjectMeta; 2 spec PodSpec",
})
"""core/v1 messages joined into the core package (packages.py)."""

APPS_V1 = package({
    "ControllerRevision": """
        1 metadata meta.ObjectMeta; 2 data RawExtension; 3 revision int64!""",
    "DaemonSet": """
        1 metadata meta.ObjectMeta; 2 spec DaemonSetSpec; 3 status DaemonSetStatus""",
    "DaemonSetCondition": """
        1 type string!; 2 status string!; 3 lastTransitionTime Time; 4 reason string; 5 message string""",
    "DaemonSetSpec": """
        1 selector meta.LabelSelector*; 2 template core.PodTemplateSpec
        3 updateStrategy DaemonSetUpdateStrategy; 4 minReadySeconds int32; 6 revisionHistoryLimit int32?""",
    "DaemonSetStatus": """
        1 currentNumberScheduled int32!; 2 numberMisscheduled int32!; 3 desiredNumberScheduled int32!
        4 numberReady int32!; 5 observedGeneration int64; 6 updatedNumberScheduled int32
        7 numberAvailable int32; 8 numberUnavailable int32; 9 collisionCount int32?
        10 conditions []DaemonSetCondition""",
    "DaemonSetUpdateStrategy": """
        1 type string; 2 rollingUpdate RollingUpdateDaemonSet*""",
    "Deployment": """
        1 metadata meta.ObjectMeta; 2 spec DeploymentSpec; 3 status DeploymentStatus""",
    "DeploymentCondition": """
        1 type string!; 2 status string!; 6 lastUpdateTime Time; 7 lastTransitionTime Time; 4 reason string
        5 message string""",
    "DeploymentSpec": """
        1 replicas int32?; 2 selector meta.LabelSelector*; 3 template core.PodTemplateSpec
        4 strategy DeploymentStrategy; 5 minReadySeconds int32; 6 revisionHistoryLimit int32?; 7 paused bool
        9 progressDeadlineSeconds int32?""",
    "DeploymentStatus": """
        1 observedGeneration int64; 2 replicas int32; 3 updatedReplicas int32; 7 readyReplicas int32
        4 availableReplicas int32; 5 unavailableReplicas int32; 9 terminatingReplicas int32?
        6 conditions []DeploymentCondition; 8 collisionCount int32?""",
    "DeploymentStrategy": """
        1 type string; 2 rollingUpdate RollingUpdateDeployment*""",
    "ReplicaSet": """
        1 metadata meta.ObjectMeta; 2 spec ReplicaSetSpec; 3 status ReplicaSetStatus""",
    "ReplicaSetCondition": """
        1 type string!; 2 status string!; 3 lastTransitionTime Time; 4 reason string; 5 message string""",
    "ReplicaSetSpec": """
        1 replicas int32?; 4 minReadySeconds int32; 2 selector meta.LabelSelector*
        3 template core.PodTemplateSpec""",
    "ReplicaSetStatus": """
        1 replicas int32!; 2 fullyLabeledReplicas int32; 4 readyReplicas int32; 5 availableReplicas int32
        7 terminatingReplicas int32?; 3 observedGeneration int64; 6 conditions []ReplicaSetCondition""",
    "RollingUpdateDaemonSet": """
        1 maxUnavailable IntOrString*; 2 maxSurge IntOrString*""",
    "RollingUpdateDeployment": """
        1 maxUnavailable IntOrString*; 2 maxSurge IntOrString*""",
    "RollingUpdateStatefulSetStrategy": """
        1 partition int32?; 2 maxUnavailable IntOrString*""",
    "StatefulSet": """
        1 metadata meta.ObjectMeta; 2 spec StatefulSetSpec; 3 status StatefulSetStatus""",
    "StatefulSetCondition": """
        1 type string!; 2 status string!; 3 lastTransitionTime Time; 4 reason string; 5 message string""",
    "StatefulSetOrdinals": """
        1 start int32!""",
    "StatefulSetPersistentVolumeClaimRetentionPolicy": """
        1 whenDeleted string; 2 whenScaled string""",
    "StatefulSetSpec": """
        1 replicas int32?; 2 selector meta.LabelSelector*; 3 template core.PodTemplateSpec
        4 volumeClaimTemplates []core.PersistentVolumeClaim; 5 serviceName string!; 6 podManagementPolicy string
        7 updateStrategy StatefulSetUpdateStrategy; 8 revisionHistoryLimit int32?; 9 minReadySeconds int32
        10 persistentVolumeClaimRetentionPolicy StatefulSetPersistentVolumeClaimRetentionPolicy*
        11 ordinals StatefulSetOrdinals*""",
    "StatefulSetStatus": """
        1 observedGeneration int64; 2 replicas int32!; 3 readyReplicas int32; 4 currentReplicas int32
        5 updatedReplicas int32; 6 currentRevision string; 7 updateRevision string; 9 collisionCount int32?
        10 conditions []StatefulSetCondition; 11 availableReplicas int32!""",
    "StatefulSetUpdateStrategy": """
        1 type string; 2 rollingUpdate RollingUpdateStatefulSetStrategy*"""
})

BATCH_V1 = package({
    "CronJob": """
        1 metadata meta.ObjectMeta; 2 spec CronJobSpec; 3 status CronJobStatus""",
    "CronJobSpec": """
        1 schedule string!; 8 timeZone string?; 2 startingDeadlineSeconds int64?; 3 concurrencyPolicy string
        4 suspend bool?; 5 jobTemplate JobTemplateSpec; 6 successfulJobsHistoryLimit int32?
        7 failedJobsHistoryLimit int32?""",
    "CronJobStatus": """
        1 active []core.ObjectReference; 4 lastScheduleTime Time*; 5 lastSuccessfulTime Time*""",
    "Job": """
        1 metadata meta.ObjectMeta; 2 spec JobSpec; 3 status JobStatus""",
    "JobCondition": """
        1 type string!; 2 status string!; 3 lastProbeTime Time; 4 lastTransitionTime Time; 5 reason string
        6 message string""",
    "JobSpec": """
        1 parallelism int32?; 2 completions int32?; 3 activeDeadlineSeconds int64?
        11 podFailurePolicy PodFailurePolicy*; 16 successPolicy SuccessPolicy*; 7 backoffLimit int32?
        12 backoffLimitPerIndex int32?; 13 maxFailedIndexes int32?; 4 selector meta.LabelSelector*
        5 manualSelector bool?; 6 template core.PodTemplateSpec; 8 ttlSecondsAfterFinished int32?
        9 completionMode string?; 10 suspend bool?; 14 podReplacementPolicy string?; 15 managedBy string?""",
    "JobStatus": """
        1 conditions []JobCondition; 2 startTime Time*; 3 completionTime Time*; 4 active int32
        5 succeeded int32; 6 failed int32; 11 terminating int32?; 7 completedIndexes string
        10 failedIndexes string?; 8 uncountedTerminatedPods UncountedTerminatedPods*; 9 ready int32?""",
    "JobTemplateSpec": """
        1 metadata meta.ObjectMeta; 2 spec JobSpec""",
    "PodFailurePolicy": """
        1 rules []PodFailurePolicyRule""",
    "PodFailurePolicyOnExitCodesRequirement": """
        1 containerName string?; 2 operator string!; 3 values []int32""",
    "PodFailurePolicyOnPodConditionsPattern": """
        1 type string!; 2 status string!""",
    "PodFailurePolicyRule": """
        1 action string!; 2 onExitCodes PodFailurePolicyOnExitCodesRequirement*
        3 onPodConditions []PodFailurePolicyOnPodConditionsPattern""",
    "SuccessPolicy": """
        1 rules []SuccessPolicyRule""",
    "SuccessPolicyRule": """
        1 succeededIndexes string?; 2 succeededCount int32?""",
    "UncountedTerminatedPods": """
        1 succeeded []string; 2 failed []string"""
})

AUTOSCALING_V1 = package({
    "Scale": "1 metadata meta.ObjectMeta; 2 spec ScaleSpec; 3 status ScaleStatus",
    "ScaleSpec": "1 replicas int32",
    "ScaleStatus": "1 replicas int32!; 2 selector string",
    "HorizontalPodAutoscaler": """
        1 metadata meta.ObjectMeta; 2 spec HorizontalPodAutoscalerSpec; 3 status HorizontalPodAutoscalerStatus""",
    "HorizontalPodAutoscalerSpec": """
        1 scaleTargetRef CrossVersionObjectReference; 2 minReplicas int32?; 3 maxReplicas int32!
        4 targetCPUUtilizationPercentage int32?""",
    "CrossVersionObjectReference": "1 kind string!; 2 name string!; 3 apiVersion string",
    "HorizontalPodAutoscalerStatus": """
        1 observedGeneration int64?; 2 lastScaleTime Time*; 3 currentReplicas int32!; 4 desiredReplicas int32!
        5 currentCPUUtilizationPercentage int32?""",
})
