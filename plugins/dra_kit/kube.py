"""The driver's port to the Kubernetes API: its Node, ResourceClaims and its ResourceSlices over REST.

A DRA driver on nodeagent is an ordinary API client, as one on the upstream kubeletplugin
helper: it reads claims and keeps its slices published through the Kubernetes REST API named
by a kubeconfig, never through nodeagent's admin socket. `APIPort` is what the kit needs
(plain dicts in and out, typed errors); `KubeAccess` implements it with kubernetes_asyncio,
the asyncio port of the official client, whose Watch follows resourceVersion and bookmarks.

The kubeconfig file is read again whenever it changed (the daemon rewrites it at every start,
with a new port when it binds port 0) and the client is rebuilt after a connection failure
(pooled connections to a daemon that went away are dead). A missing file is Unavailable, so a
driver started before the daemon simply waits. Errors: 404 NotFound, 409 Conflict
(AlreadyExists on create), 410 Gone, unreachable / 429 / 5xx Unavailable, other statuses
APIError with the server's Status message.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.watch import Watch

from nodeagent.plugin_kit import NodeAgentError, NotFound, Unavailable
from nodeagent.plugin_kit.kube import KubeconfigError, error_for_status, load_client, status_of

logger = logging.getLogger(__name__)

GROUP = "resource.k8s.io"
SLICE_VERSION = "v1"
CLAIM_VERSIONS = ("v1", "v1beta2", "v1beta1")  # the kubeletplugin helper's order of preference
USER_AGENT = "nodeagent-dra-kit"


class Gone(NodeAgentError):
    """410: the resourceVersion a watch started from is too old; list again."""


class APIError(NodeAgentError):
    """Any other refusal (400, 401, 403, 422, ...): the HTTP status and the Status message."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str((self.object.get("metadata") or {}).get("resourceVersion") or "")


class APIPort(Protocol):
    """What the kit asks of the Kubernetes API. Raises NotFound / Conflict / Gone / Unavailable / APIError."""

    async def get_node(self, name: str) -> dict[str, Any]: ...

    async def get_claim(self, namespace: str, name: str) -> dict[str, Any]: ...

    async def list_slices(self, field_selector: str) -> tuple[list[dict[str, Any]], str]:
        """The matching resource.k8s.io/v1 ResourceSlices and the list's resourceVersion."""
        ...

    def watch_slices(self, field_selector: str, resource_version: str) -> AsyncIterator[WatchEvent]:
        """Events after resource_version (bookmarks included) until the server ends the watch."""
        ...

    async def create_slice(self, obj: Mapping[str, Any]) -> dict[str, Any]: ...

    async def update_slice(self, obj: Mapping[str, Any]) -> dict[str, Any]: ...

    async def delete_slice(self, name: str, *, uid: str, resource_version: str) -> None: ...

    async def close(self) -> None: ...


def api_error(err: ApiException) -> NodeAgentError:
    """The typed error for a refused request."""
    status = int(err.status or 0)
    message, reason = status_of(err.body, str(err.reason or f"HTTP {status}"))
    return error_for_status(status, message, reason, gone=Gone, other=APIError)


class KubeAccess:
    """APIPort over the Kubernetes REST API described by a kubeconfig file."""

    def __init__(self, kubeconfig: Path, *, timeout: float = 10.0, watch_timeout: int = 300) -> None:
        self.kubeconfig = kubeconfig
        self.timeout = timeout
        self.watch_timeout = watch_timeout  # seconds the server keeps one watch open (then we resume)
        self._api: k8s.ApiClient | None = None
        self._loaded: tuple[int, int, int] | None = None
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ the client

    def _stamp(self) -> tuple[int, int, int]:
        try:
            st = os.stat(self.kubeconfig)
        except OSError as err:
            raise Unavailable(f"kubeconfig {self.kubeconfig}: {err.strerror or err}") from None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    async def _client(self) -> k8s.ApiClient:
        async with self._lock:
            stamp = self._stamp()
            if self._api is not None and stamp == self._loaded:
                return self._api
            await self._drop()
            try:
                api = await load_client(self.kubeconfig, USER_AGENT)
            except KubeconfigError as err:
                raise Unavailable(str(err)) from None
            self._api, self._loaded = api, stamp
            logger.info("kubernetes API client ready server=%s kubeconfig=%s", api.configuration.host, self.kubeconfig)
            return api

    async def _drop(self) -> None:
        api, self._api, self._loaded = self._api, None, None
        if api is not None:
            try:
                await api.close()
            except Exception:  # a session that is already broken has nothing left to close
                logger.debug("closing the API client failed", exc_info=True)

    async def _unreachable(self, err: BaseException) -> Unavailable:
        """A transport failure: forget the client (its pooled connections are dead)."""
        server = self._api.configuration.host if self._api is not None else str(self.kubeconfig)
        async with self._lock:
            await self._drop()
        return Unavailable(f"kubernetes API {server}: {err or type(err).__name__}")

    async def close(self) -> None:
        async with self._lock:
            await self._drop()

    async def _call(self, what: str, *args: Any, **kwargs: Any) -> Any:
        """CustomObjectsApi.<what>(*args) with the request timeout; errors typed."""
        api = await self._client()
        custom: Any = k8s.CustomObjectsApi(api)
        try:
            return await getattr(custom, what)(*args, _request_timeout=self.timeout, **kwargs)
        except ApiException as err:
            raise api_error(err) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            raise await self._unreachable(err) from None

    # ------------------------------------------------------------------ APIPort

    async def get_node(self, name: str) -> dict[str, Any]:
        api: Any = await self._client()
        try:
            node = await api.call_api(
                "/api/v1/nodes/{name}", "GET", path_params={"name": name},
                header_params={"Accept": "application/json"}, response_types_map={200: "object"},
                auth_settings=["BearerToken"], _return_http_data_only=True, _request_timeout=self.timeout)
        except ApiException as err:
            raise api_error(err) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            raise await self._unreachable(err) from None
        return _as_object(node, f"node {name}")

    async def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        first: NotFound | None = None
        for version in CLAIM_VERSIONS:
            try:
                obj = await self._call("get_namespaced_custom_object", GROUP, version, namespace, "resourceclaims",
                                       name)
            except NotFound as err:
                first = first or err  # this version may not be served: try the next one
                continue
            return _as_object(obj, f"ResourceClaim {namespace}/{name}")
        assert first is not None
        raise first

    async def list_slices(self, field_selector: str) -> tuple[list[dict[str, Any]], str]:
        out = _as_object(await self._call("list_cluster_custom_object", GROUP, SLICE_VERSION, "resourceslices",
                                          field_selector=field_selector), "ResourceSliceList")
        items = [dict(i) for i in out.get("items") or () if isinstance(i, Mapping)]
        return items, str((out.get("metadata") or {}).get("resourceVersion") or "")

    async def watch_slices(self, field_selector: str, resource_version: str) -> AsyncIterator[WatchEvent]:
        api = await self._client()
        custom: Any = k8s.CustomObjectsApi(api)
        watch = Watch(return_type="object")
        stream: Any = watch.stream(
            custom.list_cluster_custom_object, GROUP, SLICE_VERSION, "resourceslices",
            field_selector=field_selector, resource_version=resource_version, allow_watch_bookmarks=True,
            timeout_seconds=self.watch_timeout)
        try:
            while True:
                try:
                    raw = await stream.next()
                except StopAsyncIteration:
                    return
                except ApiException as err:
                    raise _watch_error(err) from None
                except (TimeoutError, aiohttp.ClientError, OSError) as err:
                    raise await self._unreachable(err) from None
                except Exception as err:  # Watch raises a bare Exception for a line that is no event
                    raise APIError(0, f"watch resourceslices: {err}") from None
                if not isinstance(raw, dict) or not isinstance(raw.get("raw_object"), dict):
                    # not a watch event: the server answered the watch with something else (a 404 page)
                    raise APIError(0, f"watch resourceslices: unexpected answer {str(raw)[:200]!r}")
                yield WatchEvent(str(raw.get("type", "")).upper(), raw["raw_object"])
        finally:
            await watch.close()

    async def create_slice(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        out = await self._call("create_cluster_custom_object", GROUP, SLICE_VERSION, "resourceslices", dict(obj))
        return _as_object(out, "ResourceSlice")

    async def update_slice(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        name = str((obj.get("metadata") or {}).get("name", ""))
        out = await self._call("replace_cluster_custom_object", GROUP, SLICE_VERSION, "resourceslices", name,
                               dict(obj))
        return _as_object(out, f"ResourceSlice {name}")

    async def delete_slice(self, name: str, *, uid: str, resource_version: str) -> None:
        # Preconditions as the resourceslice controller sends them: only the slice it looked at goes.
        body = {"preconditions": {"uid": uid, "resourceVersion": resource_version}}
        await self._call("delete_cluster_custom_object", GROUP, SLICE_VERSION, "resourceslices", name, body=body)


def _watch_error(err: ApiException) -> NodeAgentError:
    """A watch's ERROR event arrives as ApiException(status=code, reason="Reason: message")."""
    if err.body is not None:
        return api_error(err)
    status = int(err.status or 0)
    text = str(err.reason or f"HTTP {status}")
    if status == 410:
        return Gone(text)
    if status == 404:
        return NotFound(text)
    if status in (0, 429) or status >= 500:
        return Unavailable(text)
    return APIError(status, text)


def _as_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise APIError(0, f"{what}: the server answered {type(value).__name__}, not an object")
    return value
