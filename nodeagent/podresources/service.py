"""gRPC adapters for v1 and v1alpha1 PodResourcesLister: decode, call the lister, count, encode.

Counters follow the kubelet (server_v1.go, server_v1alpha1.go): every call bumps
`..._requests_total` and the per-method counter with server_api_version; a failing Get
(gate off, unknown pod) or GetAllocatableResources (gate off) bumps the matching
error counter. Errors are KubeletError, which rpc/status.py sends as UNKNOWN with the
kubelet's text. List and GetAllocatableResources answers are reused only while the lister's
generation token is unchanged (see lister.py), so a change is visible on the very next call.

v1 List answers leave as ready-made wire bytes (convert.ListEncoderV1), so the v1
service is registered by `add_v1` below with a serializer that passes bytes through;
method paths and message types are those of the generated code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

import grpc
from google.protobuf.message import Message

from nodeagent.apis.podresources.v1 import api_pb2 as v1
from nodeagent.apis.podresources.v1alpha1 import api_pb2 as v1alpha1
from nodeagent.apis.podresources.v1alpha1 import api_pb2_grpc as v1alpha1_grpc
from nodeagent.errors import KubeletError
from nodeagent.metrics.instruments import Instruments
from nodeagent.podresources import convert
from nodeagent.podresources.lister import Gates, PodResourcesLister, all_gates_on
from nodeagent.podresources.providers import (
    CPUsProvider,
    DevicesProvider,
    DynamicResourcesProvider,
    MemoryProvider,
    PodsProvider,
)
from nodeagent.rpc.server import Service
from nodeagent.rpc.status import handle_errors

OFFLOAD_DEVICES = 2000  # GetAllocatableResources answers of more devices are encoded in a worker thread
V1_SERVICE = "v1.PodResourcesLister"
V1ALPHA1_SERVICE = "v1alpha1.PodResourcesLister"

Context = grpc.aio.ServicerContext[Any, Any]
M = TypeVar("M")


class _Memo(Generic[M]):
    """The last answer and the token it was built for; rebuilt whenever the token differs or is None."""

    def __init__(self) -> None:
        self._token: Hashable | None = None
        self._value: M | None = None

    def get(self, token: Hashable | None, build: Callable[[], M]) -> M:
        value = self.peek(token)
        if value is None:
            value = build()
            self.put(token, value)
        return value

    def peek(self, token: Hashable | None) -> M | None:
        """The kept answer if it was built for `token`, else None."""
        if token is not None and self._value is not None and token == self._token:
            return self._value
        return None

    def put(self, token: Hashable | None, value: M) -> None:
        self._token, self._value = token, value


class PodResourcesV1:
    """v1.PodResourcesLister; List returns encoded bytes (see add_v1)."""

    def __init__(self, lister: PodResourcesLister, instruments: Instruments) -> None:
        self._lister = lister
        self._encoder = convert.ListEncoderV1()
        self._list_memo: _Memo[bytes] = _Memo()
        self._allocatable_encoder = convert.AllocatableEncoderV1()
        self._allocatable_memo: _Memo[bytes | v1.AllocatableResourcesResponse] = _Memo()
        self._allocatable_lock = asyncio.Lock()
        version = "v1"
        self._requests_total = instruments.pr_requests_total.labels(version)
        self._requests_list = instruments.pr_requests_list.labels(version)
        self._requests_get = instruments.pr_requests_get.labels(version)
        self._requests_get_allocatable = instruments.pr_requests_get_allocatable.labels(version)
        self._errors_get = instruments.pr_errors_get.labels(version)
        self._errors_get_allocatable = instruments.pr_errors_get_allocatable.labels(version)

    @handle_errors
    async def List(self, request: v1.ListPodResourcesRequest, context: Context) -> bytes:
        self._requests_total.inc()
        self._requests_list.inc()
        lister, encoder = self._lister, self._encoder
        lister.update_allocated_devices()
        token = lister.generation()
        answer = self._list_memo.peek(token)
        if answer is None:  # built in chunks (a pod of 10,000 containers held the loop, issue 25)
            answer = encoder.encode(await lister.list_active_yielding())
            self._list_memo.put(token, answer)
        return answer

    @handle_errors
    async def Get(self, request: v1.GetPodResourcesRequest, context: Context) -> v1.GetPodResourcesResponse:
        self._requests_total.inc()
        self._requests_get.inc()
        try:
            pod = self._lister.get(request.pod_namespace, request.pod_name)
        except KubeletError:
            self._errors_get.inc()
            raise
        return convert.get_response_v1(pod)

    @handle_errors
    async def GetAllocatableResources(
        self, request: v1.AllocatableResourcesRequest, context: Context
    ) -> bytes | v1.AllocatableResourcesResponse:
        self._requests_total.inc()
        self._requests_get_allocatable.inc()
        try:
            token = self._lister.allocatable_generation()
            answer = self._allocatable_memo.peek(token)
            if answer is None:
                answer = await self._allocatable(token)
            return answer
        except KubeletError:
            self._errors_get_allocatable.inc()
            raise

    async def _allocatable(self, token: Hashable | None) -> bytes | v1.AllocatableResourcesResponse:
        """The answer as wire bytes when the devices provider keeps its devices per resource
        (convert.AllocatableEncoderV1), else built message by message. A large one is encoded
        in a worker thread (a new layout of 100,000 devices took ~1 s on the loop); everything
        it reads is taken here first, so it is the answer for `token` however long it takes."""
        lister = self._lister
        sets = lister.allocatable_device_sets()
        if sets is None:
            answer: bytes | v1.AllocatableResourcesResponse = convert.allocatable_response_v1(lister.allocatable())
            self._allocatable_memo.put(token, answer)
            return answer
        allocatable = lister.allocatable(devices=False)
        encode = self._allocatable_encoder.encode
        async with self._allocatable_lock:  # the encoder's memo is not for two threads at once
            if sum(len(s.devices) for s in sets) > OFFLOAD_DEVICES:
                answer = await asyncio.to_thread(encode, sets, allocatable.cpu_ids, allocatable.memory)
            else:
                answer = encode(sets, allocatable.cpu_ids, allocatable.memory)
        self._allocatable_memo.put(token, answer)
        return answer


class PodResourcesV1alpha1(v1alpha1_grpc.PodResourcesListerServicer):
    def __init__(self, lister: PodResourcesLister, instruments: Instruments) -> None:
        self._lister = lister
        self._memo: _Memo[v1alpha1.ListPodResourcesResponse] = _Memo()
        self._requests_total = instruments.pr_requests_total.labels("v1alpha1")

    @handle_errors
    async def List(
        self, request: v1alpha1.ListPodResourcesRequest, context: Context
    ) -> v1alpha1.ListPodResourcesResponse:
        self._requests_total.inc()
        lister = self._lister
        lister.update_allocated_devices()
        return self._memo.get(
            lister.generation(), lambda: convert.list_response_v1alpha1(lister.list_all_devices())
        )


def _serialize(message: Message | bytes) -> bytes:
    return message if isinstance(message, bytes) else message.SerializeToString()


def add_v1(servicer: PodResourcesV1, server: grpc.aio.Server) -> None:
    """Register v1.PodResourcesLister like the generated add_..._to_server, bytes allowed as answers."""
    handlers = {
        "List": grpc.unary_unary_rpc_method_handler(
            servicer.List, v1.ListPodResourcesRequest.FromString, _serialize
        ),
        "GetAllocatableResources": grpc.unary_unary_rpc_method_handler(
            servicer.GetAllocatableResources, v1.AllocatableResourcesRequest.FromString, _serialize
        ),
        "Get": grpc.unary_unary_rpc_method_handler(
            servicer.Get, v1.GetPodResourcesRequest.FromString, _serialize
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(V1_SERVICE, handlers),))
    # grpc-stubs lacks add_registered_method_handlers (grpcio >= 1.63); generated code calls it too.
    server.add_registered_method_handlers(V1_SERVICE, handlers)  # type: ignore[attr-defined]


def services(
    pods: PodsProvider,
    devices: DevicesProvider,
    cpus: CPUsProvider,
    memory: MemoryProvider,
    dynamic: DynamicResourcesProvider | None = None,
    *,
    instruments: Instruments,
    gates: Gates = all_gates_on,
) -> list[Service]:
    """The v1 and v1alpha1 PodResourcesLister services, for rpc.server.UnixServer."""
    lister = PodResourcesLister(pods, devices, cpus, memory, dynamic, gates)
    return services_for(lister, instruments)


def services_for(lister: PodResourcesLister, instruments: Instruments) -> list[Service]:
    v1_servicer = PodResourcesV1(lister, instruments)
    v1alpha1_servicer = PodResourcesV1alpha1(lister, instruments)
    out: Sequence[Service] = (
        Service(V1_SERVICE, lambda server: add_v1(v1_servicer, server)),
        Service(
            V1ALPHA1_SERVICE,
            lambda server: v1alpha1_grpc.add_PodResourcesListerServicer_to_server(v1alpha1_servicer, server),
        ),
    )
    return list(out)
