"""resource.k8s.io v1, v1beta2, v1beta1 and v1alpha3 messages (k8s.io/api resource/*/generated.proto),
and classic DRA's v1alpha3 claims and PodSchedulingContext (k8s.io/api v0.31).

Why: DRA drivers publish ResourceSlices and the scheduler side writes ResourceClaims through
client-go's typed clients, which send protobuf. v1beta2's messages are field for field v1's
(same numbers, names and Go tags), so one table serves both, and DeviceTaintRule's messages are
the same in v1alpha3; v1beta1 differs where a device's data sits under `basic` and a request
holds its class and selectors directly, and overrides those messages. Field order is the Go
struct's; presence marks follow the struct tags (tests/unit/protowire checks both against
upstream's types.go).
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

_V1 = {
    "ResourceSlice": "1 metadata meta.ObjectMeta; 2 spec ResourceSliceSpec",
    "ResourceSliceSpec": """
        1 driver string!; 2 pool ResourcePool; 3 nodeName string?; 4 nodeSelector core.NodeSelector*
        5 allNodes bool?; 6 devices []Device; 7 perDeviceNodeSelection bool?; 8 sharedCounters []CounterSet
        10 skipNodeOperations []string""",
    "CounterSet": "1 name string!; 2 counters {}Counter",
    "ResourcePool": "1 name string!; 2 generation int64!; 3 resourceSliceCount int64!",
    "Device": """
        1 name string!; 2 attributes {}DeviceAttribute; 3 capacity {}DeviceCapacity
        4 consumesCounters []DeviceCounterConsumption; 5 nodeName string?; 6 nodeSelector core.NodeSelector*
        7 allNodes bool?; 8 taints []DeviceTaint; 9 bindsToNode bool?; 10 bindingConditions []string
        11 bindingFailureConditions []string; 12 allowMultipleAllocations bool?
        14 nodeAllocatableResources {}NodeAllocatableResource""",
    "NodeAllocatableResource": "3 mapping NodeAllocatableMapping*; 4 overhead NodeAllocatableOverhead*",
    "NodeAllocatableMapping": "1 capacityKey string?; 2 capacityMultiplier Quantity*; 3 deviceMultiplier Quantity*",
    "NodeAllocatableOverhead": "1 perPod Quantity*; 2 perContainer Quantity*",
    "DeviceCounterConsumption": "1 counterSet string!; 2 counters {}Counter",
    "DeviceCapacity": "1 value Quantity; 2 requestPolicy CapacityRequestPolicy*",
    "Counter": "1 value Quantity",
    "CapacityRequestPolicy": "1 default Quantity*; 3 validValues []Quantity; 4 validRange CapacityRequestPolicyRange*",
    "CapacityRequestPolicyRange": "1 min Quantity*; 2 max Quantity*; 3 step Quantity*",
    "DeviceAttribute": """
        2 int int64?; 3 bool bool?; 4 string string?; 5 version string?; 6 ints []int64; 7 bools []bool
        8 strings []string; 9 versions []string""",
    "DeviceTaint": "1 key string!; 2 value string; 3 effect string!; 4 timeAdded Time*",
    # DeviceTaintRule: the same messages in v1alpha3, v1beta2 and v1 (since 1.35).
    "DeviceTaintRule": "1 metadata meta.ObjectMeta; 2 spec DeviceTaintRuleSpec; 3 status DeviceTaintRuleStatus",
    "DeviceTaintRuleSpec": "1 deviceSelector DeviceTaintSelector*; 2 taint DeviceTaint",
    "DeviceTaintSelector": "2 driver string?; 3 pool string?; 4 device string?",
    "DeviceTaintRuleStatus": "1 conditions []meta.Condition",
    "ResourceClaim": "1 metadata meta.ObjectMeta; 2 spec ResourceClaimSpec; 3 status ResourceClaimStatus",
    "ResourceClaimSpec": "1 devices DeviceClaim",
    "DeviceClaim": """
        1 requests []DeviceRequest; 2 constraints []DeviceConstraint; 3 config []DeviceClaimConfiguration""",
    "DeviceRequest": "1 name string!; 2 exactly ExactDeviceRequest*; 3 firstAvailable []DeviceSubRequest",
    "ExactDeviceRequest": """
        1 deviceClassName string!; 2 selectors []DeviceSelector; 3 allocationMode string; 4 count int64
        5 adminAccess bool?; 6 tolerations []DeviceToleration; 7 capacity CapacityRequirements*""",
    "DeviceSubRequest": """
        1 name string!; 2 deviceClassName string!; 3 selectors []DeviceSelector; 4 allocationMode string
        5 count int64; 6 tolerations []DeviceToleration; 7 capacity CapacityRequirements*""",
    "CapacityRequirements": "1 requests {}Quantity",
    "DeviceSelector": "1 cel CELDeviceSelector*",
    "CELDeviceSelector": "1 expression string!",
    "DeviceConstraint": "1 requests []string; 2 matchAttribute string?; 3 distinctAttribute string?",
    "DeviceClaimConfiguration": "1 requests []string; 2 DeviceConfiguration ^DeviceConfiguration",
    "DeviceConfiguration": "1 opaque OpaqueDeviceConfiguration*",
    "OpaqueDeviceConfiguration": "1 driver string!; 2 parameters RawExtension",
    "DeviceToleration": """
        1 key string; 2 operator string; 3 value string; 4 effect string; 5 tolerationSeconds int64?""",
    "ResourceClaimStatus": """
        1 allocation AllocationResult*; 2 reservedFor []ResourceClaimConsumerReference
        4 devices []AllocatedDeviceStatus""",
    "ResourceClaimConsumerReference": "1 apiGroup string; 3 resource string!; 4 name string!; 5 uid string!",
    "AllocationResult": """
        1 devices DeviceAllocationResult; 3 nodeSelector core.NodeSelector*; 5 allocationTimestamp Time*""",
    "DeviceAllocationResult": "1 results []DeviceRequestAllocationResult; 2 config []DeviceAllocationConfiguration",
    "DeviceRequestAllocationResult": """
        1 request string!; 2 driver string!; 3 pool string!; 4 device string!; 5 adminAccess bool?
        6 tolerations []DeviceToleration; 7 bindingConditions []string; 8 bindingFailureConditions []string
        9 shareID string?; 10 consumedCapacity {}Quantity; 11 skipNodeOperations []string""",
    "DeviceAllocationConfiguration": """
        1 source string!; 2 requests []string; 3 DeviceConfiguration ^DeviceConfiguration""",
    "DeviceClass": "1 metadata meta.ObjectMeta; 2 spec DeviceClassSpec",
    "DeviceClassSpec": """
        1 selectors []DeviceSelector; 2 config []DeviceClassConfiguration; 4 extendedResourceName string?""",
    "DeviceClassConfiguration": "1 DeviceConfiguration ^DeviceConfiguration",
    "ResourceClaimTemplate": "1 metadata meta.ObjectMeta; 2 spec ResourceClaimTemplateSpec",
    "ResourceClaimTemplateSpec": "1 metadata meta.ObjectMeta; 2 spec ResourceClaimSpec",
    "AllocatedDeviceStatus": """
        1 driver string!; 2 pool string!; 3 device string!; 7 shareID string?; 4 conditions []meta.Condition
        5 data RawExtension*; 6 networkData NetworkDeviceData*""",
    "NetworkDeviceData": "1 interfaceName string; 2 ips []string; 3 hardwareAddress string",
}

_V1BETA1 = {
    # DeviceTaintRule is not served in v1beta1 (v1alpha3, v1beta2 and v1 only).
    **{name: spec for name, spec in _V1.items()
       if name != "ExactDeviceRequest" and not name.startswith(("DeviceTaintRule", "DeviceTaintSelector"))},
    "ResourceSliceSpec": """
        1 driver string!; 2 pool ResourcePool; 3 nodeName string; 4 nodeSelector core.NodeSelector*
        5 allNodes bool; 6 devices []Device; 7 perDeviceNodeSelection bool?; 8 sharedCounters []CounterSet
        10 skipNodeOperations []string""",
    "Device": "1 name string!; 2 basic BasicDevice*",
    "BasicDevice": """
        1 attributes {}DeviceAttribute; 2 capacity {}DeviceCapacity; 3 consumesCounters []DeviceCounterConsumption
        4 nodeName string?; 5 nodeSelector core.NodeSelector*; 6 allNodes bool?; 7 taints []DeviceTaint
        8 bindsToNode bool?; 9 bindingConditions []string; 10 bindingFailureConditions []string
        11 allowMultipleAllocations bool?; 14 nodeAllocatableResources {}NodeAllocatableResource""",
    "DeviceRequest": """
        1 name string!; 2 deviceClassName string!; 3 selectors []DeviceSelector; 4 allocationMode string
        5 count int64; 6 adminAccess bool?; 7 firstAvailable []DeviceSubRequest; 8 tolerations []DeviceToleration
        9 capacity CapacityRequirements*""",
    "DeviceSubRequest": """
        1 name string!; 2 deviceClassName string!; 3 selectors []DeviceSelector; 4 allocationMode string
        5 count int64; 7 tolerations []DeviceToleration; 8 capacity CapacityRequirements*""",
}

_CLASSIC = {
    # The claims of classic DRA (KEP-3063) as nodeagent serves them in v1alpha3 (kinds/resource.py):
    # v1beta1's messages plus 1.31's classic fields under 1.31's numbers (k8s.io/api v0.31
    # resource/v1alpha3, whose numbers later versions keep free: status 3, allocation 4), and
    # PodSchedulingContext. DeviceTaintRule's v1alpha3 is upstream's current one (_V1).
    **{name: spec for name, spec in _V1BETA1.items()
       if name not in ("ResourceSlice", "ResourceSliceSpec", "CounterSet", "ResourcePool", "Device", "BasicDevice",
                       "NodeAllocatableResource", "NodeAllocatableMapping", "NodeAllocatableOverhead",
                       "DeviceCounterConsumption", "DeviceCapacity", "Counter", "CapacityRequestPolicy",
                       "CapacityRequestPolicyRange", "DeviceAttribute", "DeviceTaint", "DeviceClass",
                       "DeviceClassSpec", "DeviceClassConfiguration")},
    "ResourceClaimSpec": "1 devices DeviceClaim; 2 controller string",
    "ResourceClaimStatus": """
        1 allocation AllocationResult*; 2 reservedFor []ResourceClaimConsumerReference
        4 devices []AllocatedDeviceStatus; 3 deallocationRequested bool""",
    "AllocationResult": """
        1 devices DeviceAllocationResult; 3 nodeSelector core.NodeSelector*; 5 allocationTimestamp Time*
        4 controller string""",
    "PodSchedulingContext": """
        1 metadata meta.ObjectMeta; 2 spec PodSchedulingContextSpec; 3 status PodSchedulingContextStatus""",
    "PodSchedulingContextSpec": "1 selectedNode string; 2 potentialNodes []string",
    "PodSchedulingContextStatus": "1 resourceClaims []ResourceClaimSchedulingStatus",
    "ResourceClaimSchedulingStatus": "1 name string!; 2 unsuitableNodes []string",
}

RESOURCE_V1 = package(_V1)
RESOURCE_V1BETA1 = package(_V1BETA1)
RESOURCE_V1ALPHA3_CLASSIC = package(_CLASSIC)
