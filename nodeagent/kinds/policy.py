"""The policy kinds: policy/v1 PodDisruptionBudget.

Why served: the real kube-scheduler's default profile lists and watches PodDisruptionBudgets
(preemption picks victims that violate the fewest), and the real kube-controller-manager's
disruption controller writes their status. Facts from k8s.io/kubernetes
pkg/registry/policy/poddisruptionbudget. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import GENERATION_SPEC, STATUS_RESET, Kind

POD_DISRUPTION_BUDGET = Kind(
    "PodDisruptionBudget", "poddisruptionbudgets", namespaced=True, unconditional_update=False, versions=("policy/v1",),
    definition={"policy": "io.k8s.api.policy"}, short_names=("pdb",), subresources=("status",),
    reset=STATUS_RESET, store_hooks="cluster", printer="poddisruptionbudget",
    metadata_apart=True,  # ValidatePodDisruptionBudget validates the spec only
    generation=GENERATION_SPEC,
)

KINDS = (POD_DISRUPTION_BUDGET,)
