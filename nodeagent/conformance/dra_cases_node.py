"""The DRA driver suite, node side: ResourceSlices, device health, kubelet and driver restarts.

Slices are checked with nodeagent's own API validation (objects.resource) plus the pool rules
the scheduler relies on (one generation complete: resourceSliceCount slices). A kubelet
restart is simulated as the kubelet does it: the node's slices of the driver deleted, the
registration socket registered anew. The restart cases that recreate directories or restart
the driver run only where the suite owns them (--driver-command).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

from nodeagent.conformance.dra_harness import DRAContext, wait_until
from nodeagent.conformance.model import Case, check, close_stream, fail, skip
from nodeagent.conformance.process import expand, run_command
from nodeagent.dra.ports import HEALTHY, UNHEALTHY, UNKNOWN, DeviceHealthUpdate, DriverCallError
from nodeagent.dra.registry import PLUGIN_TYPE, choose_health_service, choose_plugin_service
from nodeagent.errors import NodeAgentError
from nodeagent.objects.resource.validation import validate
from nodeagent.pluginwatcher.executor import RegistrationExecutor

SLICES = frozenset({"registration", "api"})
HEALTH = frozenset({"registration", "api", "health"})
DEFAULT_HEALTH_TIMEOUT = 30.0
REPUBLISH_WAIT = 75.0  # the kubelet's, when a device sends 0


async def published(ctx: DRAContext) -> None:
    items = await ctx.published()
    for s in items:
        check(s["spec"].get("nodeName") == ctx.opts.node_name,
              f"slice {s['metadata']['name']} is not for node {ctx.opts.node_name}")


async def well_formed(ctx: DRAContext) -> None:
    for s in await ctx.published():
        name = s["metadata"]["name"]
        try:
            validate("ResourceSlice", s)
        except NodeAgentError as err:
            fail(f"ResourceSlice {name} is not valid: {err}")
        check(s["spec"]["driver"] == ctx.driver, f"slice {name} names driver {s['spec']['driver']!r}, "
                                                 f"registered as {ctx.driver!r}")
        owners = [o.get("kind") for o in s["metadata"].get("ownerReferences") or ()]
        check("Node" in owners, f"slice {name} is not owned by its Node (ownerReferences kinds {owners}): it "
                                "would outlive the node")


def _pools(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    pools: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in items:
        pools[s["spec"]["pool"]["name"]].append(s)
    return pools


async def pool_consistent(ctx: DRAContext) -> None:
    async def complete() -> list[dict[str, Any]] | None:
        items = await ctx.slices()
        for slices in _pools(items).values():
            newest = max(int(s["spec"]["pool"]["generation"]) for s in slices)
            current = [s for s in slices if int(s["spec"]["pool"]["generation"]) == newest]
            counts = {int(s["spec"]["pool"]["resourceSliceCount"]) for s in current}
            if len(counts) != 1 or len(current) != counts.pop():
                return None
        return items or None
    try:
        items = await wait_until(complete, ctx.opts.wait, "a complete pool")
    except AssertionError:
        items = await ctx.slices()
        detail = {p: [(s["metadata"]["name"], s["spec"]["pool"]) for s in v] for p, v in _pools(items).items()}
        fail(f"pool generation and resourceSliceCount never agreed with the slices published: {detail}")
    for pool, slices in _pools(items).items():
        names = [d["name"] for s in slices for d in s["spec"].get("devices") or ()]
        dupes = sorted({n for n in names if names.count(n) > 1})
        check(not dupes, f"pool {pool} publishes devices {dupes} more than once")


async def republished(ctx: DRAContext) -> None:
    before = await ctx.published()
    gone = await ctx.kube.delete_slices(ctx.driver, ctx.opts.node_name)
    check(gone, f"no slice to delete (had {len(before)})")
    await ctx.register()
    # the upstream helper's ResourceSlice controller waits its SyncDelay (30 s) before syncing a pool again
    await ctx.published(max(ctx.opts.wait, REPUBLISH_WAIT))


async def _health(ctx: DRAContext) -> tuple[AsyncIterator[list[DeviceHealthUpdate]], Any]:
    info = ctx.info
    assert info is not None
    client = ctx.client_for(choose_plugin_service(info.supported_versions))
    return client.watch_health(choose_health_service(info.supported_versions)), client


async def _known(ctx: DRAContext) -> set[tuple[str, str]]:
    return {(s["spec"]["pool"]["name"], d["name"]) for s in await ctx.published() for d in s["spec"].get("devices")
            or ()}


async def health_known(ctx: DRAContext) -> None:
    known = await _known(ctx)
    stream, client = await _health(ctx)
    try:
        first = await asyncio.wait_for(anext(stream), 10.0)
    except TimeoutError:
        fail("NodeWatchResources sent no device list within 10s")
    finally:
        await close_stream(stream)
        await client.close()
    unknown = sorted({(u.pool_name, u.device_name) for u in first} - known)
    check(not unknown, f"health reported for devices not in the driver's slices: {unknown}")
    bad = [(u.device_name, u.health) for u in first if u.health not in (HEALTHY, UNHEALTHY, UNKNOWN)]
    check(not bad, f"invalid health values: {bad}")
    negative = [(u.device_name, u.timeout_seconds) for u in first if u.timeout_seconds < 0]
    check(not negative, f"negative health_check_timeout_seconds: {negative}")
    future = [u.device_name for u in first if u.last_updated > time.time() + 60]
    check(not future, f"last_updated_time in the future for {future}")


async def health_changes(ctx: DRAContext) -> None:
    assert ctx.opts.set_health_command
    (pool, device), = await ctx.devices(1)
    stream, client = await _health(ctx)
    try:
        await asyncio.wait_for(anext(stream), 10.0)
        for want in (UNHEALTHY, HEALTHY):
            argv = expand(ctx.opts.set_health_command, {**ctx.placeholders, "pool": pool, "device": device,
                                                                  "health": want})
            problem = await run_command(argv)
            check(not problem, f"--set-health-command: {problem}")
            deadline = time.monotonic() + 10.0
            while True:
                msg = await asyncio.wait_for(anext(stream), max(0.1, deadline - time.monotonic()))
                if any((u.pool_name, u.device_name, u.health) == (pool, device, want) for u in msg):
                    break
    except TimeoutError:
        fail(f"device {pool}/{device} set {want} but no health message said so within 10s")
    finally:
        await close_stream(stream)
        await client.close()


async def health_resend(ctx: DRAContext) -> None:
    stream, client = await _health(ctx)
    try:
        first = await asyncio.wait_for(anext(stream), 10.0)
        check(first, "the first health message lists no device")
        limit = min(u.timeout_seconds if u.timeout_seconds > 0 else DEFAULT_HEALTH_TIMEOUT for u in first)
        if limit > ctx.opts.wait:
            skip(f"devices time out after {limit:g}s, longer than this case may wait ({ctx.opts.wait:g}s, --wait)")
        try:
            await asyncio.wait_for(anext(stream), limit)
        except TimeoutError:
            fail(f"no health message within the devices' {limit:g}s health-check timeout: the kubelet would mark "
                 "every device Unknown")
    finally:
        await close_stream(stream)
        await client.close()


async def kubelet_restart(ctx: DRAContext) -> None:
    # A new kubelet walks plugins_registry and registers the sockets it finds: the driver must take a
    # second registration on the same socket (a fresh registration executor, as a new process has).
    ctx.executor = RegistrationExecutor({PLUGIN_TYPE: ctx.handler})
    before = ctx.info
    info = await ctx.register()
    check(before is None or info.name == before.name, f"after a kubelet restart GetInfo names {info.name!r}")
    try:
        await ctx.client.unprepare([])
    except DriverCallError as err:
        fail(f"after a kubelet restart the endpoint {info.endpoint} no longer answers: {err}")


async def survive_driver_restart(ctx: DRAContext) -> None:
    assert ctx.process is not None
    claim = await ctx.new_claim(await ctx.devices(1))
    before = await ctx.prepare_one(claim)
    check(not before.error, f"NodePrepareResources failed: {before.error}")
    await ctx.process.restart()
    await ctx.register()
    try:
        after = await ctx.prepare_one(claim)
    except Exception as err:
        fail(f"after a driver restart, NodePrepareResources of a prepared claim failed: {err}{ctx.diagnostics()}")
    key = sorted((d.pool_name, d.device_name, tuple(sorted(d.cdi_device_ids))) for d in before.devices)
    again = sorted((d.pool_name, d.device_name, tuple(sorted(d.cdi_device_ids))) for d in after.devices)
    check(not after.error and key == again,
          f"a prepared claim did not survive a driver restart: before {key}, after {again or after.error}")


CASES: list[Case[DRAContext]] = [
    Case("slices/published", "the driver publishes ResourceSlices for the node", published, SLICES),
    Case("slices/well-formed", "every slice passes the API's validation, names the driver and is owned by the Node",
         well_formed, SLICES),
    Case("slices/pool-consistent", "each pool's newest generation has resourceSliceCount slices, devices unique",
         pool_consistent, SLICES),
    Case("slices/republished-after-kubelet-restart", "slices deleted by a restarting kubelet are published again "
         "after the driver re-registers", republished, SLICES,
         timeout=REPUBLISH_WAIT + 15),
    Case("health/known-devices", "the health stream opens and reports only published devices with valid values",
         health_known, HEALTH),
    Case("health/reports-changes", "a device's health change is streamed", health_changes,
         HEALTH | {"set-health"}),
    Case("health/resend-within-timeout", "the device list is re-sent within the devices' health-check timeout",
         health_resend, HEALTH),
    Case("restart/kubelet-restart", "a restarted kubelet registers the driver's socket again and is served",
         kubelet_restart, frozenset({"registration"})),
    Case("restart/prepared-claims-survive", "a claim prepared before a driver restart is still prepared after it",
         survive_driver_restart, frozenset({"registration", "api", "driver-command"})),
]
