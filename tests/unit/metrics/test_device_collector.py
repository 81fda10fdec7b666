"""Device collector: devices by health per resource, read from the figures at scrape time."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from nodeagent.metrics.collectors import DeviceFigures, register_device_collector

GPU = "example.com/gpu"


def test_devices_by_health_follow_the_figures(registry: CollectorRegistry) -> None:
    figures = [DeviceFigures(GPU, healthy=4, unhealthy=0, allocated=2, registered=True)]
    register_device_collector(registry, lambda: figures)
    get = registry.get_sample_value
    assert get("nodeagent_devices", {"resource_name": GPU, "health": "Healthy"}) == 4
    assert get("nodeagent_devices", {"resource_name": GPU, "health": "Unhealthy"}) == 0
    assert get("nodeagent_devices_allocated", {"resource_name": GPU}) == 2
    assert get("nodeagent_device_plugin_registered", {"resource_name": GPU}) == 1
    figures[:] = [DeviceFigures(GPU, healthy=0, unhealthy=4, allocated=2, registered=False),
                  DeviceFigures("example.com/nic", healthy=1, unhealthy=1, allocated=0, registered=True)]
    assert get("nodeagent_devices", {"resource_name": GPU, "health": "Healthy"}) == 0
    assert get("nodeagent_devices", {"resource_name": GPU, "health": "Unhealthy"}) == 4
    assert get("nodeagent_device_plugin_registered", {"resource_name": GPU}) == 0
    assert get("nodeagent_devices", {"resource_name": "example.com/nic", "health": "Unhealthy"}) == 1
    figures.clear()
    assert get("nodeagent_devices", {"resource_name": GPU, "health": "Healthy"}) is None


def test_failing_figures_leave_device_metrics_out(registry: CollectorRegistry) -> None:
    def broken() -> list[DeviceFigures]:
        raise RuntimeError("boom")

    register_device_collector(registry, broken)
    assert b"nodeagent_devices" not in generate_latest(registry)
