"""The kubelet side the DRA suite plays: registration, the driver's endpoint, its API server.

`DRAContext` owns, for one suite run, what a kubelet would: it finds the driver's
registration socket (given, or the first in a plugins_registry directory), registers it
through nodeagent's own registration executor (pluginwatcher/executor.py, GetInfo ->
validate -> NotifyRegistrationStatus), calls the advertised endpoint through nodeagent's
DRA client (dra/client.py), and writes the claims the driver reads to the API server of
the kubeconfig (or an embedded one). With a driver command it also owns the driver's
process and directories, which the restart cases need. Every claim a case made is
unprepared and deleted after the case.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry

from nodeagent.conformance.embedded import EmbeddedAPI
from nodeagent.conformance.kube import KubeAPI
from nodeagent.conformance.model import fail
from nodeagent.conformance.process import PluginProcess, expand
from nodeagent.dra.client import DRAPluginClient
from nodeagent.dra.ports import ClaimRef, PrepareResult
from nodeagent.dra.registry import PLUGIN_TYPE, choose_health_service, choose_plugin_service
from nodeagent.metrics.instruments import Instruments
from nodeagent.pluginwatcher.executor import RegistrationExecutor
from nodeagent.pluginwatcher.model import PluginInfo, SocketFile

T = TypeVar("T")

POLL = 0.1


@dataclass(frozen=True)
class DRAOptions:
    work_dir: Path
    registration_socket: Path | None = None
    plugins_registry: Path | None = None
    kubeconfig: Path | None = None
    driver_command: str | None = None
    set_health_command: str | None = None
    node_name: str = "conformance-node"
    namespace: str = "default"
    cdi_dirs: tuple[Path, ...] = ()
    wait: float = 30.0  # for the driver's sockets and slices to appear


class RecordingHandler:
    """PluginHandler for DRAPlugin that keeps what registered, and can refuse the next one."""

    def __init__(self) -> None:
        self.registered: list[PluginInfo] = []
        self.refuse_next = ""

    def validate(self, info: PluginInfo) -> str | None:
        if self.refuse_next:
            text, self.refuse_next = self.refuse_next, ""
            return text
        if not info.name:
            return f"invalid DRA driver plugin at endpoint {info.endpoint}: DRA driver name is empty"
        try:
            choose_plugin_service(info.supported_versions)
        except ValueError as err:
            return f"invalid supported gRPC versions of DRA driver plugin {info.name}: {err}"
        return None

    async def register(self, info: PluginInfo) -> None:
        self.registered.append(info)

    async def deregister(self, name: str, endpoint: str) -> None:
        return None


async def wait_until(probe: Callable[[], Awaitable[T | None]], timeout: float, what: str) -> T:
    """Poll `probe` until it returns something; fail the case naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last_error = ""
    while True:
        try:
            got = await probe()
        except Exception as err:  # a probe against a misbehaving plugin: remember, retry until the deadline
            got, last_error = None, f" (last error: {err})"
        if got is not None:
            return got
        if time.monotonic() >= deadline:
            fail(f"{what}: not seen within {timeout:g}s{last_error}")
        await asyncio.sleep(POLL)


def socket_file(path: Path) -> SocketFile:
    st = os.stat(path)
    return SocketFile(str(path), (st.st_ino, st.st_ctime_ns))


@dataclass
class _Scope:
    claims: list[ClaimRef] = field(default_factory=list)


class DRAContext:
    def __init__(self, opts: DRAOptions) -> None:
        self.opts = opts
        self.handler = RecordingHandler()
        self.executor = RegistrationExecutor({PLUGIN_TYPE: self.handler})
        self.instruments = Instruments(CollectorRegistry())
        self.root = opts.work_dir / "root"
        self.registry_dir = opts.plugins_registry or (
            opts.registration_socket.parent if opts.registration_socket else self.root / "plugins_registry")
        self.cdi_dirs = opts.cdi_dirs or ((opts.work_dir / "cdi",) if opts.driver_command else
                                          (Path("/etc/cdi"), Path("/var/run/cdi")))
        self.embedded: EmbeddedAPI | None = None
        self.api: KubeAPI | None = None
        self.process: PluginProcess | None = None
        self.info: PluginInfo | None = None
        self.setup_error = ""
        self.placeholders: dict[str, str] = {}
        self.api_error = ""
        self._client: DRAPluginClient | None = None
        self._scope = _Scope()
        self._names = itertools.count(1)
        self._run_id = f"{os.getpid()}-{int(time.time())}"

    # ------------------------------------------------------------------ setup / teardown

    async def setup(self) -> None:
        """Everything before the first case; a problem is recorded (cases fail with it), never raised."""
        try:
            kubeconfig = self.opts.kubeconfig
            if kubeconfig is None:
                self.embedded = EmbeddedAPI(self.opts.work_dir)
                kubeconfig = await self.embedded.start()
            self.api = KubeAPI(kubeconfig)
            if self.embedded is not None:
                await self.api.ensure_node(self.opts.node_name)
        except Exception as err:
            self.api_error = f"the Kubernetes API: {err}"
        kc = str(self.api.kubeconfig) if self.api else ""
        self.placeholders = {"root": str(self.root), "registry": str(self.registry_dir),
                             "plugins": str(self.root / "plugins"), "kubeconfig": kc, "node": self.opts.node_name,
                             "cdi": str(self.cdi_dirs[0])}
        if self.opts.driver_command:
            for d in (self.registry_dir, self.root / "plugins", self.root / "device-plugins", *self.cdi_dirs):
                d.mkdir(parents=True, exist_ok=True)
            env = {"NODEAGENT_ROOT_DIR": str(self.root), "NODEAGENT_KUBECONFIG": kc, "KUBECONFIG": kc,
                   "NODEAGENT_NODE_NAME": self.opts.node_name, "NODE_NAME": self.opts.node_name}
            self.process = PluginProcess(expand(self.opts.driver_command, self.placeholders), env,
                                         self.opts.work_dir / "driver.log")
            await self.process.start()
        try:
            self.info = await self.register()
        except Exception as err:
            self.setup_error = f"registration: {err}"

    async def close(self) -> None:
        await self.after_case()
        if self._client is not None:
            await self._client.close()
        if self.process is not None:
            await self.process.stop()
        if self.api is not None:
            await self.api.close()
        if self.embedded is not None:
            await self.embedded.stop()

    def gaps(self) -> Mapping[str, str]:
        out: dict[str, str] = {}
        if self.info is None:
            out["registration"] = f"the driver did not register ({self.setup_error or 'no registration yet'})"
        if self.api_error or self.api is None:
            out["api"] = self.api_error or "no Kubernetes API"
        if self.info is not None and not choose_health_service(self.info.supported_versions):
            out["health"] = "the driver advertises no DRAResourceHealth service"
        if not self.opts.set_health_command:
            out["set-health"] = "no --set-health-command to change a device's health"
        if self.process is None:
            out["driver-command"] = "needs --driver-command (the suite must stop and start the driver)"
        return out

    async def after_case(self) -> None:
        claims, self._scope = self._scope.claims, _Scope()
        if not claims:
            return
        with contextlib.suppress(Exception):
            await self.client.unprepare(claims)
        if self.api is not None:
            for c in claims:
                with contextlib.suppress(Exception):
                    await self.api.delete_claim(c.namespace, c.name)

    # ------------------------------------------------------------------ registration

    async def find_socket(self, timeout: float | None = None) -> Path:
        if self.opts.registration_socket is not None and self.opts.plugins_registry is None:
            path = self.opts.registration_socket

            async def exists() -> Path | None:
                return path if path.exists() else None
            return await wait_until(exists, timeout or self.opts.wait, f"registration socket {path}")

        async def first() -> Path | None:
            if not self.registry_dir.is_dir():
                return None
            found = sorted(p for p in self.registry_dir.iterdir() if not p.name.startswith(".")
                           and p.is_socket())
            return found[0] if found else None
        return await wait_until(first, timeout or self.opts.wait, f"a registration socket in {self.registry_dir}")

    async def register(self, *, timeout: float | None = None) -> PluginInfo:
        """The kubelet's registration of the socket; the PluginInfo taken in (retried until `timeout`)."""
        sock = await self.find_socket(timeout)

        async def attempt() -> PluginInfo | None:
            registered = await self.executor.register(socket_file(sock))
            return registered.info if registered.accepted else None
        info = await wait_until(attempt, timeout or self.opts.wait, f"registration of {sock}")
        if self.info is not None and self._client is not None and info.endpoint != self.info.endpoint:
            await self._client.close()
            self._client = None
        self.info = info
        return info

    @property
    def driver(self) -> str:
        if self.info is None:
            fail(f"the driver did not register: {self.setup_error}")
        return self.info.name

    @property
    def client(self) -> DRAPluginClient:
        if self.info is None:
            fail(f"the driver did not register: {self.setup_error}")
        if self._client is None:
            version = choose_plugin_service(self.info.supported_versions)
            self._client = DRAPluginClient(self.info.name, self.info.endpoint, version, self.instruments,
                                           timeout=min(self.opts.wait, 45.0))
        return self._client

    def client_for(self, version: str) -> DRAPluginClient:
        assert self.info is not None
        return DRAPluginClient(self.info.name, self.info.endpoint, version, self.instruments, timeout=10.0)

    # ------------------------------------------------------------------ the API side

    @property
    def kube(self) -> KubeAPI:
        if self.api is None or self.api_error:
            fail(self.api_error or "no Kubernetes API")
        return self.api

    async def slices(self) -> list[dict[str, Any]]:
        return await self.kube.slices(self.driver, self.opts.node_name)

    async def published(self, timeout: float | None = None) -> list[dict[str, Any]]:
        async def some() -> list[dict[str, Any]] | None:
            return (await self.slices()) or None
        return await wait_until(some, timeout or self.opts.wait,
                                f"a ResourceSlice of driver {self.driver} for node {self.opts.node_name}")

    async def devices(self, count: int = 1) -> list[tuple[str, str]]:
        """`count` (pool, device) pairs from the driver's published slices (newest generation)."""
        found: list[tuple[str, str]] = []
        for s in await self.published():
            spec = s.get("spec") or {}
            pool = (spec.get("pool") or {}).get("name", "")
            found.extend((pool, d.get("name", "")) for d in spec.get("devices") or ())
        if len(found) < count:
            fail(f"the case needs {count} devices, the driver published {len(found)}")
        return sorted(found)[:count]

    def claim_ref(self, name: str, uid: str) -> ClaimRef:
        ref = ClaimRef(self.opts.namespace, uid, name)
        self._scope.claims.append(ref)
        return ref

    async def new_claim(self, devices: Sequence[tuple[str, str]]) -> ClaimRef:
        name = f"conformance-{self._run_id}-{next(self._names)}"
        made = await self.kube.create_allocated_claim(self.opts.namespace, name, self.driver, devices,
                                                      self.opts.node_name)
        return self.claim_ref(name, str(made["metadata"]["uid"]))

    def unknown_claim(self) -> ClaimRef:
        n = next(self._names)
        return ClaimRef(self.opts.namespace, f"00000000-0000-4000-8000-{n:012d}", f"conformance-absent-{n}")

    async def prepare_one(self, claim: ClaimRef) -> PrepareResult:
        results = await self.client.prepare([claim])
        return results[claim.uid]

    def diagnostics(self) -> str:
        if self.process is None:
            return ""
        tail = self.process.log_tail()
        return f"\n--- driver log (tail) ---\n{tail}" if tail else ""
