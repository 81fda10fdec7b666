"""Counters and histograms updated by adapters and managers, on an explicit registry.

One `Instruments` object per daemon, created in nodeagent/wiring on the daemon's own
CollectorRegistry (never the global REGISTRY) and passed down. Gauges that mirror
state are not here: they are collected at scrape time (metrics/collectors.py).
Names follow the kubelet's where the kubelet has the metric.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram


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
        self.evictions = Counter(
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
        # Pod resources (kubelet names; the prometheus client adds _total to counters).
        pr = "kubelet_pod_resources_endpoint_"
        label = ["server_api_version"]
        self.pr_requests_total = Counter(pr + "requests", "Requests to the pod resources endpoint.",
                                         label, registry=registry)
        self.pr_requests_list = Counter(pr + "requests_list", "List requests.", label, registry=registry)
        self.pr_requests_get_allocatable = Counter(
            pr + "requests_get_allocatable", "GetAllocatableResources requests.", label, registry=registry
        )
        self.pr_requests_get = Counter(pr + "requests_get", "Get requests.", label, registry=registry)
        self.pr_errors_list = Counter(pr + "errors_list", "List errors.", label, registry=registry)
        self.pr_errors_get_allocatable = Counter(
            pr + "errors_get_allocatable", "GetAllocatableResources errors.", label, registry=registry
        )
        self.pr_errors_get = Counter(pr + "errors_get", "Get errors.", label, registry=registry)
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
