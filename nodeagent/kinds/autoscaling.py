"""The autoscaling kinds: autoscaling/v2 HorizontalPodAutoscaler (+status).

Why served: kube-controller-manager's horizontal-pod-autoscaler controller lists and watches them.
autoscaling/v1 (upstream serves it too, converting targetCPUUtilizationPercentage to and from a
Resource metric with annotations for the rest) is not served yet: client-go and kubectl use v2.
Facts from k8s.io/kubernetes pkg/registry/autoscaling/horizontalpodautoscaler. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.kinds.model import STATUS_RESET, Kind

HORIZONTAL_POD_AUTOSCALER = Kind(
    "HorizontalPodAutoscaler", "horizontalpodautoscalers", namespaced=True, versions=("autoscaling/v2",),
    definition={"autoscaling": "io.k8s.api.autoscaling"}, short_names=("hpa",), categories=("all",),
    subresources=("status",), reset=STATUS_RESET, printer="horizontalpodautoscaler", store_hooks="autoscaling",
)

KINDS = (HORIZONTAL_POD_AUTOSCALER,)
