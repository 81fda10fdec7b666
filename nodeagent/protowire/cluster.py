"""policy/v1 PodDisruptionBudget and Eviction, scheduling.k8s.io/v1 PriorityClass and discovery.k8s.io/v1
EndpointSlice (k8s.io/api policy/v1, scheduling/v1, discovery/v1 generated.proto).

Why: the real kube-scheduler and kube-controller-manager write and read these through client-go's
typed clients, which send protobuf. Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

POLICY_V1 = package({
    # pods/eviction's body (policy/v1beta1's Eviction has the same two fields)
    "Eviction": "1 metadata meta.ObjectMeta; 2 deleteOptions meta.DeleteOptions*",
    "PodDisruptionBudget": """
        1 metadata meta.ObjectMeta; 2 spec PodDisruptionBudgetSpec; 3 status PodDisruptionBudgetStatus""",
    "PodDisruptionBudgetSpec": """
        1 minAvailable IntOrString*; 2 selector meta.LabelSelector*; 3 maxUnavailable IntOrString*
        4 unhealthyPodEvictionPolicy string?""",
    "PodDisruptionBudgetStatus": """
        1 observedGeneration int64; 2 disruptedPods {}Time; 3 disruptionsAllowed int32!; 4 currentHealthy int32!
        5 desiredHealthy int32!; 6 expectedPods int32!; 7 conditions []meta.Condition""",
})

SCHEDULING_V1 = package({
    "PriorityClass": """
        1 metadata meta.ObjectMeta; 2 value int32!; 3 globalDefault bool; 4 description string
        5 preemptionPolicy string?""",
})

DISCOVERY_V1 = package({
    "EndpointSlice": """
        1 metadata meta.ObjectMeta; 4 addressType string!; 2 endpoints []Endpoint; 3 ports []EndpointPort""",
    "Endpoint": """
        1 addresses []string; 2 conditions EndpointConditions; 3 hostname string?; 4 targetRef core.ObjectReference*
        5 deprecatedTopology {}string; 6 nodeName string?; 7 zone string?; 8 hints EndpointHints*""",
    "EndpointConditions": "1 ready bool?; 2 serving bool?; 3 terminating bool?",
    "EndpointHints": "1 forZones []ForZone; 2 forNodes []ForNode",
    "ForZone": "1 name string!",
    "ForNode": "1 name string!",
    "EndpointPort": "1 name string?; 2 protocol string?; 3 port int32?; 4 appProtocol string?",
})
