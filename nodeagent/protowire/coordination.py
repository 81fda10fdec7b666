"""coordination.k8s.io/v1 Lease (k8s.io/api coordination/v1 generated.proto).

Why: the node's heartbeat and every leader election write Leases through client-go's typed
client, which sends protobuf. Notation: nodeagent.protowire.notation.
"""

from __future__ import annotations

from nodeagent.protowire.notation import package

COORDINATION_V1 = package({
    "Lease": "1 metadata meta.ObjectMeta; 2 spec LeaseSpec",
    "LeaseSpec": """
        1 holderIdentity string?; 2 leaseDurationSeconds int32?; 3 acquireTime MicroTime*; 4 renewTime MicroTime*
        5 leaseTransitions int32?; 6 strategy string?; 7 preferredHolder string?""",
})
