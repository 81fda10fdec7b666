"""The coordination.k8s.io kinds: Lease (node heartbeats, leader election). Pure: no I/O."""

from __future__ import annotations

from nodeagent.kinds.model import Kind

LEASE = Kind(
    "Lease", "leases", namespaced=True, unconditional_update=False, versions=("coordination.k8s.io/v1",),
    definition={"coordination.k8s.io": "io.k8s.api.coordination"}, store_hooks="coordination", printer="lease",
)

KINDS = (LEASE,)
