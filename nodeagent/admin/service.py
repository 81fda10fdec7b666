"""gRPC adapter for nodeagent.v1.Admin (describe, node view, device health): decode, call the
AdminBackend, encode. No rules here; objects themselves are served by the Kubernetes API."""

from __future__ import annotations

from collections.abc import Mapping
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
    async def Describe(self, request: admin_pb2.DescribeRequest, context: Ctx) -> admin_pb2.DescribeResponse:
        text = self._backend.describe(request.kind, request.namespace or "default", request.name)
        return admin_pb2.DescribeResponse(text=text)

    @handle_errors
    async def GetNode(self, request: admin_pb2.GetNodeRequest, context: Ctx) -> admin_pb2.GetNodeResponse:
        return admin_pb2.GetNodeResponse(node=node_to_pb(self._backend.node()))

    @handle_errors
    async def SetDeviceHealth(
        self, request: admin_pb2.SetDeviceHealthRequest, context: Ctx
    ) -> admin_pb2.SetDeviceHealthResponse:
        await self._backend.set_device_health(request.resource, request.device, request.health)
        return admin_pb2.SetDeviceHealthResponse()


def node_to_pb(node: Mapping[str, Any]) -> admin_pb2.NodeView:
    """The backend's Node object (core/v1 shape) as the typed NodeView."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    return admin_pb2.NodeView(
        name=str(meta.get("name", "")),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        creation_timestamp=str(meta.get("creationTimestamp", "")),
        capacity={str(k): str(v) for k, v in (status.get("capacity") or {}).items()},
        allocatable={str(k): str(v) for k, v in (status.get("allocatable") or {}).items()},
        conditions=[
            admin_pb2.NodeCondition(
                type=str(c.get("type", "")), status=str(c.get("status", "")), reason=str(c.get("reason", "")),
                message=str(c.get("message", "")), last_transition_time=str(c.get("lastTransitionTime", "")),
            )
            for c in status.get("conditions") or ()
        ],
        node_info=admin_pb2.NodeSystemInfo(
            kubelet_version=str(info.get("kubeletVersion", "")),
            operating_system=str(info.get("operatingSystem", "")),
            architecture=str(info.get("architecture", "")),
            kernel_version=str(info.get("kernelVersion", "")),
        ),
    )


def services(backend: AdminBackend) -> list[Service]:
    servicer = AdminServicer(backend)
    return [
        Service(
            admin_pb2.DESCRIPTOR.services_by_name["Admin"].full_name,
            lambda server: admin_pb2_grpc.add_AdminServicer_to_server(servicer, server),
        )
    ]
