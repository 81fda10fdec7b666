"""plugin_manager_total_plugins is read from the watcher's worlds at scrape time."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from nodeagent.pluginwatcher.metrics import PluginManagerCollector
from nodeagent.pluginwatcher.model import WorldSnapshot


def test_collector_reports_both_worlds_at_scrape_time(registry: CollectorRegistry) -> None:
    snap = WorldSnapshot(desired=(), actual=())
    registry.register(PluginManagerCollector(lambda: snap))
    assert registry.get_sample_value(
        "plugin_manager_total_plugins", {"socket_path": "/r/a.sock", "state": "desired_state_of_world"}
    ) is None
    snap = WorldSnapshot(desired=("/r/a.sock", "/r/b.sock"), actual=("/r/a.sock",))
    value = registry.get_sample_value
    assert value("plugin_manager_total_plugins", {"socket_path": "/r/a.sock", "state": "desired_state_of_world"}) == 1
    assert value("plugin_manager_total_plugins", {"socket_path": "/r/b.sock", "state": "desired_state_of_world"}) == 1
    assert value("plugin_manager_total_plugins", {"socket_path": "/r/a.sock", "state": "actual_state_of_world"}) == 1
    assert value("plugin_manager_total_plugins", {"socket_path": "/r/b.sock", "state": "actual_state_of_world"}) is None
    text = generate_latest(registry).decode()
    assert "# TYPE plugin_manager_total_plugins gauge" in text
