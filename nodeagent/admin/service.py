"""gRPC adapter for nodeagent.v1.Admin: decode, call the AdminBackend, encode. No rules here."""

from __future__ import annotations

import json
from typing import Any

import grpc

from nodeagent.admin.ports import AdminBackend
from nodeagent.apis.admin.v1 import admin_pb2, admin_pb2_grpc
from nodeagent.rpc.server import Service
from nodeagent.rpc.status import handle_errors

Ctx = grpc.aio.ServicerContext[Any, Any]


class AdminServicer(admin_pb2_grpc.AdminServicer):
    def __init__(self, backend: AdminBackend) -> None:
        self._backend = backend

    @handle_errors
    async def Apply(self, request: admin_pb2.ApplyRequest, context: Ctx) -> admin_pb2.ApplyResponse:
        applied = await self._backend.apply(request.manifest, request.default_namespace or "default")
        return admin_pb2.ApplyResponse(
            objects=[
                admin_pb2.AppliedObject(kind=a.kind, namespace=a.namespace, name=a.name, action=a.action)
                for a in applied
            ]
        )

    @handle_errors
    async def Get(self, request: admin_pb2.GetRequest, context: Ctx) -> admin_pb2.GetResponse:
        objs = self._backend.get(request.kind, request.namespace, request.name, request.all_namespaces)
        return admin_pb2.GetResponse(objects_json=[json.dumps(o) for o in objs])

    @handle_errors
    async def Delete(self, request: admin_pb2.DeleteRequest, context: Ctx) -> admin_pb2.DeleteResponse:
        await self._backend.delete(request.kind, request.namespace or "default", request.name)
        return admin_pb2.DeleteResponse()

    @handle_errors
    async def Describe(self, request: admin_pb2.DescribeRequest, context: Ctx) -> admin_pb2.DescribeResponse:
        text = self._backend.describe(request.kind, request.namespace or "default", request.name)
        return admin_pb2.DescribeResponse(text=text)

    @handle_errors
    async def GetNode(self, request: admin_pb2.GetNodeRequest, context: Ctx) -> admin_pb2.GetNodeResponse:
        return admin_pb2.GetNodeResponse(node_json=json.dumps(self._backend.node()))

    @handle_errors
    async def SetDeviceHealth(
        self, request: admin_pb2.SetDeviceHealthRequest, context: Ctx
    ) -> admin_pb2.SetDeviceHealthResponse:
        await self._backend.set_device_health(request.resource, request.device, request.health)
        return admin_pb2.SetDeviceHealthResponse()

    @handle_errors
    async def ListEvents(self, request: admin_pb2.ListEventsRequest, context: Ctx) -> admin_pb2.ListEventsResponse:
        return admin_pb2.ListEventsResponse(
            events=[
                admin_pb2.Event(
                    type=e.type,
                    reason=e.reason,
                    message=e.message,
                    involved_kind=e.involved_kind,
                    involved_namespace=e.involved_namespace,
                    involved_name=e.involved_name,
                    timestamp=e.timestamp,
                    count=e.count,
                )
                for e in self._backend.events(request.namespace, request.involved_object)
            ]
        )


def services(backend: AdminBackend) -> list[Service]:
    servicer = AdminServicer(backend)
    return [
        Service(
            admin_pb2.DESCRIPTOR.services_by_name["Admin"].full_name,
            lambda server: admin_pb2_grpc.add_AdminServicer_to_server(servicer, server),
        )
    ]
