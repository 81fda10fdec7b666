"""Schemas of resource.k8s.io (DRA) in each served version: v1, v1beta2 and v1beta1 (and
v1alpha3's ResourceClaim and ResourceClaimTemplate, served for classic DRA: v1beta1's shape plus
1.31's spec.controller, status.allocation.controller and status.deallocationRequested).

Why one function per version family: v1 and v1beta2 share one shape (requests hold `exactly`
or `firstAvailable`; devices are flat), while v1beta1 puts the request fields on the request
itself and nests a device's fields under `basic`. The rest is identical, so it is written once
and named under each version's package (io.k8s.api.resource.<version>.*).
"""

from __future__ import annotations

from collections.abc import Callable

from nodeagent.apiserver.schema.builtin.dsl import (
    arr,
    b,
    core,
    i64,
    kind,
    lmap,
    mapof,
    meta,
    metadata,
    obj,
    qmap,
    qty,
    ref,
    s,
    strs,
    time,
)
from nodeagent.apiserver.schema.model import Schema

RAW = "io.k8s.apimachinery.pkg.runtime.RawExtension"
_Ref = Callable[..., Schema]


def resource_definitions(version: str) -> dict[str, Schema]:
    """Every definition of resource.k8s.io/<version> the four DRA kinds need."""
    p = f"io.k8s.api.resource.{version}."

    def r(name: str, desc: str = "") -> Schema:
        return ref(p + name, desc)

    beta1 = version in ("v1beta1", "v1alpha3")
    classic = version == "v1alpha3"  # 1.31's classic DRA fields (KEP-3063), in no later version
    out: dict[str, Schema] = {
        p + "DeviceClass": kind("A class of devices claims can ask for; defines selectors and config.", {
            "spec": r("DeviceClassSpec", "Selectors and configuration of the class."),
        }, ["spec"]),
        p + "DeviceClassSpec": obj("What a device class selects and configures.", {
            "selectors": arr(r("DeviceSelector"), "Conditions every device of the class meets.", atomic=True),
            "config": arr(r("DeviceClassConfiguration"), "Driver configuration for devices of the class.",
                          atomic=True),
            "extendedResourceName": s("Extended resource name pods may request to get a device of the class."),
        }),
        p + "DeviceClassConfiguration": obj("Configuration for devices of a class.", {
            "opaque": r("OpaqueDeviceConfiguration", "Driver-specific parameters."),
        }),
        p + "OpaqueDeviceConfiguration": obj("Parameters only the named driver understands.", {
            "driver": s("Driver the parameters are for."),
            "parameters": ref(RAW, "The parameters, any JSON object with apiVersion and kind."),
        }, ["driver", "parameters"]),
        p + "DeviceSelector": obj("One condition on a device.", {
            "cel": r("CELDeviceSelector", "A CEL expression over the device."),
        }),
        p + "CELDeviceSelector": obj("A CEL expression that must be true for a device.", {
            "expression": s("CEL over device.driver, device.attributes and device.capacity."),
        }, ["expression"]),
        p + "ResourceClaim": kind("Devices asked for by pods, and once allocated, which ones they got.", {
            "spec": r("ResourceClaimSpec", "What is asked for; immutable."),
            "status": r("ResourceClaimStatus", "Allocation, reservations and device status."),
        }, ["spec"]),
        p + "ResourceClaimSpec": obj("What a claim asks for.", {
            "devices": r("DeviceClaim", "The devices asked for."),
            **({"controller": s("Name of the DRA driver that handles allocation of this claim (classic DRA); "
                                "empty: the scheduler allocates.")} if classic else {}),
        }),
        p + "DeviceClaim": obj("Device requests with their constraints and configuration.", {
            "requests": arr(r("DeviceRequest"), "The requests; all must be met.", atomic=True),
            "constraints": arr(r("DeviceConstraint"), "Constraints across requests.", atomic=True),
            "config": arr(r("DeviceClaimConfiguration"), "Configuration for the requested devices.", atomic=True),
        }),
        p + "DeviceConstraint": obj("A constraint on the devices of some requests.", {
            "requests": strs("Requests the constraint covers; all when empty."),
            "matchAttribute": s("Attribute that must have the same value on all the devices."),
            "distinctAttribute": s("Attribute that must differ on all the devices."),
        }),
        p + "DeviceClaimConfiguration": obj("Configuration for devices of some requests.", {
            "requests": strs("Requests it applies to; all when empty."),
            "opaque": r("OpaqueDeviceConfiguration", "Driver-specific parameters."),
        }),
        p + "DeviceSubRequest": obj("One alternative of a firstAvailable request.", {
            "name": s("Name of the alternative, referenced as <request>/<subrequest>."),
            **_request_fields(r, admin=False),
        }, ["name", "deviceClassName"]),
        p + "CapacityRequirements": obj("Capacity a request consumes from a shared device.", {
            "requests": qmap("Amount per capacity name."),
        }),
        p + "DeviceToleration": obj("Lets a request tolerate a device taint.", {
            "key": s("Taint key; empty with Exists matches all."),
            "operator": s("Exists or Equal (the default).", enum=["Equal", "Exists"]),
            "value": s("Taint value for Equal."),
            "effect": s("NoSchedule, NoExecute or None; all when empty.", enum=["NoExecute", "NoSchedule", "None"]),
            "tolerationSeconds": i64("For NoExecute: seconds to stay allocated after the taint appears."),
        }),
        p + "ResourceClaimStatus": obj("Observed state of a claim.", {
            "allocation": r("AllocationResult", "The devices allocated, once allocated."),
            "reservedFor": lmap(r("ResourceClaimConsumerReference"), "Consumers (pods) allowed to use the claim.",
                                "uid"),
            "devices": lmap(r("AllocatedDeviceStatus"), "Status of each allocated device, reported by drivers.",
                            "driver", "device", "pool", "shareID", strategy=""),
            **({"deallocationRequested": b("Set by the scheduler when the controller should deallocate "
                                           "the claim (classic DRA).")} if classic else {}),
        }),
        p + "ResourceClaimConsumerReference": obj("A consumer of a claim.", {
            "apiGroup": s("API group of the consumer; empty for core."),
            "resource": s("Resource type of the consumer, e.g. pods."),
            "name": s("Name of the consumer."),
            "uid": s("UID of the consumer."),
        }, ["resource", "name", "uid"]),
        p + "AllocationResult": obj("Where and which devices were allocated.", {
            "devices": r("DeviceAllocationResult", "The allocated devices."),
            "nodeSelector": core("NodeSelector", "Nodes the allocation is usable on."),
            "allocationTimestamp": time("When the allocation was made."),
            **({"controller": s("The controller that allocated the claim (classic DRA); empty: the "
                                "scheduler did.")} if classic else {}),
        }),
        p + "DeviceAllocationResult": obj("Allocated devices and their configuration.", {
            "results": arr(r("DeviceRequestAllocationResult"), "One entry per allocated device.", atomic=True),
            "config": arr(r("DeviceAllocationConfiguration"), "Configuration from classes and the claim.",
                          atomic=True),
        }),
        p + "DeviceRequestAllocationResult": obj("The device allocated for a request.", {
            "request": s("Request (or request/subrequest) the device serves."),
            "driver": s("Driver of the device."),
            "pool": s("Pool of the device."),
            "device": s("Device name in the pool."),
            "adminAccess": b("Allocated for admin access."),
            "tolerations": arr(r("DeviceToleration"), "Tolerations in effect for the device.", atomic=True),
            "bindingConditions": strs("Conditions that must be true before the pod is bound."),
            "bindingFailureConditions": strs("Conditions that, when true, make binding fail."),
            "shareID": s("Id of this share of a device allocated many times."),
            "consumedCapacity": qmap("Capacity consumed from the device."),
            "skipNodeOperations": strs("Node operations skipped for the device, copied from its slice."),
        }, ["request", "driver", "pool", "device"]),
        p + "DeviceAllocationConfiguration": obj("Configuration applied to allocated devices.", {
            "source": s("FromClass or FromClaim.", enum=["FromClaim", "FromClass"]),
            "requests": strs("Requests it applies to; all when empty."),
            "opaque": r("OpaqueDeviceConfiguration", "Driver-specific parameters."),
        }, ["source"]),
        p + "AllocatedDeviceStatus": obj("Status a driver reports for one allocated device.", {
            "driver": s("Driver of the device."),
            "pool": s("Pool of the device."),
            "device": s("Device name."),
            "shareID": s("Share of the device, when shared."),
            "conditions": lmap(meta("Condition"), "Conditions of the device.", "type", strategy=""),
            "data": ref(RAW, "Driver-specific data."),
            "networkData": r("NetworkDeviceData", "Network details of the device."),
        }, ["driver", "pool", "device"]),
        p + "NetworkDeviceData": obj("Network details of a device.", {
            "interfaceName": s("Interface name in the pod."),
            "ips": strs("IP addresses in CIDR form."),
            "hardwareAddress": s("MAC address."),
        }),
        p + "ResourceClaimTemplate": kind("A template pods use to get their own ResourceClaim.", {
            "spec": r("ResourceClaimTemplateSpec", "The claim to create."),
        }, ["spec"]),
        p + "ResourceClaimTemplateSpec": obj("A claim template.", {
            "metadata": metadata("Labels and annotations copied to each claim."),
            "spec": r("ResourceClaimSpec", "Spec of each claim."),
        }, ["spec"]),
        **_slice_definitions(p, r, beta1),
    }
    if beta1:
        out[p + "DeviceRequest"] = obj("A request for devices of one class.", {
            "name": s("Name of the request, referenced by containers and constraints."),
            **_request_fields(r, admin=True),
            "firstAvailable": arr(r("DeviceSubRequest"), "Alternatives tried in order.", atomic=True),
        }, ["name"])
    else:
        out[p + "DeviceRequest"] = obj("A request for devices; exactly one of exactly and firstAvailable.", {
            "name": s("Name of the request, referenced by containers and constraints."),
            "exactly": r("ExactDeviceRequest", "One specific kind of device."),
            "firstAvailable": arr(r("DeviceSubRequest"), "Alternatives tried in order.", atomic=True),
        }, ["name"])
        out[p + "ExactDeviceRequest"] = obj("A request for devices of one class.",
                                            _request_fields(r, admin=True), ["deviceClassName"])
    return out


def _request_fields(r: _Ref, *, admin: bool) -> dict[str, Schema]:
    fields = {
        "deviceClassName": s("DeviceClass the devices come from."),
        "selectors": arr(r("DeviceSelector"), "Further conditions on the devices.", atomic=True),
        "allocationMode": s("ExactCount (default) or All.", enum=["All", "ExactCount"]),
        "count": i64("Number of devices for ExactCount; 1 by default."),
        "tolerations": arr(r("DeviceToleration"), "Device taints to tolerate.", atomic=True),
        "capacity": r("CapacityRequirements", "Capacity to consume from shared devices."),
    }
    if admin:
        fields["adminAccess"] = b("Ask for admin access to devices that may be in use.")
    return fields


def _slice_definitions(p: str, r: _Ref, beta1: bool) -> dict[str, Schema]:
    device_fields: dict[str, Schema] = {
        "attributes": mapof(r("DeviceAttribute"), "Attributes by qualified name."),
        "capacity": mapof(r("DeviceCapacity"), "Capacities by qualified name."),
        "consumesCounters": arr(r("DeviceCounterConsumption"), "Shared counters the device uses.", atomic=True),
        "nodeName": s("Node of the device, with perDeviceNodeSelection."),
        "nodeSelector": core("NodeSelector", "Nodes of the device, with perDeviceNodeSelection."),
        "allNodes": b("Available on all nodes, with perDeviceNodeSelection."),
        "taints": arr(r("DeviceTaint"), "Taints set by the driver.", atomic=True),
        "bindsToNode": b("Limit an allocation to the node chosen when allocating."),
        "bindingConditions": strs("Conditions that must be true before binding."),
        "bindingFailureConditions": strs("Conditions that, when true, make binding fail."),
        "allowMultipleAllocations": b("May be allocated to many claims at once."),
        "nodeAllocatableResources": mapof(r("NodeAllocatableResource"),
                                          "Node allocatable resources (cpu, memory, hugepages) an allocation "
                                          "of the device takes (DRANodeAllocatableResources)."),
    }
    out: dict[str, Schema] = {
        p + "ResourceSlice": kind("Devices of one pool published by a driver.", {
            "spec": r("ResourceSliceSpec", "The published information."),
        }, ["spec"]),
        p + "ResourceSliceSpec": obj("What a driver publishes in one slice.", {
            "driver": s("Name of the DRA driver."),
            "pool": r("ResourcePool", "The pool the slice belongs to."),
            "nodeName": s("Node providing the devices; one of the node selection fields."),
            "nodeSelector": core("NodeSelector", "Nodes with access to the pool."),
            "allNodes": b("All nodes have access to the pool."),
            "devices": arr(r("Device"), "Devices of the pool in this slice.", atomic=True),
            "perDeviceNodeSelection": b("Each device names its own nodes."),
            "sharedCounters": arr(r("CounterSet"), "Counter sets devices consume from.", atomic=True),
            "skipNodeOperations": strs("Node operations (gRPC calls) the kubelet skips for these devices."),
        }, ["driver", "pool"]),
        p + "ResourcePool": obj("The pool a slice belongs to.", {
            "name": s("Pool name; often the node name."),
            "generation": i64("Generation of the pool; only slices of the highest count."),
            "resourceSliceCount": i64("Number of slices in the pool at this generation."),
        }, ["name", "generation", "resourceSliceCount"]),
        p + "DeviceAttribute": obj("One attribute value; exactly one field is set.", {
            "int": i64("A number."),
            "bool": b("A boolean."),
            "string": s("A string of at most 64 characters."),
            "version": s("A semantic version."),
            "ints": arr(i64(), "A non-empty list of numbers (DRAListTypeAttributes).", atomic=True),
            "bools": arr(b(), "A non-empty list of booleans (DRAListTypeAttributes).", atomic=True),
            "strings": arr(s(), "A non-empty list of strings of at most 64 characters (DRAListTypeAttributes).",
                           atomic=True),
            "versions": arr(s(), "A non-empty list of semantic versions (DRAListTypeAttributes).", atomic=True),
        }),
        p + "DeviceCapacity": obj("An amount of a device.", {
            "value": qty("The total amount."),
            "requestPolicy": r("CapacityRequestPolicy", "How much a shared request may take."),
        }, ["value"]),
        p + "CapacityRequestPolicy": obj("Rules on requested amounts of a shared capacity.", {
            "default": qty("Amount taken when a request names none."),
            "validValues": arr(qty(), "Allowed amounts.", atomic=True),
            "validRange": r("CapacityRequestPolicyRange", "Allowed range of amounts."),
        }),
        p + "CapacityRequestPolicyRange": obj("A range of amounts.", {
            "min": qty("Least amount."), "max": qty("Most amount."), "step": qty("Increment."),
        }, ["min"]),
        p + "DeviceCounterConsumption": obj("Counters a device takes from a counter set.", {
            "counterSet": s("Name of the counter set."),
            "counters": mapof(r("Counter"), "Amount taken per counter."),
        }, ["counterSet", "counters"]),
        p + "CounterSet": obj("Named counters shared by devices.", {
            "name": s("Name of the set."),
            "counters": mapof(r("Counter"), "Counters by name."),
        }, ["name", "counters"]),
        p + "Counter": obj("An amount of a counter.", {"value": qty("The amount.")}, ["value"]),
        p + "NodeAllocatableResource": obj("How an allocation of the device counts against a node resource.", {
            "mapping": r("NodeAllocatableMapping", "The device models the resource itself."),
            "overhead": r("NodeAllocatableOverhead", "Auxiliary overhead of using the device."),
        }),
        p + "NodeAllocatableMapping": obj("The resource quantity an allocation stands for.", {
            "capacityKey": s("Capacity whose consumed amount is the base quantity."),
            "capacityMultiplier": qty("Multiplier of the consumed capacity."),
            "deviceMultiplier": qty("Quantity per allocated device."),
        }),
        p + "NodeAllocatableOverhead": obj("Overhead per pod and per referencing container.", {
            "perPod": qty("Overhead once per pod referencing the claim."),
            "perContainer": qty("Overhead per container referencing the claim."),
        }),
        p + "DeviceTaint": obj("A taint of a device.", {
            "key": s("Taint key."),
            "value": s("Taint value."),
            "effect": s("NoSchedule, NoExecute or None (informational).", enum=["NoExecute", "NoSchedule", "None"]),
            "timeAdded": time("When the taint was added."),
        }, ["key", "effect"]),
    }
    if beta1:
        out[p + "Device"] = obj("One device; besides the name exactly one field is set.", {
            "name": s("Device name, unique in the pool."),
            "basic": r("BasicDevice", "Attributes and capacities of the device."),
        }, ["name"])
        out[p + "BasicDevice"] = obj("A device's attributes and capacities.", device_fields)
    else:
        out[p + "Device"] = obj("One device of a pool.", {
            "name": s("Device name, unique in the pool."), **device_fields,
        }, ["name"])
    return out

