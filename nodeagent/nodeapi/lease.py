"""The kubelet's node lease controller: the node's heartbeat as a Lease in kube-node-lease.

Exists because the control plane decides a node is alive from its Lease (the node lifecycle
controller), not from its status: the kubelet renews `kube-node-lease/<node>` every
leaseDurationSeconds * 0.25 (10 s of 40 s by default), creating it when missing (after the
Node object was deleted, garbage collection takes the Lease with it, through its owner
reference to the Node). A failed renewal is retried with a backoff starting at 200 ms and
capped at 7 s, as upstream's controller does, so an API server that went away is noticed
again within seconds of coming back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from nodeagent.errors import Conflict, NodeAgentError, NotFound
from nodeagent.nodeapi.ports import LEASE_NAMESPACE, NodeAPI
from nodeagent.nodeapi.reachability import Unreachable
from nodeagent.util.backoff import Backoff
from nodeagent.util.clock import Clock
from nodeagent.util.timefmt import micro_time

logger = logging.getLogger(__name__)

RENEW_INTERVAL_FRACTION = 0.25
"""upstream nodelease.renewIntervalFraction"""
BACKOFF_START, BACKOFF_CAP = 0.2, 7.0
"""upstream: the first retry after 200 ms, doubling up to maxBackoff 7 s"""


def parse_time(text: object) -> float | None:
    """Seconds since the epoch of an RFC 3339 time (MicroTime or Time), None when absent or malformed."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def new_lease(node_name: str, node_uid: str, duration: int, now: float) -> dict[str, Any]:
    """The Lease the kubelet creates: holder and name the node, owned by the Node object."""
    meta: dict[str, Any] = {"name": node_name, "namespace": LEASE_NAMESPACE}
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid}]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {"holderIdentity": node_name, "leaseDurationSeconds": duration, "renewTime": micro_time(now)},
    }


class LeaseRenewer:
    """Renews the node's Lease every duration * 0.25 until cancelled (`run`)."""

    def __init__(self, api: NodeAPI, clock: Clock, node_name: str, duration: int) -> None:
        self._api = api
        self._clock = clock
        self._node = node_name
        self.duration = duration
        self.interval = duration * RENEW_INTERVAL_FRACTION
        self.renewed = 0  # renewals that reached the API (tests, status)
        self._latest: Mapping[str, Any] | None = None  # the Lease as the last write answered

    async def renew_once(self) -> None:
        """Create or renew the Lease once; raises the API's error. As upstream, the Lease the last
        write answered is renewed without a GET; when that fails (Conflict: someone else wrote it,
        NotFound: deleted), the Lease is read (or created) again."""
        now = self._clock.now()
        if self._latest is not None:
            try:
                self._latest = await self._api.update_lease(_renewed(self._latest, self._node, self.duration, now))
                self.renewed += 1
                return
            except (Conflict, NotFound):
                self._latest = None
        current = await self._api.get_lease(self._node)
        if current is None:
            node = await self._api.get_node(self._node)
            if node is None:
                raise NotFound(f'nodes "{self._node}" not found: the lease waits for the node\'s registration')
            uid = str((node.get("metadata") or {}).get("uid") or "")
            self._latest = await self._api.create_lease(new_lease(self._node, uid, self.duration, now))
        else:
            self._latest = await self._api.update_lease(_renewed(current, self._node, self.duration, now))
        self.renewed += 1

    async def run(self, first_delay: float = 0.0) -> None:
        """Renew until cancelled; `first_delay` spreads the renewals of many nodes over the interval."""
        failures = 0
        told = False  # a failure was logged above DEBUG: its end is logged too
        backoff = Backoff(BACKOFF_START, BACKOFF_CAP)
        if first_delay > 0:
            await self._clock.sleep(first_delay)
        while True:
            try:
                # bounded: a request stuck on a half-open connection must not stop the heartbeat
                # (asyncio.timeout, not wait_for: 3.11's wait_for loses a cancel that meets a finished renewal)
                async with asyncio.timeout(max(self.interval, 1.0) * 3):
                    await self.renew_once()
                if failures:
                    logger.log(logging.INFO if told else logging.DEBUG, "node lease renewed again node=%s api=%s "
                               "after %d failures", self._node, self._api.description, failures)
                failures, told = 0, False
                await self._clock.sleep(self.interval)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                failures += 1
                if not isinstance(err, (NodeAgentError, OSError)):
                    logger.exception("node lease renewal failed unexpectedly node=%s", self._node)
                wait = backoff.delay(failures)
                # unreachable: the client's reachability tracker logs the outage once
                loud = not isinstance(err, Unreachable) and (failures == 1 or failures % 10 == 0)
                told |= loud
                logger.log(logging.WARNING if loud else logging.DEBUG,
                           "failed to renew the node lease node=%s api=%s err=%s (retry in %.1fs)",
                           self._node, self._api.description, err, wait)
                await self._clock.sleep(wait)


def _renewed(current: Mapping[str, Any], node: str, duration: int, now: float) -> dict[str, Any]:
    spec = dict(current.get("spec") or {})
    spec.update({"holderIdentity": node, "leaseDurationSeconds": duration, "renewTime": micro_time(now)})
    meta = dict(current.get("metadata") or {})
    return {**current, "metadata": meta, "spec": spec}
