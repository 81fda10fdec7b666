"""NetdevDriver: the kit backend that turns network links into DRA devices and back.

It follows the links of its namespace (and of every per-claim namespace it made) through
the Netlink port's event streams, recomputes the device inventory on each event, and pushes
the result two ways: device health to the kit's HealthBoard (so NodeWatchResources streams
see an operstate change as it happens) and the device list to the kit's SlicePublisher.
Prepare and unprepare go through the kit's ClaimFlow (idempotent, checkpointed); the
driver's part is moving links into the claim's namespace and back (state.py records what
moved). All kernel access goes through the Netlink port, so tests run it on FakeNetlink.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from nodeagent.plugin_kit import Conflict, FailedPrecondition, NodeAgentError, NotFound, cancel_and_wait
from nodeagent.plugin_kit.netlink import LINK_DEL, Link, LinkEvent, Netlink, NetnsNotFound
from plugins.dra_kit.cdi import CDIDevice, CDIWriter
from plugins.dra_kit.claims import ClaimAllocation, ClaimReader
from plugins.dra_kit.flow import ClaimFlow, PreparedStore
from plugins.dra_kit.health import HealthBoard
from plugins.dra_kit.kube import APIPort
from plugins.dra_kit.model import AllocatedDevice, ClaimRef, DeviceHealth, PreparedDevice, PrepareResult
from plugins.dra_kit.publisher import SlicePublisher
from plugins.netdev_driver.devices import (
    DeviceView,
    cdi_env,
    claim_uid_of,
    find_device,
    inventory,
    pod_netns_name,
    slice_device,
)
from plugins.netdev_driver.profile import Profile
from plugins.netdev_driver.state import ClaimLinks, LinkStore, MovedLink

logger = logging.getLogger(__name__)

WATCH_RETRY = 1.0  # seconds before a failed link watch is opened again


class NetdevDriver:
    """DriverBackend of the netdev driver (prepare / unprepare / health_board) plus its loops.

    `state_dir` holds the kit's prepared-claims checkpoint and links.json; None keeps both in
    memory (tests). `cdi` None: prepared devices carry no CDI ids. `api` is the Kubernetes API
    (the caller closes it); `node_name` None: the host name.
    """

    def __init__(
        self,
        profile: Profile,
        netlink: Netlink,
        api: APIPort,
        *,
        state_dir: Path | None = None,
        cdi: CDIWriter | None = None,
        node_name: str | None = None,
    ) -> None:
        self.profile = profile
        self.netlink = netlink
        self.driver = profile.driver_name
        self.pool = profile.pool
        self.cdi = cdi
        self.board = HealthBoard(resend=profile.health_resend_seconds)
        self.publisher = SlicePublisher(api, self.driver, {self.pool: []}, node_name=node_name,
                                        interval=profile.publish_interval_seconds)
        self.links = LinkStore(state_dir / "links.json" if state_dir else None)
        self.flow = ClaimFlow(
            self.driver,
            ClaimReader(api, self.driver),
            PreparedStore(state_dir / "prepared.json" if state_dir else None),
            self._prepare_devices,
            self._release_devices,
        )
        self._home: dict[str, Link] = {}
        self._pods: dict[str, dict[str, Link]] = {}
        self._watchers: dict[str | None, asyncio.Task[None]] = {}
        self._views: list[DeviceView] = []
        self._published: list[dict[str, object]] | None = None
        self._lock = asyncio.Lock()  # prepare/release touch the shared inventory one at a time
        self.changed = asyncio.Event()  # set after every inventory refresh (tests wait on it)

    # ------------------------------------------------------------------ DriverBackend

    async def prepare(self, claims: Sequence[ClaimRef]) -> Mapping[str, PrepareResult]:
        return await self.flow.prepare(claims)

    async def unprepare(self, claims: Sequence[ClaimRef]) -> Mapping[str, str]:
        return await self.flow.unprepare(claims)

    def health_board(self) -> HealthBoard | None:
        return self.board

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """List the links, follow them (and the claims' namespaces), publish; raises NetworkError."""
        self._home = {link.ifname: link for link in await self.netlink.list_links()}
        self._start_watch(None)
        existing = set(await self.netlink.list_netns())
        for entry in self.links.all():
            if entry.netns in existing:
                self._start_watch(entry.netns)
        known = {e.netns for e in self.links.all()}
        for name in sorted(existing - known):
            uid = claim_uid_of(self.profile.pod_netns_prefix, name)
            if uid is not None:
                logger.warning("namespace of an unknown claim, left for unprepare netns=%s claim_uid=%s", name, uid)
        await self._refresh()
        self.publisher.start()
        logger.info("netdev driver started driver=%s pool=%s netns=%s devices=%d",
                    self.driver, self.pool, self.netlink.netns or "host", len(self._views))

    async def stop(self) -> None:
        await self.publisher.stop()
        for key in list(self._watchers):
            await self._stop_watch(key)
        await self.netlink.close()

    def devices(self) -> list[DeviceView]:
        """The published devices as of the last event."""
        return list(self._views)

    # ------------------------------------------------------------------ link events

    def _start_watch(self, netns: str | None) -> None:
        if netns not in self._watchers:
            self._watchers[netns] = asyncio.ensure_future(self._watch(netns))

    async def _stop_watch(self, netns: str | None) -> None:
        await cancel_and_wait([self._watchers.pop(netns, None)])

    async def _watch(self, netns: str | None) -> None:
        """Apply every link event of `netns` (None: ours); reopen after a failure."""
        while True:
            try:
                if netns is not None:
                    self._pods[netns] = {}
                async for event in self.netlink.watch_links(netns):
                    self._apply(netns, event)
                    await self._refresh()
            except asyncio.CancelledError:
                raise
            except NetnsNotFound:
                if netns is not None:
                    logger.info("claim namespace gone, watch ends netns=%s", netns)
                    self._pods.pop(netns, None)
                    self._watchers.pop(netns, None)
                    await self._refresh()
                    return
                logger.error("driver namespace missing, retrying netns=%s", self.netlink.netns)
            except NodeAgentError as err:
                logger.warning("link watch failed, retrying netns=%s err=%s", netns or "own", err)
            await asyncio.sleep(WATCH_RETRY)

    def _apply(self, netns: str | None, event: LinkEvent) -> None:
        table = self._home if netns is None else self._pods.setdefault(netns, {})
        if event.action == LINK_DEL:
            current = table.get(event.link.ifname)
            if current is not None and (current.index == event.link.index or not event.link.index):
                del table[event.link.ifname]
        else:
            table[event.link.ifname] = event.link

    async def _refresh(self) -> None:
        """Recompute the inventory; push health changes to the board and device changes to the slice."""
        moved = {m.ifname: (entry.netns, m.link) for entry in self.links.all() for m in entry.links}
        views = inventory(self.profile.links, self._home, moved, self._pods)
        self._views = views
        health = [DeviceHealth(self.pool, v.name, v.health, self.profile.health_timeout_seconds, v.message)
                  for v in views]
        old = {d.key: d for d in self.board.snapshot()}
        if set(old) != {d.key for d in health}:
            await self.board.replace(health)
        else:
            for d in health:
                if old[d.key].health != d.health or old[d.key].message != d.message:
                    await self.board.set(d.pool, d.device, d.health, d.message)
        published: list[dict[str, object]] = [slice_device(v.name, v.link) for v in views]
        if published != self._published:
            self._published = published
            await self.publisher.set_pools({self.pool: published})
        self.changed.set()

    # ------------------------------------------------------------------ prepare / release

    async def _prepare_devices(self, claim: ClaimRef, allocation: ClaimAllocation) -> Sequence[PreparedDevice]:
        async with self._lock:
            ours = [d for d in allocation.devices if d.pool == self.pool]
            stray = [f"{d.pool}/{d.device}" for d in allocation.devices if d.pool != self.pool]
            if stray:
                raise FailedPrecondition(
                    f"claim {claim}: devices {', '.join(stray)} are not in pool {self.pool} of driver {self.driver}"
                )
            if not self.profile.move_to_pod_netns:
                return self._answer(claim, ours, None, [self._view(claim, d.device).link.ifname for d in ours])
            netns = pod_netns_name(self.profile.pod_netns_prefix, claim.uid)
            entry = self._intent(claim, netns, [d.device for d in ours])
            try:
                await self._move_in(entry)
            except NodeAgentError:
                logger.warning("prepare failed, moving links back claim=%s netns=%s", claim, netns)
                with contextlib.suppress(NodeAgentError):
                    await self._move_out(claim.uid, netns)
                raise
            return self._answer(claim, ours, netns, entry.ifnames())

    def _view(self, claim: ClaimRef, device: str) -> DeviceView:
        view = find_device(self._views, device)
        if view is None:
            raise NotFound(f"claim {claim}: device {self.pool}/{device} is not a link of driver {self.driver}")
        return view

    def _intent(self, claim: ClaimRef, netns: str, devices: Sequence[str]) -> ClaimLinks:
        """The claim's links.json entry, written before anything moves (a retry reuses it)."""
        known = self.links.get(claim.uid)
        have = {m.device: m for m in known.links} if known else {}
        moved: list[MovedLink] = []
        for device in devices:
            if device in have:
                moved.append(have[device])
                continue
            view = self._view(claim, device)
            owner = next((e.uid for e in self.links.all() if e.uid != claim.uid and device in
                          {m.device for m in e.links}), None)
            if owner is not None:
                raise Conflict(f"claim {claim}: device {self.pool}/{device} is in use by claim {owner}")
            moved.append(MovedLink(device, view.link.ifname, view.link.admin_up, view.link))
        entry = ClaimLinks(claim.uid, netns, tuple(moved))
        self.links.put(entry)
        return entry

    async def _move_in(self, entry: ClaimLinks) -> None:
        if entry.netns not in await self.netlink.list_netns():
            await self.netlink.create_netns(entry.netns)
        self._start_watch(entry.netns)
        there = {link.ifname for link in await self.netlink.list_links(entry.netns)}
        for m in entry.links:
            if m.ifname not in there:  # a repeated prepare finds it moved already
                await self.netlink.move_link(m.ifname, dst=entry.netns)
                logger.info("link moved into claim namespace ifname=%s netns=%s", m.ifname, entry.netns)
            if self.profile.up_in_pod:
                await self.netlink.set_link_up(m.ifname, True, netns=entry.netns)
        await self._refresh()

    def _answer(self, claim: ClaimRef, devices: Sequence[AllocatedDevice], netns: str | None,
                ifnames: Sequence[str]) -> list[PreparedDevice]:
        """One PreparedDevice per allocated device; the claim's CDI spec when CDI is on."""
        out: list[PreparedDevice] = []
        for alloc in devices:
            ids: tuple[str, ...] = ()
            if self.cdi is not None:
                ids = (self.cdi.device_id(self.cdi.device_name(claim.uid, alloc.device)),)
            out.append(PreparedDevice((alloc.request,), self.pool, alloc.device, ids, alloc.share_id))
        if self.cdi is not None and out:
            self.cdi.write(claim.uid, [
                CDIDevice(self.cdi.device_name(claim.uid, d.device_name), env=cdi_env(netns, [ifname]))
                for d, ifname in zip(out, ifnames, strict=True)
            ], common_env=cdi_env(netns, ifnames))
        return out

    async def _release_devices(self, claim: ClaimRef, devices: Sequence[PreparedDevice]) -> None:
        async with self._lock:
            if self.profile.move_to_pod_netns:
                await self._move_out(claim.uid, pod_netns_name(self.profile.pod_netns_prefix, claim.uid))
            if self.cdi is not None:
                self.cdi.remove(claim.uid)

    async def _move_out(self, uid: str, netns: str) -> None:
        """Every link of the claim's namespace back home (admin state restored), then the namespace goes."""
        entry = self.links.get(uid)
        if netns in await self.netlink.list_netns():
            restore = {m.ifname: m.admin_up for m in entry.links} if entry else {}
            for link in await self.netlink.list_links(netns):
                if link.ifname == "lo":
                    continue
                await self.netlink.move_link(link.ifname, src=netns)
                if restore.get(link.ifname, link.admin_up):
                    await self.netlink.set_link_up(link.ifname, True)
                logger.info("link moved back ifname=%s from_netns=%s", link.ifname, netns)
            await self._stop_watch(netns)
            self._pods.pop(netns, None)
            await self.netlink.delete_netns(netns)
        self.links.delete(uid)
        await self._refresh()
