"""Client for the admin socket, used by the CLI (`describe`, `device set-health`): turns gRPC errors
into readable text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc

from nodeagent.apis.admin.v1 import admin_pb2, admin_pb2_grpc
from nodeagent.errors import NodeAgentError, Unavailable
from nodeagent.rpc.channel import channel


class AdminError(NodeAgentError):
    """The daemon answered with an error; the message is the daemon's text."""


class AdminClient:
    def __init__(self, socket: Path, timeout: float = 30.0) -> None:
        self._socket = socket
        self._timeout = timeout
        self._channel = channel(socket)
        self._stub = admin_pb2_grpc.AdminStub(self._channel)

    async def close(self) -> None:
        await self._channel.close(None)

    async def _call(self, method: Any, request: Any) -> Any:
        try:
            return await method(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.UNAVAILABLE:
                raise Unavailable(
                    f"cannot reach the nodeagent admin socket {self._socket}: is the daemon running?"
                ) from err
            raise AdminError(err.details() or err.code().name) from err

    async def describe(self, kind: str, namespace: str, name: str) -> str:
        resp = await self._call(
            self._stub.Describe, admin_pb2.DescribeRequest(kind=kind, namespace=namespace, name=name)
        )
        return str(resp.text)

    async def set_device_health(self, resource: str, device: str, health: str) -> None:
        await self._call(
            self._stub.SetDeviceHealth,
            admin_pb2.SetDeviceHealthRequest(resource=resource, device=device, health=health),
        )
