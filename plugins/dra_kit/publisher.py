"""Keeps this driver's ResourceSlices published on this node through the Kubernetes API.

`SlicePublisher` is a small resourceslice controller for a node-local driver (one slice per
pool): an informer-like loop lists the driver's slices on the node (fieldSelector
spec.driver=D,spec.nodeName=N), then watches from the list's resourceVersion (bookmarks
included), resuming from the last one seen when the server ends a watch and listing again
on 410 Gone or after the API was unreachable; a sync loop plans each pool against that
cache (plugins.dra_kit.slices) and makes the calls, at once on every change and every
`interval` seconds anyway. So slices the daemon deletes at start (as the kubelet does) come
back by themselves, and a changed device list is published with the pool generation bumped.

What a write returns goes into the cache at once (the role of upstream's mutation cache), so
a sync that runs before the watch delivers the write's own event does not create twice.
The slices are owned by the Node (GET once; again after the API was unreachable, since a
restarted daemon may have a new Node). Like upstream the publisher never deletes its slices
when the driver stops: the next run, or the daemon's start, takes care of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from nodeagent.plugin_kit import NotFound, Unavailable, cancel_and_wait
from plugins.dra_kit.kube import APIPort, Gone, WatchEvent
from plugins.dra_kit.slices import (
    Create,
    Delete,
    Update,
    devices_fingerprint,
    field_selector,
    newer,
    plan_pool,
    pool_of,
)

logger = logging.getLogger(__name__)


def default_node_name() -> str:
    """The host name, lowercased: nodeagent's (and the kubelet's) default node name."""
    return socket.gethostname().lower()


class SlicePublisher:
    """Publishes `pools` ({pool: [v1 Device JSON]}) as this driver's slices on `node_name`."""

    def __init__(
        self,
        api: APIPort,
        driver: str,
        pools: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        node_name: str | None = None,
        interval: float = 2.0,
    ) -> None:
        self.api = api
        self.driver = driver
        self.node_name = node_name or default_node_name()
        self.interval = interval
        self.selector = field_selector(driver, self.node_name)
        self._pools = {p: [dict(d) for d in devs] for p, devs in pools.items()}
        self._stored: dict[str, tuple[str, list[dict[str, Any]]]] = {}  # pool -> (input fingerprint, as stored)
        self._cache: dict[str, dict[str, Any]] = {}  # slice name -> object, as last seen
        self._synced = False  # the cache holds a complete list
        self._node_uid: str | None = None
        self.resource_version = ""
        self.creates = self.updates = self.deletes = 0
        self.lists = 0
        self.published = asyncio.Event()  # set after the first complete sync
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def applied(self) -> int:
        """Slices written (created or updated) so far."""
        return self.creates + self.updates

    def cached(self) -> list[dict[str, Any]]:
        return list(self._cache.values())

    async def set_pools(self, pools: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """New device lists (a driver whose devices changed); published at once."""
        self._pools = {p: [dict(d) for d in devs] for p, devs in pools.items()}
        self._wake.set()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if not self._tasks:
            logger.info("publishing resource slices node=%s driver=%s", self.node_name, self.driver)
            self._tasks = [asyncio.ensure_future(self._reflect()), asyncio.ensure_future(self._sync_loop())]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(tasks)

    # ------------------------------------------------------------------ the informer

    async def relist(self) -> None:
        items, self.resource_version = await self.api.list_slices(self.selector)
        self.lists += 1
        self._cache = {str(o["metadata"]["name"]): o for o in items if (o.get("metadata") or {}).get("name")}
        self._synced = True
        self._wake.set()

    def observe(self, event: WatchEvent) -> None:
        """One watch event into the cache."""
        if event.resource_version:
            self.resource_version = event.resource_version
        if event.type == "BOOKMARK":
            return
        name = str((event.object.get("metadata") or {}).get("name", ""))
        if not name:
            return
        if event.type == "DELETED":
            self._cache.pop(name, None)
        elif event.type in ("ADDED", "MODIFIED"):
            known = self._cache.get(name)
            if known is None or not newer(known, event.object):
                self._cache[name] = event.object
        self._wake.set()

    async def _reflect(self) -> None:
        reported = False
        while True:
            try:
                if not self._synced:
                    await self.relist()
                async for event in self.api.watch_slices(self.selector, self.resource_version):
                    self.observe(event)
                reported = False  # the server ended the watch: resume from the last resourceVersion
            except asyncio.CancelledError:
                raise
            except Gone as err:
                logger.info("resource slice watch expired, listing again driver=%s err=%s", self.driver, err)
                self._synced = False
            except Exception as err:
                # Unreachable (the daemon restarting) or refused: list again once it answers; a new
                # daemon may have deleted our slices and made a new Node.
                if not reported:
                    logger.warning("cannot watch resource slices driver=%s err=%s", self.driver, err)
                    reported = True
                self._synced = False
                if isinstance(err, Unavailable):
                    self._node_uid = None
                await asyncio.sleep(self.interval)

    # ------------------------------------------------------------------ the sync

    async def _owner_uid(self) -> str:
        if self._node_uid is None:
            try:
                node = await self.api.get_node(self.node_name)
            except NotFound as err:
                raise NotFound(f'retrieve node "{self.node_name}": {err}') from None
            self._node_uid = str((node.get("metadata") or {}).get("uid", ""))
        return self._node_uid

    def _wanted(self, pool: str, devices: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        """The input's fingerprint, and the devices in the form the server stored them when we wrote this list."""
        fingerprint = devices_fingerprint(devices)
        stored = self._stored.get(pool)
        if stored is not None and stored[0] == fingerprint:
            return fingerprint, stored[1]
        return fingerprint, devices

    def _remember(self, pool: str, fingerprint: str, obj: dict[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name", ""))
        known = self._cache.get(name)
        if name and (known is None or not newer(known, obj)):
            self._cache[name] = obj
        # The server may normalize what we sent (quantities, defaults): compare against its form from
        # now on, or we would rewrite the slice forever (the controller does the same).
        self._stored[pool] = (fingerprint, [dict(d) for d in (obj.get("spec") or {}).get("devices") or ()])

    async def sync(self) -> int:
        """Make one pass over every pool; returns how many calls were made. Raises on the first failure."""
        if not self._synced:
            raise Unavailable("resource slices not listed yet")
        calls = 0
        by_pool: dict[str, list[dict[str, Any]]] = {}
        for obj in self._cache.values():
            by_pool.setdefault(pool_of(obj), []).append(obj)
        pools = self._pools  # set_pools replaces the dict: this pass works on one version
        for pool in sorted(set(pools) | set(by_pool)):
            fingerprint, devices = self._wanted(pool, pools[pool]) if pool in pools else ("", None)
            owner = await self._owner_uid() if devices is not None else ""
            for action in plan_pool(self.driver, self.node_name, owner, pool, devices, by_pool.get(pool, [])):
                calls += 1
                if isinstance(action, Create):
                    made = await self.api.create_slice(action.obj)
                    self.creates += 1
                    self._remember(pool, fingerprint, made)
                    logger.info("resource slice created name=%s pool=%s devices=%d generation=%s",
                                made.get("metadata", {}).get("name"), pool, len(action.obj["spec"]["devices"]),
                                action.obj["spec"]["pool"]["generation"])
                elif isinstance(action, Update):
                    made = await self.api.update_slice(action.obj)
                    self.updates += 1
                    self._remember(pool, fingerprint, made)
                    logger.info("resource slice updated name=%s pool=%s devices=%d generation=%s",
                                action.obj["metadata"].get("name"), pool, len(action.obj["spec"]["devices"]),
                                action.obj["spec"]["pool"]["generation"])
                elif isinstance(action, Delete):
                    try:
                        await self.api.delete_slice(action.name, uid=action.uid,
                                                    resource_version=action.resource_version)
                        self.deletes += 1
                        logger.info("resource slice deleted name=%s pool=%s", action.name, pool)
                    except NotFound:
                        pass  # gone already: what we wanted
                    self._cache.pop(action.name, None)
        self.published.set()
        return calls

    async def _sync_loop(self) -> None:
        reported = False
        while True:
            self._wake.clear()
            if self._synced:
                try:
                    await self.sync()
                    reported = False
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # a conflict or the API going away: the watch brings news
                    if not reported:
                        logger.warning("cannot publish resource slices driver=%s err=%s", self.driver, err)
                        reported = True
                    if isinstance(err, Unavailable):
                        self._node_uid = None
            # asyncio.timeout, not wait_for: wait_for may swallow a cancel that lands as it times out
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval):
                    await self._wake.wait()
