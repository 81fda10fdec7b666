"""The Pods API gRPC adapter (v1alpha1.Pods): decode, call the source, encode.

ListPods and GetPod are unary (rate limited by the server's interceptor, as the kubelet's
LimiterUnaryServerInterceptor does); WatchPods streams the current pods as ADDED, one
INITIAL_SYNC_COMPLETE, then every change, until the client goes or falls too far behind.
Errors are NodeAgentErrors mapped by rpc/status.py (FAILED_PRECONDITION before sync,
NOT_FOUND for an unknown uid, RESOURCE_EXHAUSTED for a dropped watcher).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc

from nodeagent.apis.pods.v1alpha1 import api_pb2, api_pb2_grpc
from nodeagent.errors import NodeAgentError, safe_text
from nodeagent.podsapi import convert
from nodeagent.podsapi.source import PodsSource
from nodeagent.rpc.server import Service
from nodeagent.rpc.status import code_for, handle_errors

logger = logging.getLogger(__name__)

SERVICE_NAME = api_pb2.DESCRIPTOR.services_by_name["Pods"].full_name


class PodsServicer(api_pb2_grpc.PodsServicer):
    def __init__(self, source: PodsSource) -> None:
        self._source = source

    @handle_errors
    async def ListPods(
        self, request: api_pb2.ListPodsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> api_pb2.ListPodsResponse:
        return convert.list_response(self._source.pods())

    @handle_errors
    async def GetPod(
        self, request: api_pb2.GetPodRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> api_pb2.GetPodResponse:
        return convert.get_response(self._source.get(request.podUID))

    async def WatchPods(
        self, request: api_pb2.WatchPodsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[api_pb2.WatchPodsEvent]:
        # a refusal sets the status and ends the stream, not context.abort: abort's exception stays in the
        # call's state in a cycle with these frames, so each refused watch was kept in memory (rpc/status.py)
        try:
            pods, sub = self._source.watch()
        except NodeAgentError as err:
            context.set_code(code_for(err))
            context.set_details(safe_text(str(err)))
            return
        try:
            for pod in pods:
                yield convert.added(pod)
            yield convert.initial_sync_complete()
            while True:
                yield convert.event(await sub.next())
        except NodeAgentError as err:
            context.set_code(code_for(err))
            context.set_details(safe_text(str(err)))
        finally:
            sub.close()


def services(source: PodsSource) -> list[Service]:
    servicer = PodsServicer(source)
    return [Service(SERVICE_NAME, lambda server: api_pb2_grpc.add_PodsServicer_to_server(servicer, server))]
