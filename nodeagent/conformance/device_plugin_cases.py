"""The device plugin suite: Register, ListAndWatch, GetPreferredAllocation, Allocate, PreStartContainer.

Each case states one thing the kubelet's device manager (pkg/kubelet/cm/devicemanager)
relies on and fails with what the plugin did instead. A health change is only observable
with --set-health-command; without it the cases that need one are skipped.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

import grpc

from nodeagent.apis.deviceplugin.v1beta1 import api_pb2
from nodeagent.conformance.device_plugin_harness import DPContext
from nodeagent.conformance.model import Case, check, close_stream, fail, skip
from nodeagent.conformance.process import expand, run_command
from nodeagent.devices.model import Device
from nodeagent.errors import ValidationError
from nodeagent.store.validation import check_qualified_name

HEALTHY, UNHEALTHY = "Healthy", "Unhealthy"
REG = frozenset({"registration"})
_CDI_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9_-]*=[A-Za-z0-9][A-Za-z0-9_.:-]*$")
_PERMISSIONS = re.compile(r"^[rwm]{1,3}$")


async def _first_list(ctx: DPContext) -> list[Device]:
    conn = await ctx.conn()
    stream = conn.list_and_watch()
    try:
        return await asyncio.wait_for(anext(stream), 10.0)
    except TimeoutError:
        fail("ListAndWatch sent no device list within 10s of opening the stream")
    except StopAsyncIteration:
        fail("ListAndWatch ended without sending the device list")
    finally:
        await close_stream(stream)


async def register(ctx: DPContext) -> None:
    reg = ctx.registration
    assert reg is not None
    check(reg.version == "v1beta1", f"Register version is {reg.version!r}, the kubelet accepts only \"v1beta1\"")
    try:
        check_qualified_name("resourceName", reg.resource_name)
    except ValidationError as err:
        fail(f"Register resource_name is not a valid extended resource name: {err}")
    domain = reg.resource_name.partition("/")[0] if "/" in reg.resource_name else ""
    check(domain and domain != "kubernetes.io" and not domain.endswith(".kubernetes.io")
          and not reg.resource_name.startswith("requests."),
          f"Register resource_name {reg.resource_name!r} is not an extended resource name (DOMAIN/NAME outside "
          "kubernetes.io)")
    check(reg.endpoint and "/" not in reg.endpoint,
          f"Register endpoint {reg.endpoint!r} must be a socket file name in the device-plugins directory")
    check(ctx.socket.is_socket(), f"Register endpoint {ctx.socket} is not a unix socket")


async def options(ctx: DPContext) -> None:
    reg = ctx.registration
    assert reg is not None
    got = await (await ctx.conn()).get_options()
    if reg.options is not None:
        check(got == reg.options, f"GetDevicePluginOptions answers {got}, but Register sent options {reg.options}")


async def full_list_first(ctx: DPContext) -> None:
    devices = await _first_list(ctx)
    check(devices, "the first ListAndWatch message lists no device")
    ids = [d.id for d in devices]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    check(not dupes, f"ListAndWatch lists device ids more than once: {dupes}")
    check(all(ids), "ListAndWatch lists a device with an empty ID")
    bad = [(d.id, d.health) for d in devices if d.health not in (HEALTHY, UNHEALTHY)]
    check(not bad, f"invalid health values (want Healthy or Unhealthy): {bad}")


async def ids_stable(ctx: DPContext) -> None:
    first = {d.id for d in await _first_list(ctx)}
    await ctx.reconnect()
    second = {d.id for d in await _first_list(ctx)}
    check(first == second, f"device ids changed between two ListAndWatch streams: {sorted(first ^ second)}")


async def topology(ctx: DPContext) -> None:
    call: Any = ctx.stub().ListAndWatch(api_pb2.Empty())
    try:
        msg = await asyncio.wait_for(call.read(), 10.0)
    finally:
        call.cancel()
    if msg is grpc.aio.EOF:  # type: ignore[attr-defined]
        fail("ListAndWatch ended without sending the device list")
    for dev in msg.devices:
        if dev.HasField("topology"):
            ids = [n.ID for n in dev.topology.nodes]
            check(ids, f"device {dev.ID} has a topology with no NUMA node")
            check(all(i >= 0 for i in ids) and len(set(ids)) == len(ids),
                  f"device {dev.ID} has NUMA nodes {ids} (want distinct, non-negative)")


async def changes_resend_full_list(ctx: DPContext) -> None:
    assert ctx.opts.set_health_command
    conn = await ctx.conn()
    stream = conn.list_and_watch()
    try:
        first = await asyncio.wait_for(anext(stream), 10.0)
        target = sorted(d.id for d in first)[0]
        everyone = {d.id for d in first}
        for want in (UNHEALTHY, HEALTHY):
            argv = expand(ctx.opts.set_health_command, {"device": target, "health": want,
                                                        "device_plugins": str(ctx.directory or "")})
            problem = await run_command(argv)
            check(not problem, f"--set-health-command: {problem}")
            msg = await asyncio.wait_for(anext(stream), 10.0)
            ids = {d.id for d in msg}
            check(ids == everyone, f"after device {target} became {want}, ListAndWatch sent {len(ids)} of "
                                   f"{len(everyone)} devices, missing {sorted(everyone - ids)}: every message must "
                                   "be the full list (the kubelet drops devices left out)")
            health = {d.id: d.health for d in msg}
            check(health[target] == want, f"device {target} set {want}, ListAndWatch says {health[target]}")
    except TimeoutError:
        fail("no ListAndWatch message within 10s of a device health change")
    finally:
        await close_stream(stream)


async def preferred(ctx: DPContext) -> None:
    conn = await ctx.conn()
    if not (await conn.get_options()).get_preferred_allocation_available:
        skip("the plugin does not offer GetPreferredAllocation (get_preferred_allocation_available false)")
    healthy = sorted(d.id for d in await _first_list(ctx) if d.health == HEALTHY)
    if len(healthy) < 2:
        skip(f"needs 2 healthy devices, the plugin has {len(healthy)}")
    available, must, size = healthy[1:], [healthy[-1]], 2 if len(healthy) > 2 else 1
    got = await conn.get_preferred_allocation(available, must, size)
    check(len(got) == size, f"GetPreferredAllocation(size={size}) returned {len(got)} devices: {list(got)}")
    check(set(must) <= set(got), f"GetPreferredAllocation left out must_include {must}: {list(got)}")
    check(set(got) <= set(available), f"GetPreferredAllocation returned devices not available: "
                                      f"{sorted(set(got) - set(available))} (available {available})")
    check(len(set(got)) == len(got), f"GetPreferredAllocation returned a device twice: {list(got)}")


async def allocate(ctx: DPContext) -> None:
    healthy = sorted(d.id for d in await _first_list(ctx) if d.health == HEALTHY)
    check(healthy, "no healthy device to allocate")
    groups = [healthy[:1], healthy[1:2]] if len(healthy) > 1 else [healthy[:1]]
    req = api_pb2.AllocateRequest(container_requests=[
        api_pb2.ContainerAllocateRequest(devices_ids=g) for g in groups])
    try:
        stub: Any = ctx.stub()
        resp = await stub.Allocate(req, timeout=30.0)
    except grpc.aio.AioRpcError as err:
        fail(f"Allocate of healthy devices {groups} failed: {err.code().name}: {err.details()}")
    check(len(resp.container_responses) == len(groups),
          f"Allocate with {len(groups)} container requests answered {len(resp.container_responses)} responses")
    for i, r in enumerate(resp.container_responses):
        for d in r.devices:
            check(os.path.isabs(d.container_path) and os.path.isabs(d.host_path),
                  f"container_responses[{i}] device spec {d.host_path!r} -> {d.container_path!r}: paths must be "
                  "absolute")
            check(_PERMISSIONS.match(d.permissions) and len(set(d.permissions)) == len(d.permissions),
                  f"container_responses[{i}] device {d.container_path}: permissions {d.permissions!r} "
                  "(want a subset of \"rwm\")")
        for m in r.mounts:
            check(os.path.isabs(m.container_path) and os.path.isabs(m.host_path),
                  f"container_responses[{i}] mount {m.host_path!r} -> {m.container_path!r}: paths must be absolute")
        for c in r.cdi_devices:
            check(_CDI_NAME.match(c.name), f"container_responses[{i}] CDI device {c.name!r} is not vendor/class=name")


async def pre_start(ctx: DPContext) -> None:
    conn = await ctx.conn()
    if not (await conn.get_options()).pre_start_required:
        skip("the plugin does not ask for PreStartContainer (pre_start_required false)")
    healthy = sorted(d.id for d in await _first_list(ctx) if d.health == HEALTHY)
    check(healthy, "no healthy device")
    try:
        await conn.pre_start_container(healthy[:1])
    except Exception as err:
        fail(f"PreStartContainer of {healthy[:1]} failed though the plugin requires it: {err}")


async def reregister(ctx: DPContext) -> None:
    await ctx.stop_kubelet()
    await ctx.serve_kubelet()
    reg = await ctx.next_registration()
    check(reg.resource_name == ctx.resource, f"re-registered as {reg.resource_name!r}, first as {ctx.resource!r}")
    ctx.registration = reg
    await ctx.reconnect()
    check(await _first_list(ctx), "after re-registration ListAndWatch lists no device")


CASES: list[Case[DPContext]] = [
    Case("registration/register", "Register sends version v1beta1, an extended resource name and a socket name "
         "in the directory", register, REG),
    Case("registration/options", "GetDevicePluginOptions agrees with the options sent in Register", options, REG),
    Case("list-and-watch/full-list-first", "ListAndWatch sends the full device list at once: unique ids, valid "
         "health", full_list_first),
    Case("list-and-watch/ids-stable", "device ids are the same on a new ListAndWatch stream", ids_stable),
    Case("list-and-watch/topology", "device topology names distinct non-negative NUMA nodes", topology),
    Case("list-and-watch/full-list-after-change", "after a health change the full list is sent again, with the "
         "new health", changes_resend_full_list, frozenset({"set-health"})),
    Case("preferred/honours-request", "GetPreferredAllocation returns size devices, must_include included, only "
         "available ones", preferred),
    Case("allocate/one-response-per-request", "Allocate answers one container response per request with valid "
         "device specs, mounts and CDI names", allocate),
    Case("prestart/when-required", "PreStartContainer succeeds when the plugin requires it", pre_start),
    Case("registration/after-kubelet-restart", "the plugin registers again when kubelet.sock is recreated",
         reregister, REG),
]
