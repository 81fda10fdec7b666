"""gRPC adapter for nodeagent.v1.Faults on the admin socket: decode, call the injector, encode.

No rules here: validation is model.parse_rule's (through convert), matching is the FaultSet's,
the restart is the KubeletRestart's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from nodeagent.apis.admin.v1 import faults_pb2, faults_pb2_grpc
from nodeagent.faults import convert
from nodeagent.faults.interceptors import FaultInjector
from nodeagent.rpc.server import Service
from nodeagent.rpc.status import handle_errors

Ctx = grpc.aio.ServicerContext[Any, Any]
SERVICE_NAME = faults_pb2.DESCRIPTOR.services_by_name["Faults"].full_name


class FaultsServicer(faults_pb2_grpc.FaultsServicer):
    def __init__(self, injector: FaultInjector, restart: Callable[[], Awaitable[float]]) -> None:
        self._injector = injector
        self._restart = restart

    @handle_errors
    async def AddFault(self, request: faults_pb2.AddFaultRequest, context: Ctx) -> faults_pb2.AddFaultResponse:
        rule = self._injector.faults.add(convert.rule_from_pb(request.fault))
        return faults_pb2.AddFaultResponse(fault=convert.rule_to_pb(rule, 0, rule.count))

    @handle_errors
    async def ListFaults(self, request: faults_pb2.ListFaultsRequest, context: Ctx) -> faults_pb2.ListFaultsResponse:
        return faults_pb2.ListFaultsResponse(faults=[convert.active_to_pb(a) for a in self._injector.faults.list()])

    @handle_errors
    async def ClearFaults(
        self, request: faults_pb2.ClearFaultsRequest, context: Ctx
    ) -> faults_pb2.ClearFaultsResponse:
        return faults_pb2.ClearFaultsResponse(cleared=self._injector.faults.clear(request.id))

    @handle_errors
    async def ListCalls(self, request: faults_pb2.ListCallsRequest, context: Ctx) -> faults_pb2.ListCallsResponse:
        entries = self._injector.log.entries(plugin=request.plugin, method=request.method, since=request.since,
                                             limit=request.limit)
        return faults_pb2.ListCallsResponse(calls=[convert.call_to_pb(e) for e in entries])

    @handle_errors
    async def SimulateKubeletRestart(
        self, request: faults_pb2.SimulateKubeletRestartRequest, context: Ctx
    ) -> faults_pb2.SimulateKubeletRestartResponse:
        return faults_pb2.SimulateKubeletRestartResponse(duration_seconds=await self._restart())


def services(injector: FaultInjector, restart: Callable[[], Awaitable[float]]) -> list[Service]:
    servicer = FaultsServicer(injector, restart)
    return [Service(SERVICE_NAME, lambda server: faults_pb2_grpc.add_FaultsServicer_to_server(servicer, server))]
