"""What the plugin watcher needs from a plugin-type handler (DRAPlugin, DevicePlugin, CSIPlugin).

The same three steps as the kubelet's cache.PluginHandler: validate, register, deregister.
Plain data in, no gRPC: the executor has already converted PluginInfo.
"""

from __future__ import annotations

from typing import Protocol

from nodeagent.pluginwatcher.model import PluginInfo


class PluginHandler(Protocol):
    def validate(self, info: PluginInfo) -> str | None:
        """None when the plugin is acceptable, else the error text sent back to it."""
        ...

    async def register(self, info: PluginInfo) -> None:
        """Take the plugin in; raise NodeAgentError (its text goes back to the plugin) on failure."""
        ...

    async def deregister(self, name: str, endpoint: str) -> None:
        """The plugin's registration socket is gone."""
        ...
