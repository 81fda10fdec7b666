"""The DRA driver suite: registration, prepare/unprepare and CDI, each a named contract.

Each case states one thing a kubelet relies on (pkg/kubelet/cm/dra and the DRA gRPC API's
comments) and fails with what the driver did instead. ResourceSlice, health and restart
cases are in dra_cases_node.py. Cases clean up through DRAContext.after_case.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from nodeagent.conformance import cdi
from nodeagent.conformance.dra_harness import DRAContext, socket_file
from nodeagent.conformance.model import Case, check, close_stream, fail
from nodeagent.dra.ports import ClaimRef, DriverCallError, PreparedDevice, PrepareResult
from nodeagent.dra.versions import HEALTH_SERVICES, PLUGIN_SERVICES
from nodeagent.errors import ValidationError
from nodeagent.objects.common import check_driver_name
from nodeagent.pluginwatcher.executor import RegistrationError

REG = frozenset({"registration"})
PREP = frozenset({"registration", "api"})


def _devices(result: PrepareResult) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    return sorted((d.pool_name, d.device_name, tuple(sorted(d.request_names)), tuple(sorted(d.cdi_device_ids)))
                  for d in result.devices)


def _cdi_ids(devices: tuple[PreparedDevice, ...]) -> list[str]:
    return [i for d in devices for i in d.cdi_device_ids]


async def get_info(ctx: DRAContext) -> None:
    info = ctx.info
    assert info is not None
    check(info.type == "DRAPlugin", f"GetInfo type is {info.type!r}, want \"DRAPlugin\"")
    try:
        check_driver_name("PluginInfo.name", info.name)
    except ValidationError as err:
        fail(f"GetInfo name is not a valid DRA driver name: {err}")
    check(os.path.isabs(info.endpoint), f"GetInfo endpoint {info.endpoint!r} is not an absolute socket path")
    check(Path(info.endpoint).is_socket(), f"GetInfo endpoint {info.endpoint} is not a unix socket")
    plugin = [v for v in info.supported_versions if v in PLUGIN_SERVICES]
    check(plugin, f"GetInfo supported_versions {list(info.supported_versions)} name no DRAPlugin service "
                  f"the kubelet speaks ({', '.join(PLUGIN_SERVICES)})")
    unknown = [v for v in info.supported_versions if v not in PLUGIN_SERVICES + HEALTH_SERVICES]
    check(not unknown, f"GetInfo supported_versions has tokens no kubelet knows: {unknown} "
                       f"(known: {', '.join(PLUGIN_SERVICES + HEALTH_SERVICES)})")


async def services_served(ctx: DRAContext) -> None:
    info = ctx.info
    assert info is not None
    for version in (v for v in info.supported_versions if v in PLUGIN_SERVICES):
        client = ctx.client_for(version)
        try:
            await client.unprepare([])
        except DriverCallError as err:
            fail(f"{version} is advertised but NodeUnprepareResources with no claims failed: {err}")
        finally:
            await client.close()
    for version in (v for v in info.supported_versions if v in HEALTH_SERVICES):
        client = ctx.client_for(PLUGIN_SERVICES[0] if PLUGIN_SERVICES[0] in info.supported_versions
                                else PLUGIN_SERVICES[1])
        try:
            stream = client.watch_health(version)
            await asyncio.wait_for(anext(stream), 10.0)
            await close_stream(stream)
        except TimeoutError:
            fail(f"{version} is advertised but NodeWatchResources sent no device list within 10s")
        except (DriverCallError, StopAsyncIteration) as err:
            fail(f"{version} is advertised but NodeWatchResources failed: {err or 'the stream ended at once'}")
        finally:
            await client.close()


async def notify_refused(ctx: DRAContext) -> None:
    ctx.handler.refuse_next = "refused by the conformance suite (registration must be retried)"
    sock = await ctx.find_socket()
    try:
        await ctx.executor.register(socket_file(sock))
        fail("the suite's refusal did not happen (internal error)")
    except RegistrationError:
        pass
    check(sock.exists(), f"the registration socket {sock} went away after NotifyRegistrationStatus(false)")
    info = await ctx.register(timeout=10.0)
    check(info.name == ctx.driver, f"after a refusal, GetInfo answered driver {info.name!r}")
    try:
        await ctx.client.unprepare([])
    except DriverCallError as err:
        fail(f"after a refused and a repeated registration the endpoint no longer answers: {err}")


async def prepare_single(ctx: DRAContext) -> None:
    devices = await ctx.devices(1)
    claim = await ctx.new_claim(devices)
    result = await ctx.prepare_one(claim)
    check(not result.error, f"NodePrepareResources of allocated claim {claim.name} failed: {result.error}")
    got = {(d.pool_name, d.device_name) for d in result.devices}
    check(set(devices) <= got, f"prepared devices {sorted(got)} miss the allocated {sorted(set(devices) - got)}")
    bad = [d for d in result.devices if any(r not in ("req-0",) for r in d.request_names)]
    check(not bad, f"prepared devices name requests the claim does not have: {bad}")


async def prepare_idempotent(ctx: DRAContext) -> None:
    claim = await ctx.new_claim(await ctx.devices(1))
    first = await ctx.prepare_one(claim)
    check(not first.error, f"first NodePrepareResources failed: {first.error}")
    files = cdi.spec_files(ctx.cdi_dirs)
    second = await ctx.prepare_one(claim)
    check(not second.error, f"NodePrepareResources of an already prepared claim failed: {second.error}")
    check(_devices(first) == _devices(second),
          f"NodePrepareResources is not idempotent: the same claim prepared twice gave {_devices(first)} "
          f"and then {_devices(second)}")
    ids = _cdi_ids(second.devices)
    if ids:
        specs = [cdi.parse_spec(p) for p in cdi.spec_files(ctx.cdi_dirs)]
        try:
            cdi.resolve(ids, specs)
        except ValueError as err:
            fail(f"after a repeated prepare: {err}")
        after = cdi.spec_files(ctx.cdi_dirs)
        check(len(after) == len(files), f"a repeated prepare of one claim changed the CDI spec files from "
                                        f"{len(files)} to {len(after)}: {[str(p) for p in after]}")


async def per_claim_errors(ctx: DRAContext) -> None:
    good = await ctx.new_claim(await ctx.devices(1))
    pool = (await ctx.devices(1))[0][0]
    bad = await ctx.new_claim([(pool, "conformance-no-such-device")])
    try:
        results = await ctx.client.prepare([good, bad])
    except DriverCallError as err:
        fail(f"a claim allocated to a device the driver does not have failed the whole NodePrepareResources call "
             f"(it must be that claim's error): {err}")
    check(not results[good.uid].error, f"claim {good.name} failed beside a bad one: {results[good.uid].error}")
    check(results[bad.uid].error, f"claim {bad.name} allocated to device {pool}/conformance-no-such-device, which "
                                  f"the driver does not publish, was prepared: {results[bad.uid].devices}")


async def _refused(ctx: DRAContext, claim: ClaimRef, what: str) -> None:
    """The claim must not be prepared: a per-claim error, or (as the upstream kubeletplugin helper does when it
    cannot read a claim) the whole call failing; the kubelet retries either way."""
    try:
        result = await ctx.prepare_one(claim)
    except DriverCallError:
        return
    check(result.error, f"{what}, yet it was prepared: {result.devices}")


async def unknown_claim(ctx: DRAContext) -> None:
    absent = ctx.unknown_claim()
    await _refused(ctx, absent, f"claim {absent.namespace}/{absent.name} does not exist")


async def wrong_uid(ctx: DRAContext) -> None:
    real = await ctx.new_claim(await ctx.devices(1))
    wrong = ctx.claim_ref(real.name, "11111111-2222-4333-8444-555555555555")
    await _refused(ctx, wrong, f"claim {real.name} was named with UID {wrong.uid} but its UID is {real.uid} "
                               "(a replaced claim)")


async def unprepare_never_prepared(ctx: DRAContext) -> None:
    absent = ctx.unknown_claim()
    try:
        results = await ctx.client.unprepare([absent])
    except DriverCallError as err:
        fail(f"NodeUnprepareResources of a never-prepared claim failed the call: {err}")
    check(not results[absent.uid], f"unprepare of a never-prepared claim must succeed, got: {results[absent.uid]}")


def _defined(ctx: DRAContext) -> set[tuple[str, str]]:
    """(kind, device name) of every device the CDI spec files in the CDI folders define now."""
    return {(s.kind, name) for s in (cdi.parse_spec(p) for p in cdi.spec_files(ctx.cdi_dirs)) for name in s.devices}


def _key(device_id: str) -> tuple[str, str] | None:
    try:
        return cdi.split_id(device_id)
    except ValueError:
        return None


async def unprepare_releases(ctx: DRAContext) -> None:
    """Unprepare succeeds, twice, and removes the CDI devices the claim's prepare defined. Devices
    that outlive a claim are not the claim's: those already defined before its prepare (a
    driver-lifetime spec written at start, such as dra-example-driver's `gpu=common`) and those
    another prepared claim was given too. The kubelet asks no driver to remove those."""
    before = _defined(ctx)
    devices = await ctx.devices(1)
    claim = await ctx.new_claim(devices)
    result = await ctx.prepare_one(claim)
    check(not result.error, f"NodePrepareResources failed: {result.error}")
    other: ClaimRef | None = None
    shared: set[str] = set()
    with contextlib.suppress(AssertionError):  # one device only: no second claim to compare with
        second = [d for d in await ctx.devices(2) if d not in devices][:1]
        if second:
            other = await ctx.new_claim(second)
            got = await ctx.prepare_one(other)
            shared = set(_cdi_ids(got.devices)) if not got.error else set()
    try:
        for attempt in ("first", "repeated"):
            errors = await ctx.client.unprepare([claim])
            check(not errors[claim.uid], f"{attempt} NodeUnprepareResources failed: {errors[claim.uid]}")
        own = [i for i in _cdi_ids(result.devices) if i not in shared and _key(i) not in before]
        if own:
            defined = _defined(ctx)
            left = [i for i in own if _key(i) in defined]
            check(not left, f"CDI devices the claim's prepare defined are still defined after unprepare: {left}")
    finally:
        if other is not None:
            with contextlib.suppress(DriverCallError):
                await ctx.client.unprepare([other])


async def concurrent(ctx: DRAContext) -> None:
    devices = await ctx.devices(1)
    pool_devices = []
    try:
        pool_devices = await ctx.devices(4)
    except AssertionError:
        pool_devices = devices
    claims = [await ctx.new_claim([d]) for d in pool_devices]
    try:
        results = await asyncio.gather(*(ctx.prepare_one(c) for c in claims))
    except DriverCallError as err:
        fail(f"concurrent NodePrepareResources calls for different claims failed: {err}")
    for claim, dev, result in zip(claims, pool_devices, results, strict=True):
        check(not result.error, f"concurrent prepare of {claim.name} failed: {result.error}")
        got = {(d.pool_name, d.device_name) for d in result.devices}
        check(dev in got, f"concurrent prepare of {claim.name} answered {sorted(got)}, allocated {dev}")


async def cdi_valid(ctx: DRAContext) -> None:
    claim = await ctx.new_claim(await ctx.devices(1))
    result = await ctx.prepare_one(claim)
    check(not result.error, f"NodePrepareResources failed: {result.error}")
    ids = _cdi_ids(result.devices)
    check(ids, "the prepared devices carry no CDI device ids (the runtime would inject nothing)")
    files = cdi.spec_files(ctx.cdi_dirs)
    check(files, f"no CDI spec file in {', '.join(map(str, ctx.cdi_dirs))} (use --cdi-dir to say where the "
                 "driver writes them)")
    try:
        specs = [cdi.parse_spec(p) for p in files]
        cdi.resolve(ids, specs)
    except ValueError as err:
        fail(str(err))


CASES: list[Case[DRAContext]] = [
    Case("registration/get-info", "GetInfo answers type DRAPlugin, a valid driver name, an absolute endpoint and "
         "DRAPlugin services the kubelet speaks", get_info, REG),
    Case("registration/services-served", "every advertised gRPC service (DRAPlugin, DRAResourceHealth) is "
         "really served on the endpoint", services_served, REG),
    Case("registration/notify-false-tolerated", "NotifyRegistrationStatus(false) is tolerated and the next "
         "registration succeeds", notify_refused, REG),
    Case("prepare/allocated-claim", "NodePrepareResources of an allocated claim returns its allocated devices",
         prepare_single, PREP),
    Case("prepare/idempotent", "the same claim prepared twice gives the same answer and no second CDI spec",
         prepare_idempotent, PREP),
    Case("prepare/per-claim-errors", "a claim the driver cannot prepare is a per-claim error and does not fail "
         "the other claims",
         per_claim_errors, PREP),
    Case("prepare/unknown-claim", "a claim that does not exist is refused (per-claim error, or the whole "
         "call)", unknown_claim, PREP),
    Case("prepare/wrong-uid", "a claim whose UID differs from the API's is refused (per-claim error, or "
         "the whole call)", wrong_uid, PREP),
    Case("prepare/concurrent", "concurrent prepares of different claims all succeed with their own devices",
         concurrent, PREP),
    Case("prepare/cdi-valid", "CDI device ids resolve in valid CDI spec files the driver wrote", cdi_valid, PREP),
    Case("unprepare/never-prepared", "unprepare of a claim never prepared succeeds", unprepare_never_prepared, REG),
    Case("unprepare/releases", "unprepare succeeds (twice) and the CDI devices the claim's prepare defined are gone",
         unprepare_releases, PREP),
]
