"""The real control plane's HTTP edge: readiness probes, and the RBAC objects applied once kube-apiserver is up.

One aiohttp session per control plane, with two TLS contexts: the cluster's (its CA, the admin's
client certificate) for kube-apiserver, and one that verifies nothing for the scheduler's and the
controller manager's /healthz, whose serving certificates are self-signed by each process at start
(nothing else could vouch for them; kubeadm's probes skip verification the same way). Proxies from
the environment are never used: every address here is this machine's.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Mapping
from typing import Any

import aiohttp

from nodeagent.errors import StartupError
from nodeagent.realcp.plan import ADMIN, CA, Layout, Probe, object_path

PROBE_TIMEOUT = 5.0  # seconds one probe or request may take
FIELD_MANAGER = "nodeagent"


class Bootstrap:
    """Probes and the admin's requests to one control plane; close() when done."""

    def __init__(self, layout: Layout, api_url: str) -> None:
        self._api_url = api_url
        self._cluster = ssl.create_default_context(cafile=str(layout.cert(CA)))
        self._cluster.load_cert_chain(layout.cert(ADMIN), layout.key(ADMIN))
        self._self_signed = ssl.create_default_context()
        self._self_signed.check_hostname = False
        self._self_signed.verify_mode = ssl.CERT_NONE
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT), trust_env=False)

    def _ssl(self, tls: str) -> ssl.SSLContext | bool:
        return {"client": self._cluster, "self-signed": self._self_signed}.get(tls, False)

    async def probe(self, probe: Probe) -> bool:
        """Whether the component answers 200 with the expected body now (any failure: not yet)."""
        try:
            async with self._session.get(probe.url, ssl=self._ssl(probe.tls)) as resp:
                return resp.status == 200 and probe.expect in await resp.text()
        except (aiohttp.ClientError, OSError, TimeoutError):
            return False

    async def apply(self, obj: Mapping[str, Any]) -> None:
        """Server-side apply `obj` as the admin (force: this manager owns what it writes); StartupError if refused."""
        url = f"{self._api_url}{object_path(obj)}?fieldManager={FIELD_MANAGER}&force=true"
        try:
            async with self._session.patch(url, data=json.dumps(obj), ssl=self._cluster,
                                           headers={"Content-Type": "application/apply-patch+yaml"}) as resp:
                if resp.status >= 300:
                    raise StartupError(f"applying {obj['kind']} {obj['metadata']['name']}: HTTP {resp.status}: "
                                       f"{(await resp.text())[:500]}")
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            raise StartupError(f"applying {obj['kind']} {obj['metadata']['name']}: {err}") from None

    async def exists(self, path: str) -> bool:
        """Whether GET `path` answers 200 as the admin now (any failure: not yet)."""
        try:
            async with self._session.get(f"{self._api_url}{path}", ssl=self._cluster) as resp:
                return resp.status == 200
        except (aiohttp.ClientError, OSError, TimeoutError):
            return False

    async def close(self) -> None:
        await self._session.close()
