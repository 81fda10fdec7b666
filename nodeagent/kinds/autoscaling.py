"""The autoscaling kinds: HorizontalPodAutoscaler (+status) in autoscaling/v2 (stored) and v1.

Why served: kube-controller-manager's horizontal-pod-autoscaler controller lists and watches them;
`kubectl autoscale` up to kubectl 1.32 creates them as autoscaling/v1, which converts to and from
v2 as upstream's does (kinds/autoscaling_conversion.py: targetCPUUtilizationPercentage <-> a CPU
Resource metric, the rest in the autoscaling.alpha.kubernetes.io/* annotations).
Facts from k8s.io/kubernetes pkg/registry/autoscaling/horizontalpodautoscaler. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds import autoscaling_conversion
from nodeagent.kinds.model import GENERATION_SPEC, STATUS_RESET, Kind

HORIZONTAL_POD_AUTOSCALER = Kind(
    "HorizontalPodAutoscaler", "horizontalpodautoscalers", namespaced=True,
    versions=("autoscaling/v2", "autoscaling/v1"),
    conversions={"autoscaling/v1": autoscaling_conversion.V1},
    definition={"autoscaling": "io.k8s.api.autoscaling"}, short_names=("hpa",), categories=("all",),
    subresources=("status",), reset=STATUS_RESET, printer="horizontalpodautoscaler", store_hooks="autoscaling",
    generation=GENERATION_SPEC,
)

KINDS = (HORIZONTAL_POD_AUTOSCALER,)
