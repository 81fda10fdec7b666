"""The node's declared features (Node.status.declaredFeatures, NodeDeclaredFeatures): which of
k8s.io/component-helpers/nodedeclaredfeatures' registry a kubelet of the emulated release declares.

Exists because the list is not configuration but derived from it: upstream's framework asks each
registered feature whether it is on (its feature gate, and for two of them a container runtime
capability) and the kubelet publishes the names, sorted. nodeagent runs no container runtime, so
the runtime-backed features (UserNamespacesHostNetworkSupport, VolumeBindMountOptions) are never
declared, as for a runtime that does not report them (containerd 1.6 does not).

ExtendWebSocketsToKubelet is never declared either, though its gate is on in 1.37 (an intended
difference): a declared feature is a capability, and kube-apiserver (pod/rest/subresources.go) sends
exec, attach and port-forward websockets straight to a node that declares it. nodeagent's kubelet
endpoint serves no websocket streams (no container runs: it answers those paths with a 400 text),
so declaring it made kube-apiserver fail `kubectl exec` with an empty "Error from server:"; without
it kube-apiserver translates the websocket to SPDY and relays the endpoint's refusal, which is what
a user should read. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodeagent.config import gatelist

GATE = "NodeDeclaredFeatures"

# The registry (features/registry.go, v0.37.2) as (declared name, gate it follows); none has a
# MaxVersion in 1.37. The runtime-backed ones and ExtendWebSocketsToKubelet are left out (see the
# module docstring).
REGISTRY: tuple[tuple[str, str], ...] = (
    ("RestartAllContainersOnContainerExits", "RestartAllContainersOnContainerExits"),
    ("InPlacePodLevelResourcesVerticalScaling", "InPlacePodLevelResourcesVerticalScaling"),
    ("InPlacePodVerticalScalingInitContainers", "InPlacePodVerticalScalingInitContainers"),
    ("InPlacePodVerticalScalingMemoryBackedVolumes", "InPlacePodVerticalScalingMemoryBackedVolumes"),
    ("DRANodeAllocatableResources", "DRANodeAllocatableResources"),
    ("DRAOptionalNodeOperations", "DRAOptionalNodeOperations"),
)


def gate_on(gate: str, minor: int, gates: Mapping[str, bool]) -> bool:
    """A gate at 1.<minor> under the node's effective gates (`gates` holds the gates nodeagent reads
    and the explicit settings; any other gate takes the release's default)."""
    if gate in gates:
        return bool(gates[gate])
    return gatelist.enabled(gate, minor, gates)


def declared_features(minor: int, gates: Mapping[str, bool]) -> list[str]:
    """The names a kubelet of 1.<minor> declares, sorted (framework.MustMapSorted's order); [] when
    NodeDeclaredFeatures is off (the kubelet then writes no declaredFeatures)."""
    if not gate_on(GATE, minor, gates):
        return []
    return sorted(name for name, gate in REGISTRY if gate_on(gate, minor, gates))
