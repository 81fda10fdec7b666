"""plugin_manager_total_plugins, collected at scrape time from the watcher's worlds.

As the kubelet's pluginmanager/metrics: one gauge series per registration socket and
world (`desired_state_of_world` = seen in the directory, `actual_state_of_world` = went
through registration), value = number of plugins at that socket (1). Nothing mirrored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from nodeagent.pluginwatcher.model import WorldSnapshot

DESIRED = "desired_state_of_world"
ACTUAL = "actual_state_of_world"


class PluginManagerCollector:
    def __init__(self, snapshot: Callable[[], WorldSnapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "plugin_manager_total_plugins", "Number of plugins in Plugin Manager", labels=["socket_path", "state"]
        )
        snap = self._snapshot()
        for state, paths in ((DESIRED, snap.desired), (ACTUAL, snap.actual)):
            counts: dict[str, int] = {}
            for path in paths:
                counts[path] = counts.get(path, 0) + 1
            for path, count in sorted(counts.items()):
                family.add_metric([path, state], float(count))
        yield family

    def describe(self) -> Iterator[Metric]:
        # Described empty so registering does not call collect() early (the watcher may not be ready).
        return iter(())
