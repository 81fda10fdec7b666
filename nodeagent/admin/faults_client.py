"""Client of nodeagent.v1.Faults on the admin socket, for the CLI (`fault`, `calls`, `simulate`).

Shares the admin client's channel handling and error texts (an unreachable daemon, the daemon's
own message otherwise). In admin/ beside that client (not in faults/, see faults_cli.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodeagent.admin.client import AdminClient
from nodeagent.apis.admin.v1 import faults_pb2, faults_pb2_grpc
from nodeagent.faults import convert
from nodeagent.faults.record import CallEntry


class FaultsClient(AdminClient):
    def __init__(self, socket: Path, timeout: float = 60.0) -> None:
        super().__init__(socket, timeout)
        self._faults = faults_pb2_grpc.FaultsStub(self._channel)

    async def add_fault(self, doc: dict[str, Any]) -> dict[str, Any]:
        msg = faults_pb2.FaultRule(**{k: v for k, v in doc.items() if v not in (None, "")})
        resp = await self._call(self._faults.AddFault, faults_pb2.AddFaultRequest(fault=msg))
        return convert.active_from_pb(resp.fault)

    async def list_faults(self) -> list[dict[str, Any]]:
        resp = await self._call(self._faults.ListFaults, faults_pb2.ListFaultsRequest())
        return [convert.active_from_pb(m) for m in resp.faults]

    async def clear_faults(self, rule_id: int = 0) -> int:
        resp = await self._call(self._faults.ClearFaults, faults_pb2.ClearFaultsRequest(id=rule_id))
        return int(resp.cleared)

    async def calls(self, plugin: str = "", method: str = "", since: int = 0, limit: int = 0) -> list[CallEntry]:
        resp = await self._call(self._faults.ListCalls, faults_pb2.ListCallsRequest(
            plugin=plugin, method=method, since=since, limit=limit))
        return [convert.call_from_pb(m) for m in resp.calls]

    async def restart(self) -> float:
        resp = await self._call(self._faults.SimulateKubeletRestart, faults_pb2.SimulateKubeletRestartRequest())
        return float(resp.duration_seconds)
