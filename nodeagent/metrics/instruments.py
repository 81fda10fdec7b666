"""Counters and histograms updated by adapters and managers, on an explicit registry.

One `Instruments` object per daemon, created in nodeagent/wiring on the daemon's own
CollectorRegistry (never the global REGISTRY) and passed down. Gauges that mirror
state are not here: they are collected at scrape time (metrics/collectors.py).
Names follow the kubelet's where the kubelet has the metric, exactly: a kubelet counter is a
NamedCounter (metrics/exposition.py), exported as given, with `_total` only where upstream's name
has it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from nodeagent.metrics.exposition import NamedCounter


class Instruments:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        # Pod admission and eviction (nodeagent's own names; the kubelet has none).
        self.admissions = Counter(
            "nodeagent_pod_admissions",
            "Pod admission decisions by result (admitted or the rejection reason).",
            ["result"],
            registry=registry,
        )
        self.evictions = NamedCounter(
            "kubelet_evictions",
            "Cumulative number of pod evictions by eviction signal.",
            ["eviction_signal"],
            registry=registry,
        )
        # gRPC servers (all sockets we serve).
        self.grpc_requests = Counter(
            "nodeagent_grpc_server_handled",
            "gRPC calls handled by the daemon's servers.",
            ["grpc_service", "grpc_method", "grpc_code"],
            registry=registry,
        )
        self.grpc_duration = Histogram(
            "nodeagent_grpc_server_handling_seconds",
            "Duration of gRPC calls handled by the daemon's servers.",
            ["grpc_service", "grpc_method"],
            registry=registry,
        )
        # Pod resources: the kubelet's names exactly, `_total` only on the one that has it upstream
        # (pkg/kubelet/metrics/metrics.go PodResourcesEndpoint*Key).
        pr = "kubelet_pod_resources_endpoint_"
        label = ["server_api_version"]
        self.pr_requests_total = NamedCounter(pr + "requests_total", "Cumulative number of requests to the "
                                              "PodResource endpoint. Broken down by server api version.",
                                              label, registry=registry)
        self.pr_requests_list = NamedCounter(pr + "requests_list", "Number of requests to the PodResource List "
                                             "endpoint. Broken down by server api version.", label, registry=registry)
        self.pr_requests_get_allocatable = NamedCounter(
            pr + "requests_get_allocatable", "Number of requests to the PodResource GetAllocatableResources "
            "endpoint. Broken down by server api version.", label, registry=registry
        )
        self.pr_requests_get = NamedCounter(pr + "requests_get", "Number of requests to the PodResource Get "
                                            "endpoint. Broken down by server api version.", label, registry=registry)
        self.pr_errors_list = NamedCounter(pr + "errors_list", "Number of requests to the PodResource List "
                                           "endpoint which returned error. Broken down by server api version.",
                                           label, registry=registry)
        self.pr_errors_get_allocatable = NamedCounter(
            pr + "errors_get_allocatable", "Number of requests to the PodResource GetAllocatableResources endpoint "
            "which returned error. Broken down by server api version.", label, registry=registry
        )
        self.pr_errors_get = NamedCounter(pr + "errors_get", "Number of requests to the PodResource Get endpoint "
                                          "which returned error. Broken down by server api version.",
                                          label, registry=registry)
        # Device plugins (kubelet names).
        self.device_plugin_registration = Counter(
            "kubelet_device_plugin_registration",
            "Cumulative number of device plugin registrations.",
            ["resource_name"],
            registry=registry,
        )
        self.device_plugin_alloc_duration = Histogram(
            "kubelet_device_plugin_alloc_duration_seconds",
            "Duration in seconds to serve a device plugin Allocation request.",
            ["resource_name"],
            registry=registry,
        )
        # DRA: each unary kubelet -> DRA plugin call (kubelet name; the health stream is not counted).
        self.dra_grpc_duration = Histogram(
            "dra_grpc_operations_duration_seconds",
            "Duration in seconds of the DRA gRPC operations",
            ["driver_name", "method_name", "grpc_status_code"],
            registry=registry,
        )
