"""The few Kubernetes REST endpoints a DRA driver uses, over HTTP on loopback, backed by MemoryAPI.

Enough of kube-apiserver for KubeAccess and the drivers run as subprocesses: GET a Node,
GET a ResourceClaim (only the versions in `api.claim_versions` are served; others answer
"404 page not found" as an unknown group version does), list / watch (JSON lines, a
BOOKMARK first when asked, ERROR 410 for a compacted resourceVersion) / create / update /
delete (preconditions) resource.k8s.io/v1 ResourceSlices. Every request needs the bearer
token; refusals are metav1.Status bodies. `requests` records (method, path?query, body).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from nodeagent.errors import AlreadyExists, Conflict, NodeAgentError, NotFound, Unavailable
from plugins.dra_kit.kube import Gone
from tests.unit.dra_kit.memory_api import MemoryAPI

TOKEN = "test-token-0123456789"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
BODY: web.RequestKey[Any] = web.RequestKey("body", object)


def query_bool(value: str | None) -> bool:
    """A query boolean as the API server reads it (Convert_Slice_string_To_bool): absent, "0" and
    "false" in any case are false, anything else true (the Python client sends "True")."""
    return value is not None and value != "0" and value.lower() != "false"


def status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return web.json_response(body, status=code)


def _refusal(err: NodeAgentError) -> web.Response:
    if isinstance(err, NotFound):
        return status(404, "NotFound", str(err))
    if isinstance(err, AlreadyExists):
        return status(409, "AlreadyExists", str(err))
    if isinstance(err, Conflict):
        return status(409, "Conflict", str(err))
    if isinstance(err, Gone):
        return status(410, "Expired", str(err))
    if isinstance(err, Unavailable):
        return status(503, "ServiceUnavailable", str(err))
    return status(500, "InternalError", str(err))


class FakeAPIServer:
    def __init__(self, api: MemoryAPI | None = None, *, token: str = TOKEN) -> None:
        self.api = api or MemoryAPI()
        self.token = token
        self.requests: list[tuple[str, str, Any]] = []
        self.watch_as_list = False  # answer watches with a list (a server that missed the watch parameter)
        self.port = 0
        self._runner: web.AppRunner | None = None
        app = web.Application(middlewares=[self._auth])
        app.router.add_get("/api/v1/nodes/{name}", self._node)
        app.router.add_get("/apis/resource.k8s.io/{version}/namespaces/{ns}/resourceclaims/{name}", self._claim)
        app.router.add_get(SLICES, self._list_or_watch)
        app.router.add_post(SLICES, self._create)
        app.router.add_put(SLICES + "/{name}", self._update)
        app.router.add_delete(SLICES + "/{name}", self._delete)
        self.app = app

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, port: int = 0) -> None:
        self._runner = web.AppRunner(self.app, handle_signals=False, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port)
        await site.start()
        server: Any = site._server
        self.port = int(server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            self.api.disconnect("watch_slices")  # end open watches so cleanup does not wait on them
            await runner.cleanup()
            self.api.fail.discard("watch_slices")

    def kubeconfig(self, path: Path, *, token: str | None = None) -> Path:
        """Write a kubeconfig for this server (atomically, as the daemon does)."""
        doc = {
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": token or self.token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
        }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(doc))
        tmp.replace(path)
        return path

    # ------------------------------------------------------------------ handlers

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            body = json.loads(raw) if raw else None
        self.requests.append((request.method, request.path_qs, body))
        request[BODY] = body
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return status(401, "Unauthorized", "Unauthorized")
        try:
            response: web.StreamResponse = await handler(request)
        except NodeAgentError as err:
            return _refusal(err)
        return response

    async def _node(self, request: web.Request) -> web.Response:
        return web.json_response(await self.api.get_node(request.match_info["name"]))

    async def _claim(self, request: web.Request) -> web.Response:
        if request.match_info["version"] not in self.api.claim_versions:
            return web.Response(status=404, text="404 page not found\n", content_type="text/plain")
        obj = await self.api.get_claim(request.match_info["ns"], request.match_info["name"])
        obj["apiVersion"] = f"resource.k8s.io/{request.match_info['version']}"
        return web.json_response(obj)

    async def _list_or_watch(self, request: web.Request) -> web.StreamResponse:
        selector = request.query.get("fieldSelector", "")
        if not query_bool(request.query.get("watch")) or self.watch_as_list:
            items, rv = await self.api.list_slices(selector)
            return web.json_response({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList",
                                      "metadata": {"resourceVersion": rv}, "items": items})
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)

        async def send(kind: str, obj: dict[str, Any]) -> None:
            await response.write(json.dumps({"type": kind, "object": obj}).encode() + b"\n")

        timeout = float(request.query.get("timeoutSeconds", "0") or 0) or None
        try:
            if query_bool(request.query.get("allowWatchBookmarks")):
                await send("BOOKMARK", {"kind": "ResourceSlice", "apiVersion": "resource.k8s.io/v1",
                                        "metadata": {"resourceVersion": str(self.api.rv)}})
            async with asyncio.timeout(timeout):
                async for event in self.api.watch_slices(selector, request.query.get("resourceVersion", "")):
                    await send(event.type, event.object)
        except Gone as err:
            await send("ERROR", {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": str(err),
                                 "reason": "Expired", "code": 410})
        except (TimeoutError, Unavailable, ConnectionResetError):
            pass
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    async def _create(self, request: web.Request) -> web.Response:
        body = request[BODY]
        return web.json_response(await self.api.create_slice(body), status=201)

    async def _update(self, request: web.Request) -> web.Response:
        body = request[BODY]
        if body["metadata"].get("name") != request.match_info["name"]:
            return status(400, "BadRequest", "the name of the object does not match the name on the URL")
        return web.json_response(await self.api.update_slice(body))

    async def _delete(self, request: web.Request) -> web.Response:
        pre = (request[BODY] or {}).get("preconditions") or {}
        await self.api.delete_slice(request.match_info["name"], uid=str(pre.get("uid") or ""),
                                    resource_version=str(pre.get("resourceVersion") or ""))
        return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Success"})
