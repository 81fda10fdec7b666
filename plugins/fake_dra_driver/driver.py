"""The fake DRA driver: a DriverBackend on dra_kit with profile-defined GPUs, CDI specs and faults.

Prepare reads the claim's allocation through the Kubernetes API, keeps the results of this driver,
writes one CDI spec per claim (a CDI device per allocated device, named "<claim uid>-<device>",
with the profile's env and device nodes) and returns request names, pool, device and the CDI
ids; unprepare removes the spec. Both are idempotent (dra_kit.flow). Health comes from the
profile and the control socket (`<dra.sock>.ctl`, {"set_health": {"device": "POOL/DEVICE",
"health": "Unhealthy"}}); extra control commands: {"set_faults": {...profile faults keys}},
{"faults": {}}, {"prepared": {}}. Faults exist only so tests can exercise the kubelet side.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from nodeagent.plugin_kit import NotFound, PluginCallError
from plugins.common.control import Command
from plugins.dra_kit.cdi import CDIDevice, CDIWriter, DeviceNode
from plugins.dra_kit.claims import ClaimAllocation, ClaimReader
from plugins.dra_kit.flow import ClaimFlow, PreparedStore
from plugins.dra_kit.health import HealthBoard
from plugins.dra_kit.kube import APIPort
from plugins.dra_kit.model import ClaimRef, DeviceHealth, PreparedDevice, PrepareResult
from plugins.dra_kit.publisher import SlicePublisher
from plugins.dra_kit.server import DriverServer
from plugins.fake_dra_driver.profile import DeviceDef, Faults, Profile, parse_faults

logger = logging.getLogger(__name__)

CRASH_EXIT_CODE = 70


def _fill(template: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


def _exit_now() -> None:
    os._exit(CRASH_EXIT_CODE)


class FakeDRADriver:
    """DriverBackend of the fake GPU driver, plus the DriverServer and slice publisher around it.

    `api` is the Kubernetes API (the caller closes it); `node_name` None: the host name.
    """

    def __init__(
        self,
        profile: Profile,
        *,
        root_dir: Path,
        api: APIPort,
        node_name: str | None = None,
        cdi_dir: Path | None = None,
        crash: Callable[[], None] = _exit_now,
    ) -> None:
        self.profile = profile
        self.api = api
        self.faults: Faults = profile.faults
        self._crash = crash
        self._devices: dict[str, DeviceDef] = {d.name: d for d in profile.devices}
        self._ordinal = {d.name: i for i, d in enumerate(profile.devices)}
        self.board = HealthBoard(
            (DeviceHealth(profile.pool, d.name, d.health, profile.device_timeout(d), d.health_message)
             for d in profile.devices),
            resend=profile.health_resend_seconds,
        )
        self.cdi = CDIWriter(cdi_dir or profile.cdi.dir or root_dir.parent / "cdi", profile.cdi.kind, profile.driver)
        self.publisher = SlicePublisher(
            api, profile.driver, {profile.pool: [d.slice_json() for d in profile.devices]},
            node_name=node_name, interval=profile.slice_check_seconds,
        )
        self.server = DriverServer(profile.driver, root_dir, self, services=profile.services,
                                   commands=self._commands())
        self.store = PreparedStore(self.server.plugin_path.parent / "prepared-claims.json")
        self.flow = ClaimFlow(profile.driver, ClaimReader(api, profile.driver), self.store,
                              self._prepare_devices, self._release_devices)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self.faults.pause_health:
            await self.board.pause(True)
        await self.server.start()
        self.publisher.start()
        logger.info("fake DRA driver running driver=%s pool=%s devices=%d socket=%s cdi_dir=%s",
                    self.profile.driver, self.profile.pool, len(self._devices), self.server.plugin_path,
                    self.cdi.directory)

    async def stop(self) -> None:
        await self.publisher.stop()
        await self.server.stop()

    # ------------------------------------------------------------------ DriverBackend

    def health_board(self) -> HealthBoard | None:
        return self.board

    async def prepare(self, claims: Sequence[ClaimRef]) -> Mapping[str, PrepareResult]:
        f = self.faults
        if f.crash_on_prepare:
            logger.error("fault: crashing on prepare claims=%d", len(claims))
            self._crash()
        if f.prepare_delay > 0:
            await asyncio.sleep(f.prepare_delay)
        if f.prepare_failures > 0:
            self.faults = replace(f, prepare_failures=f.prepare_failures - 1)
            logger.warning("fault: failing prepare mode=%s left=%d", f.prepare_failure_mode,
                           self.faults.prepare_failures)
            if f.prepare_failure_mode == "rpc":
                raise PluginCallError(f.prepare_error)
            return {c.uid: PrepareResult(error=f.prepare_error) for c in claims}
        return await self.flow.prepare(claims)

    async def unprepare(self, claims: Sequence[ClaimRef]) -> Mapping[str, str]:
        f = self.faults
        if f.unprepare_failures > 0:
            self.faults = replace(f, unprepare_failures=f.unprepare_failures - 1)
            return {c.uid: "injected unprepare failure" for c in claims}
        return await self.flow.unprepare(claims)

    # ------------------------------------------------------------------ the driver's work

    def _env_for(self, allocation: ClaimAllocation, requests: Sequence[str]) -> list[str]:
        """Opaque config parameters {"env": {NAME: VALUE}} of this driver, for these requests."""
        out: list[str] = []
        for cfg in allocation.config:
            if cfg.requests and not set(cfg.requests) & set(requests):
                continue
            params = cfg.parameters if isinstance(cfg.parameters, dict) else {}
            env = params.get("env")
            if isinstance(env, dict):
                out.extend(f"{k}={v}" for k, v in env.items())
        return out

    async def _prepare_devices(self, claim: ClaimRef, allocation: ClaimAllocation) -> list[PreparedDevice]:
        # One CDI device per allocated device; a device named by several requests keeps all names.
        requests: dict[str, list[str]] = {}
        share: dict[str, str | None] = {}
        for result in allocation.devices:
            if result.pool != self.profile.pool or result.device not in self._devices:
                raise NotFound(f"driver {self.profile.driver} has no device {result.pool}/{result.device} "
                               f"(claim {claim.namespace}/{claim.name})")
            requests.setdefault(result.device, []).append(result.request)
            share.setdefault(result.device, result.share_id)
        tmpl = self.profile.cdi
        cdi_devices: list[CDIDevice] = []
        for index, (name, reqs) in enumerate(requests.items()):
            dev = self._devices[name]
            values = {
                "device": name, "pool": self.profile.pool, "uuid": dev.uuid or name, "model": dev.model,
                "index": str(index), "ordinal": str(self._ordinal[name]), "claim": claim.uid,
                "claimName": claim.name, "namespace": claim.namespace, "request": ",".join(reqs),
            }
            cdi_devices.append(CDIDevice(
                name=self.cdi.device_name(claim.uid, name),
                env=tuple(_fill(e, values) for e in tmpl.env) + tuple(self._env_for(allocation, reqs)),
                device_nodes=tuple(DeviceNode(_fill(n.path, values), _fill(n.host_path, values), n.permissions)
                                   for n in tmpl.device_nodes),
            ))
        if not cdi_devices:
            self.cdi.remove(claim.uid)
            return []
        common = {"claim": claim.uid, "claimName": claim.name, "namespace": claim.namespace,
                  "pool": self.profile.pool}
        ids = self.cdi.write(claim.uid, cdi_devices, [_fill(e, common) for e in tmpl.common_env])
        return [
            PreparedDevice(tuple(reqs), self.profile.pool, name, (cdi_id,), share[name])
            for (name, reqs), cdi_id in zip(requests.items(), ids, strict=True)
        ]

    async def _release_devices(self, claim: ClaimRef, devices: Sequence[PreparedDevice]) -> None:
        self.cdi.remove(claim.uid)

    # ------------------------------------------------------------------ control commands

    def _commands(self) -> dict[str, Command]:
        async def set_faults(arg: Any) -> dict[str, Any]:
            if not isinstance(arg, dict):
                raise ValueError("set_faults wants an object of profile faults keys")
            current = {
                "prepareFailures": self.faults.prepare_failures,
                "prepareFailureMode": self.faults.prepare_failure_mode,
                "prepareError": self.faults.prepare_error,
                "prepareDelaySeconds": self.faults.prepare_delay,
                "unprepareFailures": self.faults.unprepare_failures,
                "crashOnPrepare": self.faults.crash_on_prepare,
                "pauseHealth": self.faults.pause_health,
            }
            try:
                self.faults = parse_faults({**current, **arg}, "faults")
            except Exception as err:
                raise ValueError(str(err)) from None
            await self.board.pause(self.faults.pause_health)
            return {}

        async def faults(arg: Any) -> dict[str, Any]:
            f = self.faults
            return {"faults": {"prepareFailures": f.prepare_failures, "prepareFailureMode": f.prepare_failure_mode,
                               "prepareDelaySeconds": f.prepare_delay, "unprepareFailures": f.unprepare_failures,
                               "crashOnPrepare": f.crash_on_prepare, "pauseHealth": f.pause_health}}

        async def prepared(arg: Any) -> dict[str, Any]:
            return {"claims": self.store.uids(), "cdiFiles": self.cdi.claims()}

        return {"set_faults": set_faults, "faults": faults, "prepared": prepared}
