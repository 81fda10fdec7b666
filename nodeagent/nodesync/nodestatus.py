"""Node registration and node status: the local Node object kept current in the API.

The kubelet's pkg/kubelet/kubelet_node_status.go (registerWithAPIServer, updateNodeStatus,
tryUpdateNodeStatus). The Node (labels, capacity, allocatable, conditions, addresses, nodeInfo)
is computed elsewhere (node_object, the kubelet's nodestatus setters); this registers it, writes
its status when it changed, and every `status_interval` (nodeStatusUpdateFrequency) reads it back
and registers it again if it was deleted under the running node. Written conditions carry
lastHeartbeatTime; an unchanged status is written again every `report_interval`
(nodeStatusReportFrequency), as the kubelet does when it also renews a Lease. The kubelet's own
labels are set when they differ; labels added by others stay.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.errors import NodeAgentError
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.nodeapi.reachability import Unreachable
from nodeagent.store.meta import rfc3339
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock

logger = logging.getLogger(__name__)

NODE_STATUS_UPDATE_FREQUENCY = 10.0
"""The kubelet's nodeStatusUpdateFrequency default: how often the Node object is checked."""
NODE_STATUS_REPORT_FREQUENCY = 300.0
"""The kubelet's nodeStatusReportFrequency default: an unchanged status is posted again after 5 min."""


def _labels(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return dict((meta.get("labels") or {}) if isinstance(meta, Mapping) else {})


def _without_heartbeats(status: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Node status as the node computes it: conditions without lastHeartbeatTime."""
    conditions = status.get("conditions")
    if not conditions:
        return status
    return {**status, "conditions": [{k: v for k, v in c.items() if k != "lastHeartbeatTime"}
                                     for c in conditions]}


class NodeStatusUpdater:
    """Registers the Node and keeps its status current; backs off while the API is out of reach."""

    def __init__(
        self,
        *,
        node_name: str,
        api: NodeAPI,
        node_object: Callable[[], Mapping[str, Any]],
        clock: Clock,
        interval: float,
        status_interval: float = NODE_STATUS_UPDATE_FREQUENCY,
        report_interval: float = NODE_STATUS_REPORT_FREQUENCY,
        node_inputs: Callable[[], object] | None = None,
    ) -> None:
        self._node = node_name
        self._api = api
        self._node_object = node_object
        self._clock = clock
        self._status_interval = status_interval
        self._report_interval = report_interval  # the kubelet's nodeStatusReportFrequency
        self._published_node: Mapping[str, Any] | None = None
        self._node_checked = float("-inf")
        self._registered = False
        self._reported = float("-inf")  # monotonic time the status was last written
        # After a failed write the Node is tried again with a backoff (the pass interval doubling up
        # to status_interval), and the outage is logged once: every 50 ms pass retried and logged,
        # and each failure retired the API client, 20 times a second while the API server was away.
        self._backoff = Backoff(interval * 2, status_interval)
        self._publish_failures = 0
        self._failure_told = False  # the outage's first failure was logged above DEBUG
        self._publish_retry_at = float("-inf")
        # What the Node object is computed from (cheaper to get and compare than the object): a
        # check whose inputs equal those of a check that found the Node published builds nothing.
        self._node_inputs = node_inputs
        self._clean_inputs: object = None

    def due(self) -> bool:
        """Whether the Node is to be written or checked (a changed Node, or an interval passed)."""
        now = self._clock.monotonic()
        if now - self._node_checked >= self._status_interval or now - self._reported >= self._report_interval:
            return True
        inputs = self._node_inputs() if self._node_inputs is not None else None
        if inputs is not None and inputs == self._clean_inputs:
            return False
        if self._node_object() != self._published_node:
            return True
        self._clean_inputs = inputs
        return False

    async def publish(self) -> None:
        """Write the Node when it changed; every `status_interval`, read it back and register it
        again if it was deleted (or write the status again if someone else changed it). Written
        conditions carry lastHeartbeatTime; an unchanged status is written again (a heartbeat)
        every `report_interval` (nodeStatusReportFrequency), as the kubelet does when it also renews a Lease."""
        node = self._node_object()
        now = self._clock.monotonic()
        if now < self._publish_retry_at:
            return
        if now - self._node_checked >= self._status_interval:
            self._published_node, self._node_checked = None, now
        if node == self._published_node and now - self._reported < self._report_interval:
            return
        try:
            current = await self._api.get_node(self._node)
            status = node.get("status") or {}
            if current is None:
                await self._api.create_node({**node, "status": self._heartbeat(status)})
                logger.info("node %s node=%s api=%s", "registered again (the Node object was deleted)"
                            if self._registered else "registered", self._node, self._api.description)
                self._published_node, self._registered, self._reported = node, True, now
                self._published_again()
                return
            # the kubelet's labels are set when they differ; labels added by others stay
            want_labels = _labels(node)
            have_labels = _labels(current)
            patch = {k: v for k, v in want_labels.items() if have_labels.get(k) != v}
            if patch:
                await self._api.patch_node_labels(self._node, patch)
            if (_without_heartbeats(current.get("status") or {}) != status
                    or now - self._reported >= self._report_interval):
                await self._api.update_node_status(self._node, self._heartbeat(status))
                self._reported = now
            self._published_node, self._registered = node, True
        except NodeAgentError as err:
            self._publish_failures += 1
            # the pass interval doubled per failure: 2, 4, 8... passes, up to status_interval
            self._publish_retry_at = now + self._backoff.delay(self._publish_failures)
            if self._publish_failures == 1:
                # unreachable: the client's reachability tracker logs the outage once
                self._failure_told = not isinstance(err, Unreachable)
                logger.log(logging.WARNING if self._failure_told else logging.DEBUG,
                           "node status not published node=%s api=%s err=%s (retrying with backoff)",
                           self._node, self._api.description, err)
            return
        self._published_again()

    def _published_again(self) -> None:
        """After an outage: say so once, and write without waiting from now on."""
        if self._publish_failures:
            logger.log(logging.INFO if self._failure_told else logging.DEBUG,
                       "node status published again node=%s api=%s after=%d failures", self._node,
                       self._api.description, self._publish_failures)
            self._publish_failures, self._publish_retry_at = 0, float("-inf")

    def _heartbeat(self, status: Mapping[str, Any]) -> dict[str, Any]:
        stamp = rfc3339(self._clock.now())
        conditions = [{**c, "lastHeartbeatTime": stamp} for c in status.get("conditions") or []]
        return {**status, "conditions": conditions} if conditions else dict(status)
