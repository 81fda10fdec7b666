"""Refusing a DRA driver's registration: the plugin watcher's handler, with the faults' refuse rules first.

A refused registration goes the kubelet's way for a plugin that fails validation: the executor
sends NotifyRegistrationStatus(plugin_registered=false, error="RegisterPlugin error -- plugin
validation failed with err: <text>") and retries the socket with backoff, so a driver that
survives the refusal registers once the rule is spent or cleared. Pure: plain data in and out.
"""

from __future__ import annotations

from nodeagent.faults.model import REFUSE_MESSAGE
from nodeagent.faults.rules import FaultSet
from nodeagent.pluginwatcher.model import PluginInfo
from nodeagent.pluginwatcher.ports import PluginHandler


class RefusingHandler:
    """A PluginHandler that asks the fault set before the real handler validates."""

    def __init__(self, inner: PluginHandler, faults: FaultSet) -> None:
        self._inner = inner
        self._faults = faults

    def validate(self, info: PluginInfo) -> str | None:
        rule = self._faults.refuses(info.name)
        if rule is not None:
            return f"{rule.message or REFUSE_MESSAGE}: {info.name}"
        return self._inner.validate(info)

    async def register(self, info: PluginInfo) -> None:
        await self._inner.register(info)

    async def deregister(self, name: str, endpoint: str) -> None:
        await self._inner.deregister(name, endpoint)
