"""Every feature gate the v1.37.2 kubelet knows, with its versioned specs: data, in one module.

Why: the KubeletConfiguration's featureGates must mean what they mean to a real kubelet of the
emulated release (NodeAgentConfiguration.kubernetesVersion). A gate the release does not know is
refused with upstream's words (`unrecognized feature gate: X`), as the kubelet's SetFromMap does;
a gate locked to its default cannot be changed; an enabled gate whose dependencies are off is
refused; every other gate takes the release's default unless the document sets it.

The table is the union of what the kubelet binary registers (k8s.io/kubernetes pkg/features with
the generic apiserver's, apiextensions' and zpages' gates in its map, k8s.io/apiserver,
k8s.io/apiextensions-apiserver, client-go's features, component-base's logs and zpages gates),
plus featuregate's own AllAlpha and AllBeta. tests/unit/config/upstream_gates.py reads it out of
the Go source at v1.37.2 and test_feature_gates.py fails when this table drifts from it (run
`python -m tests.unit.config.upstream_gates` to print it again after an upgrade).

One line a gate: `Name spec spec ...`, each spec `minor:on|off:PreRelease[:locked][:minN]`: from
Kubernetes 1.<minor> the default is on/off at that stage, locked to it or not, and (minN) only when
the minimum compatibility version (the emulated release minus one) is at least 1.N.

Intended differences, with their reasons:
- Older releases are emulated from 1.37's specs (as upstream's own --emulated-version does), so a
  gate removed from Kubernetes before 1.37 is unknown at every emulated release; a gate introduced
  after the emulated release is refused as unrecognized, which is what that release's kubelet says
  (a 1.37 kubelet emulating it would say "feature is PreAlpha at emulated version").
- Every error is reported, where SetFromMap returns at the first unrecognized gate.
- nodeagent's own switches are never feature gates of a KubeletConfiguration (an upstream parser
  reading the same file, such as NFD's, would refuse them): classic DRA, which Kubernetes removed
  in 1.32 with its gate DRAControlPlaneController, is NodeAgentConfiguration.classicDRA.
  NODEAGENT_GATES lists the internal keys the effective gate map carries for them, which no
  KubeletConfiguration may set and /configz never shows.
- Alpha gates nodeagent does not implement (NOT_IMPLEMENTED) are refused when enabled, which
  the kubelet would accept: accepted, they would do nothing here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Spec:
    """One versioned spec of a gate (featuregate.FeatureSpec)."""

    minor: int  # holds from Kubernetes 1.<minor>
    default: bool
    pre_release: str  # Alpha | Beta | GA | Deprecated
    locked: bool = False
    min_compatibility: int | None = None  # applies only when the min compatibility minor is at least this


# featuregate's special gates: setting one sets every Alpha (Beta) gate the document leaves unset
ALL_ALPHA, ALL_BETA = "AllAlpha", "AllBeta"

# Internal keys of the effective gate map for nodeagent's own switches (set from NodeAgentConfiguration).
NODEAGENT_GATES: Mapping[str, str] = {"DRAControlPlaneController": "NodeAgentConfiguration.classicDRA"}

# Alpha gates of Kubernetes that nodeagent does not implement: refused when enabled (also through
# AllAlpha) rather than accepted and ignored. Off, their API fields are dropped on write, as upstream
# drops a disabled gate's fields (tests/rpc/test_resource_round_trip.py NOT_IMPLEMENTED).
NOT_IMPLEMENTED: Mapping[str, str] = {
    "DRADerivedAttributes": "derivedAttributes of device requests",
    "DRADeviceCompatibilityGroups": "compatibilityGroups of counter consumptions",
    "DRAPartitionableDevicesType": "ResourceSlice partitionTypeAttribute",
}

_TABLE = """
AllAlpha 0:off:Alpha
AllBeta 0:off:Beta
APIResponseCompression 8:off:Alpha 16:on:Beta
APIServerIdentity 20:off:Alpha 26:on:Beta
APIServerWebhookAuthenticationToken 37:off:Alpha
APIServingWithRoutine 30:off:Alpha
AggregatedDiscoveryRemoveBetaType 0:off:GA 33:on:Deprecated 35:on:Deprecated:locked
AllowDNSOnlyNodeCSR 0:on:GA 31:off:Deprecated
AllowInsecureKubeletCertificateSigningRequests 0:on:GA 31:off:Deprecated
AllowOverwriteTerminationGracePeriodSeconds 0:on:GA 32:off:Deprecated 35:off:Deprecated:locked
AllowParsingUserUIDFromCertAuth 33:on:Beta
AllowServiceExternalIPs 0:on:GA
AllowUnsafeMalformedObjectDeletion 32:off:Alpha 37:on:Beta
AtomicFIFO 36:on:Beta
AtomicWriteVolumeUserFields 37:off:Alpha
AuthorizePodWebsocketUpgradeCreatePermission 35:on:Beta
CBORServingAndStorage 32:off:Alpha
CPUManagerPolicyAlphaOptions 23:off:Alpha
CPUManagerPolicyBetaOptions 23:on:Beta
CPUManagerPolicyOptions 22:off:Alpha 23:on:Beta 33:on:GA:locked
CRDObservedGenerationTracking 35:off:Beta 36:on:Beta
CRDValidationRatcheting 28:off:Alpha 30:on:Beta 33:on:GA:locked
CRIListStreaming 36:off:Alpha
CSIServiceAccountTokenSecrets 35:on:Beta 36:on:GA:locked
CSIVolumeHealth 21:off:Alpha
ChangeContainerStatusOnKubeletRestart 0:on:GA 35:off:Deprecated
ClearingNominatedNodeNameAfterBinding 34:off:Alpha 35:on:Beta
ClientsAllowCARotation 36:on:Beta
ClientsAllowCBOR 32:off:Alpha
ClientsAllowTLSCacheGC 36:on:Beta
ClientsPreferCBOR 32:off:Alpha
CloudControllerManagerWatchBasedRoutesReconciliation 35:off:Alpha
CloudControllerManagerWebhook 27:off:Alpha
ClusterTrustBundle 27:off:Alpha 33:off:Beta 37:on:GA
ClusterTrustBundleProjection 29:off:Alpha 33:off:Beta 37:on:GA
ComponentFlagz 32:off:Alpha 36:on:Beta
ComponentStatusz 32:off:Alpha 36:on:Beta
CompositePodGroup 37:off:Alpha
ConcurrentWatchObjectDecode 31:off:Beta 37:on:Beta
ConsistentListFromCacheSkipTimeoutFallback 37:off:Alpha
ConstrainedImpersonation 35:off:Alpha 36:on:Beta
ContainerCheckpoint 25:off:Alpha 30:on:Beta
ContainerRestartRules 34:off:Alpha 35:on:Beta
ContainerStopSignals 33:off:Alpha
ContextualLogging 24:off:Alpha 30:on:Beta
CoordinatedLeaderElection 31:off:Alpha 33:off:Beta
CrossNamespaceVolumeDataSource 26:off:Alpha
CustomCPUCFSQuotaPeriod 12:off:Alpha 36:on:GA
CustomResourceFieldSelectors 30:off:Alpha 31:on:Beta 32:on:GA:locked
DRAAdminAccess 32:off:Alpha 34:on:Beta 36:on:GA:locked
DRAConsumableCapacity 34:off:Alpha 36:on:Beta
DRADerivedAttributes 37:off:Alpha
DRADeviceBindingConditions 34:off:Alpha 36:on:Beta
DRADeviceCompatibilityGroups 37:off:Alpha
DRADeviceTaintRules 35:off:Alpha 36:off:Beta 37:on:GA
DRADeviceTaints 33:off:Alpha 36:on:Beta 37:on:GA
DRAExtendedResource 34:off:Alpha 36:on:Beta 37:on:GA:locked
DRAFractionalCapacityRange 37:off:Beta 37:on:Beta:min37
DRAListTypeAttributes 36:off:Alpha
DRANodeAllocatableResources 36:off:Alpha
DRAOptionalNodeOperations 37:off:Alpha
DRAPartitionableDevices 33:off:Alpha 36:on:Beta
DRAPartitionableDevicesType 37:off:Alpha
DRAPrioritizedList 33:off:Alpha 34:on:Beta 36:on:GA 37:on:GA:locked
DRAResourceClaimDeviceStatus 32:off:Alpha 33:on:Beta 37:on:GA:locked
DRAResourceClaimGranularStatusAuthorization 36:on:Beta
DRAResourcePoolStatus 36:off:Alpha
DRASchedulerFilterTimeout 34:on:Beta
DRAWorkloadResourceClaims 36:off:Alpha 37:off:Beta
DeclarativeValidation 33:on:Beta 36:on:GA:locked
DeclarativeValidationBeta 36:on:Beta
DeclarativeValidationTakeover 33:off:Beta 36:off:Deprecated 37:off:Deprecated:locked
DefaultPodSysctls 37:off:Alpha
DeploymentReplicaSetTerminatingReplicas 33:off:Alpha 35:on:Beta
DetectCacheInconsistency 34:on:Beta
DisableAllocatorDualWrite 31:off:Alpha 33:off:Beta 34:on:GA 35:on:GA:locked
DisableCPUQuotaWithExclusiveCPUs 33:on:Beta 36:on:Deprecated 37:on:Deprecated:locked
DisableNodeKubeProxyVersion 29:off:Alpha 31:off:Deprecated 33:on:Deprecated 36:on:Deprecated:locked
DynamicResourceAllocation 26:off:Alpha 32:off:Beta 34:on:GA 35:on:GA:locked
EmptyDirVolumeMode 37:off:Alpha
EnvFiles 34:off:Alpha 35:on:Beta
EtcdRangeStream 37:on:Beta
EventedPLEG 26:off:Alpha
EvictionRequestAPI 37:off:Alpha
ExcludeAdmissionWebhookVirtualResources 37:on:Beta
ExecProbeTimeout 20:on:GA 35:on:GA:locked
ExtendWebSocketsToKubelet 36:on:Beta
ExternalServiceAccountTokenSigner 32:off:Alpha 34:on:Beta 36:on:GA:locked
GRPCContainerProbeTLS 37:off:Alpha
GenericWorkload 35:off:Alpha 37:off:Beta
GitRepoVolumeDriver 0:on:GA 33:off:Deprecated 36:off:Deprecated:locked
GracefulNodeShutdown 20:off:Alpha 21:on:Beta
GracefulNodeShutdownBasedOnPodPriority 23:off:Alpha 24:on:Beta
H2CContainerProbe 37:off:Alpha
HPAConfigurableTolerance 33:off:Alpha 35:on:Beta 37:on:GA:locked
HPAGeneration 37:on:Beta
HPAOptimizedSelectorStore 37:on:Beta
HPAScaleToZero 16:off:Alpha 37:on:Beta
HostnameOverride 34:off:Alpha 35:on:Beta 37:on:GA:locked
HugepageAwareEviction 37:on:Beta
ImageMaximumGCAge 29:off:Alpha 30:on:Beta 35:on:GA:locked
ImageVolume 31:off:Alpha 33:off:Beta 35:on:Beta 36:on:GA:locked
ImageVolumeWithDigest 35:off:Alpha
InOrderInformers 33:on:Beta 36:on:GA:locked
InOrderInformersBatchProcess 35:on:Beta
InPlacePodLevelResourcesVerticalScaling 35:off:Alpha 36:on:Beta
InPlacePodVerticalScaling 27:off:Alpha 33:on:Beta 35:on:GA:locked
InPlacePodVerticalScalingExclusiveCPUs 32:off:Alpha
InPlacePodVerticalScalingExclusiveMemory 34:off:Alpha
InPlacePodVerticalScalingInitContainers 36:on:Beta 37:on:GA:locked
InPlacePodVerticalScalingMemoryBackedVolumes 37:off:Alpha
InPlacePodVerticalScalingSchedulerPreemption 37:off:Alpha
InformerResourceVersion 30:off:Alpha 35:on:GA
InterPodAffinityHostnameFastPath 37:off:Alpha
JobManagedBy 30:off:Alpha 32:on:Beta 35:on:GA:locked
KMSv1 0:on:GA 28:on:Deprecated 29:off:Deprecated
KubeProxyIPVS 0:on:GA 37:on:Deprecated
KubeProxyNFTablesLocalhostNodePorts 37:off:Alpha
KubeletAllocatedPodsEndpoint 37:off:Alpha
KubeletCgroupDriverFromCRI 28:off:Alpha 31:on:Beta 34:on:GA:locked
KubeletCrashLoopBackOffMax 32:off:Alpha 35:on:Beta
KubeletEnsureSecretPulledImages 33:off:Alpha 35:on:Beta
KubeletFineGrainedAuthz 32:off:Alpha 33:on:Beta 36:on:GA:locked
KubeletInUserNamespace 22:off:Alpha 37:on:Beta
KubeletPSI 33:off:Alpha 34:on:Beta 36:on:GA:locked
KubeletPodResourcesDynamicResources 27:off:Alpha 34:on:Beta 36:on:GA:locked
KubeletPodResourcesGet 27:off:Alpha 34:on:Beta 36:on:GA:locked
KubeletPodResourcesListUseActivePods 0:off:GA 34:on:Deprecated
KubeletRegistrationGetOnExistsOnly 0:on:GA 32:off:Deprecated
KubeletSeparateDiskGC 29:off:Alpha 31:on:Beta
KubeletServiceAccountTokenForCredentialProviders 33:off:Alpha 34:on:Beta
KubeletTracing 25:off:Alpha 27:on:Beta 34:on:GA:locked
ListFromCacheSnapshot 33:off:Alpha 34:on:Beta
LocalStorageCapacityIsolationFSQuotaMonitoring 15:off:Alpha 31:off:Beta
LoggingAlphaOptions 24:off:Alpha
LoggingBetaOptions 24:on:Beta
ManifestBasedAdmissionControlConfig 36:off:Alpha 37:on:Beta
MatchLabelKeysInPodAffinity 29:off:Alpha 31:on:Beta 33:on:GA:locked
MatchLabelKeysInPodTopologySpread 25:off:Alpha 27:on:Beta
MatchLabelKeysInPodTopologySpreadSelectorMerge 34:on:Beta
MaxUnavailableStatefulSet 24:off:Alpha 35:off:Beta 37:on:Beta
MemoryQoS 22:off:Alpha 37:on:Beta
MultiCIDRServiceAllocator 27:off:Alpha 31:off:Beta 33:on:GA 34:on:GA:locked
MutableCSINodeAllocatableCount 33:off:Alpha 34:off:Beta 35:on:Beta 36:on:GA:locked
MutablePVNodeAffinity 35:off:Alpha
MutablePodResourcesForSuspendedJobs 35:off:Alpha 36:on:Beta
MutableSchedulingDirectivesForSuspendedJobs 35:off:Alpha 36:on:Beta
MutatingAdmissionPolicy 32:off:Alpha 34:off:Beta 36:on:GA
NFTablesNetlink 37:on:Beta
NFTablesProxyMode 29:off:Alpha 31:on:Beta 33:on:GA:locked
NodeControllerLeaseCircuitBreaker 37:on:Beta
NodeDeclaredFeatures 35:off:Alpha 36:on:Beta 37:on:GA:locked
NodeInclusionPolicyInPodTopologySpread 25:off:Alpha 26:on:Beta 33:on:GA:locked
NodeLifecycleConditions 37:off:Alpha
NodeLogQuery 27:off:Alpha 30:off:Beta 36:on:GA:locked
NodeSwap 22:off:Alpha 28:off:Beta 30:on:Beta 34:on:GA:locked
NominatedNodeNameForExpectation 34:off:Alpha 35:on:Beta
OpenAPIEnums 23:off:Alpha 24:on:Beta
OpportunisticBatching 35:on:Beta
PLEGOnDemandRelist 36:on:Beta 37:on:GA:locked
PersistentVolumeClaimUnusedSinceTime 36:off:Alpha 37:on:Beta
PodAndContainerStatsFromCRI 23:off:Alpha 37:off:Beta
PodCertificateRequest 34:off:Alpha 35:off:Beta 37:on:GA
PodDeletionCost 21:off:Alpha 22:on:Beta
PodGroupPreemptionPolicy 37:off:Alpha
PodLevelResourceManagers 36:off:Alpha 37:off:Beta
PodLevelResources 32:off:Alpha 34:on:Beta
PodLevelResourcesFixDefaulting 37:on:Beta
PodLevelResourcesFixKubeletQOSClass 37:on:Beta
PodLogsQuerySplitStreams 32:off:Alpha
PodObservedGenerationTracking 33:off:Alpha 34:on:Beta 35:on:GA:locked
PodReadyToStartContainersCondition 28:off:Alpha 29:on:Beta 37:on:GA:locked
PodSchedulingReadiness 26:off:Alpha 27:on:Beta 30:on:GA:locked
PodTopologyLabelsAdmission 33:off:Alpha 35:on:Beta
PodsAPI 36:off:Alpha 37:on:Beta
PortForwardWebsockets 30:off:Alpha 31:on:Beta
PreferSameTrafficDistribution 33:off:Alpha 34:on:Beta 35:on:GA:locked
ProcMountType 12:off:Alpha 31:off:Beta 33:on:Beta 36:on:GA:locked
QOSReserved 11:off:Alpha
RecoverVolumeExpansionFailure 23:off:Alpha 32:on:Beta 34:on:GA:locked
RecursiveReadOnlyMounts 30:off:Alpha 31:on:Beta 33:on:GA:locked
ReduceDefaultCrashLoopBackOffDecay 33:off:Alpha
RelaxedEnvironmentVariableValidation 30:off:Alpha 32:on:Beta 34:on:GA:locked
RelaxedServiceNameValidation 34:off:Alpha 36:on:Beta 37:on:GA:locked
ReloadKubeletClientCAFile 36:on:Beta
ReloadKubeletServerCertificateFile 31:on:Beta
RemoteRequestHeaderUID 32:off:Alpha 33:on:Beta
ResourceHealthStatus 31:off:Alpha 36:on:Beta
ResourceHealthStatusMessage 36:on:Beta
RestartAllContainersOnContainerExits 35:off:Alpha 36:on:Beta
RotateKubeletServerCertificate 7:off:Alpha 12:on:Beta
RuntimeClassInImageCriApi 29:off:Alpha
SELinuxChangePolicy 32:off:Alpha 33:on:Beta 36:on:GA:locked
SELinuxMount 30:off:Alpha 33:off:Beta 37:on:GA
SELinuxMountReadWriteOncePod 25:off:Alpha 27:off:Beta 28:on:Beta 36:on:GA:locked
SchedulerAsyncAPICalls 34:off:Beta
SchedulerAsyncPreemption 32:off:Alpha 33:on:Beta
SchedulerPopFromBackoffQ 33:on:Beta
SchedulerPreQueueingHints 37:off:Alpha
SeparateCacheWatchRPC 28:on:Beta 33:off:Deprecated 36:off:Deprecated:locked
SeparateTaintEvictionController 29:on:Beta 34:on:GA:locked
ServiceAccountNodeAudienceRestriction 32:off:Beta 33:on:Beta
ServiceAccountTokenJTI 29:off:Alpha 30:on:Beta 32:on:GA:locked
ServiceAccountTokenNodeBinding 29:off:Alpha 31:on:Beta 33:on:GA:locked
ServiceAccountTokenNodeBindingValidation 29:off:Alpha 30:on:Beta 32:on:GA:locked
ServiceAccountTokenPodNodeInfo 29:off:Alpha 30:on:Beta 32:on:GA:locked
ServiceCIDRStatusFieldWiping 0:off:GA 36:on:Deprecated
ShardedListAndWatch 36:off:Alpha
SizeBasedListCostEstimate 34:on:Beta
StaleControllerConsistencyDaemonSet 36:on:Beta
StaleControllerConsistencyHPA 37:on:Beta
StaleControllerConsistencyJob 36:on:Beta
StaleControllerConsistencyReplicaSet 36:on:Beta
StaleControllerConsistencyStatefulSet 36:on:Beta
StatefulSetRecreateStrategy 37:off:Alpha
StatefulSetSemanticRevisionComparison 0:on:Beta
StorageCapacityScoring 33:off:Alpha 37:on:Beta
StorageNamespaceIndex 30:on:Beta 33:on:Deprecated
StorageVersionAPI 20:off:Alpha
StorageVersionHash 14:off:Alpha 15:on:Beta
StorageVersionMigrator 30:off:Alpha 35:off:Beta 37:on:GA
StrictIPCIDRValidation 33:off:Alpha 36:on:Beta
StructuredAuthenticationConfigurationEgressSelector 34:on:Beta
StructuredAuthenticationConfigurationJWKSMetrics 35:on:Beta
SupplementalGroupsPolicy 31:off:Alpha 33:on:Beta 35:on:GA:locked
SystemdWatchdog 32:on:Beta 35:on:GA:locked
TaintTolerationComparisonOperators 35:off:Alpha
TokenRequestServiceAccountUIDValidation 34:on:Beta
TopologyAwareWorkloadScheduling 36:off:Alpha
TopologyManagerPolicyAlphaOptions 26:off:Alpha
TopologyManagerPolicyBetaOptions 26:off:Beta 28:on:Beta
TopologyManagerPolicyOptions 26:off:Alpha 28:on:Beta 32:on:GA:locked
TranslateStreamCloseWebsocketRequests 29:off:Alpha 30:on:Beta
UnauthenticatedHTTP2DOSMitigation 25:off:Beta 29:on:Beta
UnknownVersionInteroperabilityProxy 28:off:Alpha 36:on:Beta
UnlockWhileProcessingFIFO 36:on:Beta
UserNamespacesHostNetworkSupport 35:off:Alpha
UserNamespacesSupport 25:off:Alpha 30:off:Beta 33:on:Beta 36:on:GA:locked
VolumeAttributesClass 29:off:Alpha 31:off:Beta 34:on:GA 36:on:GA:locked
VolumeBindMountOptions 37:off:Alpha
VolumeLimitScaling 35:off:Alpha 37:on:Beta
WatchCacheInitializationPostStartHook 31:off:Beta 36:on:Beta 37:on:GA:locked
WatchList 27:off:Alpha 32:on:Beta 33:off:Beta 34:on:Beta
WatchListClient 30:off:Beta 35:on:Beta
WatchListCompression 37:on:Beta
WebhookRoundTripLoadBalancing 37:on:Beta
WinDSR 14:off:Alpha 33:on:Beta 34:on:GA:locked
WinOverlay 14:off:Alpha 20:on:Beta 34:on:GA:locked
WindowsCPUAndMemoryAffinity 32:off:Alpha
WindowsGracefulNodeShutdown 32:off:Alpha 34:on:Beta
WindowsHostNetwork 26:off:Alpha 33:off:Deprecated
WorkloadWithJob 36:off:Alpha
"""

# gate -> the gates it needs enabled (defaultKubernetesFeatureGateDependencies)
_DEPENDENCIES = """
ClusterTrustBundleProjection ClusterTrustBundle
CompositePodGroup GenericWorkload TopologyAwareWorkloadScheduling
DRAAdminAccess DynamicResourceAllocation
DRAConsumableCapacity DynamicResourceAllocation
DRADerivedAttributes DynamicResourceAllocation
DRADeviceBindingConditions DynamicResourceAllocation DRAResourceClaimDeviceStatus
DRADeviceCompatibilityGroups DynamicResourceAllocation DRAPartitionableDevices
DRADeviceTaintRules DRADeviceTaints
DRADeviceTaints DynamicResourceAllocation
DRAExtendedResource DynamicResourceAllocation
DRAFractionalCapacityRange DRAConsumableCapacity
DRAListTypeAttributes DynamicResourceAllocation
DRANodeAllocatableResources DynamicResourceAllocation
DRAOptionalNodeOperations DynamicResourceAllocation NodeDeclaredFeatures
DRAPartitionableDevices DynamicResourceAllocation
DRAPartitionableDevicesType DynamicResourceAllocation DRAPartitionableDevices DRAResourcePoolStatus
DRAPrioritizedList DynamicResourceAllocation
DRAResourceClaimGranularStatusAuthorization DynamicResourceAllocation DRAResourceClaimDeviceStatus
DRAResourcePoolStatus DynamicResourceAllocation
DRASchedulerFilterTimeout DynamicResourceAllocation
DRAWorkloadResourceClaims DynamicResourceAllocation GenericWorkload
DeclarativeValidationTakeover DeclarativeValidation
DisableAllocatorDualWrite MultiCIDRServiceAllocator
EventedPLEG PLEGOnDemandRelist
ExtendWebSocketsToKubelet NodeDeclaredFeatures
GracefulNodeShutdownBasedOnPodPriority GracefulNodeShutdown
H2CContainerProbe NodeDeclaredFeatures
ImageVolumeWithDigest ImageVolume
InPlacePodLevelResourcesVerticalScaling InPlacePodVerticalScaling PodLevelResources NodeDeclaredFeatures
InPlacePodVerticalScalingExclusiveCPUs InPlacePodVerticalScaling
InPlacePodVerticalScalingExclusiveMemory InPlacePodVerticalScaling
InPlacePodVerticalScalingInitContainers InPlacePodVerticalScaling NodeDeclaredFeatures
InPlacePodVerticalScalingMemoryBackedVolumes InPlacePodVerticalScaling NodeDeclaredFeatures
InPlacePodVerticalScalingSchedulerPreemption InPlacePodVerticalScaling
KubeletAllocatedPodsEndpoint InPlacePodVerticalScaling
MatchLabelKeysInPodTopologySpreadSelectorMerge MatchLabelKeysInPodTopologySpread
NodeControllerLeaseCircuitBreaker AtomicFIFO
PodGroupPreemptionPolicy GenericWorkload
PodLevelResourceManagers PodLevelResources
PodLevelResourcesFixDefaulting PodLevelResources
PodLevelResourcesFixKubeletQOSClass PodLevelResources
ProcMountType UserNamespacesSupport
ResourceHealthStatus DynamicResourceAllocation
ResourceHealthStatusMessage ResourceHealthStatus
RestartAllContainersOnContainerExits ContainerRestartRules NodeDeclaredFeatures
ServiceAccountTokenNodeBinding ServiceAccountTokenNodeBindingValidation
StaleControllerConsistencyDaemonSet AtomicFIFO
StaleControllerConsistencyHPA AtomicFIFO
StaleControllerConsistencyJob AtomicFIFO
StaleControllerConsistencyReplicaSet AtomicFIFO
StaleControllerConsistencyStatefulSet AtomicFIFO
StorageVersionAPI APIServerIdentity
TopologyAwareWorkloadScheduling GenericWorkload
UnknownVersionInteroperabilityProxy APIServerIdentity
UserNamespacesHostNetworkSupport UserNamespacesSupport NodeDeclaredFeatures
WindowsGracefulNodeShutdown GracefulNodeShutdown
WorkloadWithJob GenericWorkload
"""


def _spec(cell: str) -> Spec:
    minor, default, pre, *rest = cell.split(":")
    mincompat = next((int(r[3:]) for r in rest if r.startswith("min")), None)
    return Spec(int(minor), default == "on", pre, "locked" in rest, mincompat)


GATES: Mapping[str, tuple[Spec, ...]] = {
    line.split()[0]: tuple(_spec(c) for c in line.split()[1:]) for line in _TABLE.strip().splitlines()
}
DEPENDENCIES: Mapping[str, tuple[str, ...]] = {
    line.split()[0]: tuple(line.split()[1:]) for line in _DEPENDENCIES.strip().splitlines()
}


def spec_at(gate: str, minor: int) -> Spec | None:
    """The gate's spec at Kubernetes 1.<minor> (featureSpecAtEmulationAndMinCompatVersion, with the
    minimum compatibility version one below); None when the release does not have the gate."""
    for spec in reversed(GATES.get(gate, ())):
        if spec.minor > minor:
            continue
        if spec.min_compatibility is not None and minor - 1 < spec.min_compatibility:
            continue
        return spec
    return None


def known(minor: int) -> frozenset[str]:
    """Every gate of Kubernetes 1.<minor>."""
    return frozenset(g for g in GATES if spec_at(g, minor) is not None)


def enabled(gate: str, minor: int, explicit: Mapping[str, bool]) -> bool:
    """Whether the gate is on at 1.<minor> under the explicit settings (AllAlpha/AllBeta included)."""
    if gate in explicit:
        return explicit[gate]
    spec = spec_at(gate, minor)
    if spec is None:
        return False
    if spec.pre_release == "Alpha" and ALL_ALPHA in explicit and not spec.locked:
        return explicit[ALL_ALPHA]
    if spec.pre_release == "Beta" and ALL_BETA in explicit and not spec.locked:
        return explicit[ALL_BETA]
    return spec.default


def errors(explicit: Mapping[str, bool], minor: int, path: str) -> list[str]:
    """What the kubelet's SetFromMap refuses in these settings at 1.<minor>, each as `path.Gate: message`:
    unknown gates, changes of locked gates, then (when those pass) enabled gates with disabled dependencies."""
    out: list[str] = []
    for gate, value in explicit.items():
        spec = spec_at(gate, minor)
        if spec is None:
            hint = (f" (not a Kubernetes feature gate: it is {NODEAGENT_GATES[gate]} in nodeagent)"
                    if gate in NODEAGENT_GATES else "")
            out.append(f"{path}.{gate}: unrecognized feature gate: {gate}{hint}")
        elif spec.locked and spec.default != value:
            out.append(f"{path}.{gate}: cannot set feature gate {gate} to {str(value).lower()}, "
                       f"feature is locked to {str(spec.default).lower()}")
    if out:
        return out
    for gate, deps in DEPENDENCIES.items():
        if spec_at(gate, minor) is None or not enabled(gate, minor, explicit):
            continue
        off = [d for d in deps if not enabled(d, minor, explicit)]
        if off:
            out.append(f"{path}: {gate} is enabled, but depends on features that are disabled: [{' '.join(off)}]")
    for gate, what in NOT_IMPLEMENTED.items():
        if spec_at(gate, minor) is not None and enabled(gate, minor, explicit):
            out.append(f"{path}.{gate}: feature gate {gate} is not supported by nodeagent, which does not "
                       f"implement {what}: leave it off")
    return out
