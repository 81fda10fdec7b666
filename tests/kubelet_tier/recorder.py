"""A recording gRPC proxy between a node (the real kubelet or nodeagent) and a plugin, so that the
tier compares the sequence and the arguments of every call each node makes.

It forwards bytes unchanged (generic handlers, no (de)serialisation on the path) and decodes a copy of
each message with the descriptors of nodeagent.apis for the record, one JSON line per event:
{"seq", "method", "request", "response" | "stream" | "code", "details"}.

Device plugins (`--mode device-plugin`): the plugin runs with its own folder PRIV and registers on
PRIV/kubelet.sock, served here and forwarded to the node's REAL/kubelet.sock. When a Register arrives
the proxy first serves REAL/<endpoint> (forwarded to PRIV/<endpoint>), so the node dials the proxy. When
the node's kubelet.sock is created again (a node restart) the proxy recreates PRIV/kubelet.sock, which
the plugin watches, so the plugin registers again as it would with the node itself.

DRA drivers (`--mode dra`): the driver runs with its own root PRIV; the proxy serves the node's
REAL/plugins_registry/<driver>-reg.sock and REAL/plugins/<driver>/dra.sock, forwards both, and its
GetInfo answer names the REAL endpoint (the only field it changes; the record keeps the driver's).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import IO, Any

import grpc
from google.protobuf import descriptor_pool, json_format, message_factory

import nodeagent.apis.deviceplugin.v1beta1.api_pb2
import nodeagent.apis.dra.v1.api_pb2
import nodeagent.apis.dra.v1beta1.api_pb2
import nodeagent.apis.dra_health.v1.api_pb2
import nodeagent.apis.dra_health.v1alpha1.api_pb2
import nodeagent.apis.dra_health.v1beta1.api_pb2  # noqa: F401
from nodeagent.apis.pluginregistration.v1 import api_pb2 as reg_pb2

STREAMING = frozenset({"ListAndWatch", "NodeWatchResources"})


def _message_class(method: str, output: bool) -> Any:
    service, name = method.lstrip("/").rsplit("/", 1)
    desc = descriptor_pool.Default().FindServiceByName(service).FindMethodByName(name)
    return message_factory.GetMessageClass(desc.output_type if output else desc.input_type)


def decode(method: str, data: bytes, output: bool) -> Any:
    try:
        msg = _message_class(method, output).FromString(data)
        return json_format.MessageToDict(msg, preserving_proto_field_name=True)
    except Exception as err:  # an unknown method still forwards; the record says why it could not decode
        return {"undecoded": f"{type(err).__name__}: {err}", "bytes": len(data)}


class Recorder:
    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._seq = 0

    def next(self) -> int:
        """A place in the sequence, taken when a call arrives (its record is written when it ends)."""
        self._seq += 1
        return self._seq

    def write(self, seq: int | None = None, **entry: Any) -> None:
        self._out.write(json.dumps({"seq": seq if seq is not None else self.next(), **entry}, sort_keys=True) + "\n")
        self._out.flush()


Rewrite = Callable[[str, bytes], bytes]
OnRequest = Callable[[str, bytes], Awaitable[None]]


class Forward(grpc.GenericRpcHandler):  # type: ignore[type-arg]  # generic only in the stubs
    """Every method on `upstream`, bytes in and out, each call recorded."""

    def __init__(self, upstream: str, recorder: Recorder, *, on_request: OnRequest | None = None,
                 rewrite: Rewrite | None = None) -> None:
        self._channel = grpc.aio.insecure_channel(f"unix://{upstream}")
        self._recorder = recorder
        self._on_request = on_request
        self._rewrite = rewrite

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = str(details.method)
        if method.startswith("/grpc."):
            return None  # reflection and health: not the node's calls to the plugin
        if method.rsplit("/", 1)[1] in STREAMING:
            return grpc.unary_stream_rpc_method_handler(self._stream(method))
        return grpc.unary_unary_rpc_method_handler(self._unary(method))

    def _unary(self, method: str) -> Callable[[bytes, grpc.aio.ServicerContext[Any, Any]], Awaitable[bytes]]:
        async def call(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            seq = self._recorder.next()
            if self._on_request is not None:
                await self._on_request(method, request)
            try:
                forward = self._channel.unary_unary(method, None, None)  # bytes both ways: no (de)serializers
                response: bytes = await forward(request, timeout=context.time_remaining())
            except grpc.aio.AioRpcError as err:
                self._recorder.write(seq, method=method, request=decode(method, request, False),
                                     code=err.code().name, details=err.details())
                await context.abort(err.code(), err.details() or "")
                raise
            self._recorder.write(seq, method=method, request=decode(method, request, False),
                                 response=decode(method, response, True), code="OK")
            return self._rewrite(method, response) if self._rewrite else response
        return call

    def _stream(self, method: str) -> Callable[[bytes, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[bytes]]:
        async def call(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[bytes]:
            self._recorder.write(method=method, request=decode(method, request, False), stream="open")
            upstream = self._channel.unary_stream(method, None, None)(request)
            try:
                async for item in upstream:
                    self._recorder.write(method=method, stream="message", response=decode(method, item, True))
                    yield item
            except grpc.aio.AioRpcError as err:
                self._recorder.write(method=method, stream="error", code=err.code().name, details=err.details())
                return
            finally:
                upstream.cancel()
            self._recorder.write(method=method, stream="end")
        return call


class Listener:
    """One grpc.aio server on one unix socket, replaced when asked."""

    def __init__(self, path: Path, handler: grpc.GenericRpcHandler[Any, Any]) -> None:
        self.path = path
        self._handler = handler
        self._server: grpc.aio.Server | None = None

    async def start(self) -> None:
        await self.stop()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((self._handler,))
        server.add_insecure_port(f"unix://{self.path}")
        await server.start()
        self._server = server

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(0)
            self._server = None


def _identity(path: Path) -> tuple[int, int] | None:
    """Which file is at `path` now: (inode, ctime in ns). The inode alone does not tell a socket made
    again from the one before: a file system may give the new file the inode the old one freed (a
    restarted kubelet's kubelet.sock went unnoticed in 1 run of 2, and its device plugin never
    registered again); the plugins watch kubelet.sock the same way (plugins/fake_device_plugin)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_ctime_ns)


async def device_plugin_proxy(real: Path, priv: Path, recorder: Recorder, stop: asyncio.Event) -> None:
    endpoints: dict[str, Listener] = {}

    async def on_register(method: str, request: bytes) -> None:
        if not method.endswith("/Register"):
            return
        endpoint = str(decode(method, request, False).get("endpoint", ""))
        if endpoint and endpoint not in endpoints:
            endpoints[endpoint] = Listener(real / endpoint, Forward(str(priv / endpoint), recorder))
        if endpoint:
            await endpoints[endpoint].start()  # the node cleared its folder when it started: serve again

    registration = Listener(priv / "kubelet.sock",
                            Forward(str(real / "kubelet.sock"), recorder, on_request=on_register))
    seen: tuple[int, int] | None = None
    started = False
    while not stop.is_set():
        now = _identity(real / "kubelet.sock")
        if now is not None and now != seen:
            if started:
                recorder.write(method="(proxy)", event="node kubelet.sock recreated")
            seen, started = now, True
            await registration.start()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.2)
    await registration.stop()
    for listener in endpoints.values():
        await listener.stop()


async def dra_proxy(real: Path, priv: Path, driver: str, recorder: Recorder, stop: asyncio.Event) -> None:
    real_endpoint = real / "plugins" / driver / "dra.sock"

    def rewrite(method: str, response: bytes) -> bytes:
        if not method.endswith("/GetInfo"):
            return response
        info = reg_pb2.PluginInfo.FromString(response)
        info.endpoint = str(real_endpoint)
        return info.SerializeToString()

    plugin = Listener(real_endpoint, Forward(str(priv / "plugins" / driver / "dra.sock"), recorder))
    priv_registration = priv / "plugins_registry" / f"{driver}-reg.sock"
    registration = Listener(real / "plugins_registry" / f"{driver}-reg.sock",
                            Forward(str(priv_registration), recorder, rewrite=rewrite))
    await plugin.start()
    seen: tuple[int, int] | None = None
    while not stop.is_set():
        # the node's registration socket appears when the driver's does (and again when the driver
        # serves a new one), so the node never dials a proxy with nothing behind it
        now = _identity(priv_registration)
        if now is not None and now != seen:
            seen = now
            await registration.start()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.2)
    await registration.stop()
    await plugin.stop()


async def _main(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    with open(args.log, "a") as out:
        recorder = Recorder(out)
        if args.mode == "device-plugin":
            await device_plugin_proxy(args.real, args.priv, recorder, stop)
        else:
            await dra_proxy(args.real, args.priv, args.driver, recorder, stop)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["device-plugin", "dra"], required=True)
    p.add_argument("--real", type=Path, required=True, help="the node's folder (device-plugins dir or root dir)")
    p.add_argument("--priv", type=Path, required=True, help="the plugin's folder (same shape)")
    p.add_argument("--driver", default="", help="DRA driver name (--mode dra)")
    p.add_argument("--log", type=Path, required=True)
    args = p.parse_args()
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
    asyncio.run(_main(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
