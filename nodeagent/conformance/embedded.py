"""nodeagent's own Kubernetes API server, in process, for a suite run without --kubeconfig.

The driver under test needs an API server to publish its ResourceSlices to and to GET
claims from; when the user has none at hand the suite serves one over an in-memory store
with the daemon's kinds and admission hooks (objects.kinds), on 127.0.0.1 with a free port,
and writes its kubeconfig for the driver. Nothing of the node daemon runs: no scheduler, no
slice wiper, no kubelet side; the suite itself plays the kubelet.
"""

from __future__ import annotations

from pathlib import Path

from nodeagent.apiserver.server import APIServer, APIServerOptions
from nodeagent.objects.kinds import admitted_kinds
from nodeagent.store import ObjectStore
from nodeagent.util.clock import RealClock


class EmbeddedAPI:
    def __init__(self, work_dir: Path) -> None:
        self.kubeconfig = work_dir / "kubeconfig"
        self._credentials = work_dir / "apiserver"
        self._store: ObjectStore | None = None
        self._server: APIServer | None = None

    async def start(self) -> Path:
        clock = RealClock()
        self._store = ObjectStore.memory(admitted_kinds(), clock)
        self._server = APIServer(self._store, clock, APIServerOptions(
            bind_address="127.0.0.1:0", credentials_dir=self._credentials, kubeconfig=self.kubeconfig))
        await self._server.start()
        return self.kubeconfig

    @property
    def url(self) -> str:
        return self._server.url if self._server is not None else ""

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()
            self._server = None
        if self._store is not None:
            self._store.close()
            self._store = None
