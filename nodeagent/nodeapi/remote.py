"""The node's API port over the network: any Kubernetes API server named by a kubeconfig.

Exists so a node process can join nodeagent's own API server in another process, or a real
cluster, doing over REST what a kubelet does: GET/POST/PUT/PATCH with a request timeout,
list+watch with resourceVersion and bookmarks (410 Gone: list again), every error typed
(404 NotFound, 409 Conflict/AlreadyExists, 410 Gone, unreachable/429/5xx Unavailable, other
statuses NodeAgentError with the server's Status message). Watches and event posting (eventsink.py) run as
background tasks that retry with a capped exponential backoff and say so in the log, so an
API server that goes away and comes back is caught up with, never a crash.

The HTTP client is kubernetes_asyncio's ApiClient (TLS, bearer tokens and client
certificates from the kubeconfig), used with raw paths: the node needs plain JSON, not the
generated models. A kubeconfig that does not parse is a ConfigError at start (exit 2).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException

from nodeagent.errors import ConfigError, NodeAgentError, NotFound, Unavailable, ValidationError
from nodeagent.nodeapi.eventsink import RemoteEventSink
from nodeagent.nodeapi.ports import DELETED, LEASE_NAMESPACE, SYNC, Gone, PodEvent
from nodeagent.pods.events import Event
from nodeagent.util.backoff import Backoff
from nodeagent.util.kubeclient import KubeconfigError, error_for_status, load_client, status_of
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

USER_AGENT = "nodeagent-node"
CLAIMS_PATH = "/apis/resource.k8s.io/v1/resourceclaims"
SLICES_PATH = "/apis/resource.k8s.io/v1/resourceslices"
WATCH_TIMEOUT = 300  # seconds the server keeps one watch open; then the node watches again from there
BACKOFF_START, BACKOFF_CAP = 0.5, 10.0
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


def typed_error(status: int, body: Any, what: str) -> NodeAgentError:
    """The typed error for an HTTP status and its Status body; `what` names the request."""
    message, reason = status_of(body, f"HTTP {status}")
    if status == 422:  # Invalid: the same request would be refused again (the node backs off)
        return ValidationError("", f"{what}: {message}")
    return error_for_status(status, f"{what}: {message}", reason, gone=Gone,
                            other=lambda code, text: NodeAgentError(f"{text} (HTTP {code})"))


def check_kubeconfig(kubeconfig: Path) -> None:
    """Read and parse the kubeconfig now: a file that is missing, does not parse or names no
    cluster is a ConfigError naming it (exit 2), not a retry loop."""
    try:
        doc = yaml.safe_load(kubeconfig.read_text())
    except OSError as err:
        raise ConfigError(f"kubeconfig {kubeconfig}: {err.strerror or err}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        detail = " ".join(str(err).split())
        raise ConfigError(f"kubeconfig {kubeconfig}: does not parse: {detail}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("clusters"), list) or not doc["clusters"]:
        raise ConfigError(f"kubeconfig {kubeconfig}: not a kubeconfig (no clusters in it)")


class RemoteAPI:
    """NodeAPI over the Kubernetes REST API of a kubeconfig."""

    def __init__(self, kubeconfig: Path, *, timeout: float = 10.0, node_name: str = "") -> None:
        check_kubeconfig(kubeconfig)  # ConfigError now, not at the first request
        self.kubeconfig = kubeconfig
        self.timeout = timeout
        self._node = node_name
        self._api: k8s.ApiClient | None = None
        self._host = ""
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._retired: list[k8s.ApiClient] = []  # dropped clients not closed yet (close() closes them)
        self.claims = ClaimCache(self)
        self.events = RemoteEventSink(self.request, node_name)

    @property
    def description(self) -> str:
        return self._host or str(self.kubeconfig)

    # ------------------------------------------------------------------ transport

    async def _client(self) -> k8s.ApiClient:
        async with self._lock:
            if self._api is not None:
                return self._api
            try:
                api = await load_client(self.kubeconfig, USER_AGENT)
            except KubeconfigError as err:
                raise Unavailable(str(err)) from None
            self._api, self._host = api, str(api.configuration.host)
            return api

    async def _drop(self) -> None:
        """Use a new client from the next request on (pooled connections to a server that went away
        are dead); the old one is closed once the requests still running on it are over."""
        async with self._lock:
            api, self._api = self._api, None
        if api is not None:
            self._retired.append(api)
            self.spawn(self._close_later(api), "close retired API client")

    async def _close_later(self, api: k8s.ApiClient) -> None:
        await asyncio.sleep(self.timeout * 2 + 1)
        if any(a is api for a in self._retired):
            self._retired = [a for a in self._retired if a is not api]
            await _close(api)

    async def request(self, method: str, path: str, *, query: Sequence[tuple[str, str]] = (),
                      body: Any = None, content_type: str = JSON, timeout: float | None = None) -> Any:
        """One REST call; the decoded JSON answer, or a typed error.

        The answer is read raw and decoded with orjson (kubernetes_asyncio's own path decodes
        every answer with the stdlib's json: a node's status patches and Lease renewals get the
        whole object back)."""
        api: Any = await self._client()
        what = f"{method} {path}"
        try:
            resp = await api.call_api(
                path, method, query_params=list(query), header_params={"Accept": JSON, "Content-Type": content_type},
                body=body, auth_settings=["BearerToken"], _return_http_data_only=True, _preload_content=False,
                _request_timeout=timeout or self.timeout)
            try:
                data = await resp.read()
            finally:
                resp.release()
        except ApiException as err:
            raise typed_error(int(err.status or 0), err.body, what) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            await self._drop()  # pooled connections to a server that went away are dead
            raise Unavailable(f"{what} on {self.description}: {err or type(err).__name__}") from None
        if not 200 <= resp.status <= 299:
            raise typed_error(resp.status, data, what)
        if resp.status not in (200, 201, 202) or not data:
            return None
        try:
            return orjson.loads(data)
        except ValueError:
            return data.decode("utf-8", "replace")

    async def stream(self, path: str, query: Sequence[tuple[str, str]]) -> AsyncIterator[dict[str, Any]]:
        """The events of one watch request, until the server ends it."""
        api: Any = await self._client()
        what = f"WATCH {path}"
        try:
            resp = await api.call_api(
                path, "GET", query_params=list(query), header_params={"Accept": JSON},
                auth_settings=["BearerToken"], _return_http_data_only=True, _preload_content=False,
                _request_timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout,
                                                       sock_read=WATCH_TIMEOUT + 30))
        except ApiException as err:
            raise typed_error(int(err.status or 0), err.body, what) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            await self._drop()
            raise Unavailable(f"{what} on {self.description}: {err or type(err).__name__}") from None
        try:
            if resp.status >= 300:
                raise typed_error(resp.status, await resp.read(), what)
            while True:
                try:
                    line = await resp.content.readline()
                except (TimeoutError, aiohttp.ClientError, OSError) as err:
                    await self._drop()
                    raise Unavailable(f"{what} on {self.description}: {err or type(err).__name__}") from None
                if not line:
                    return
                if not line.strip():
                    continue
                try:
                    event = orjson.loads(line)  # every pod event of the process's nodes: the fast decoder
                except ValueError:
                    raise NodeAgentError(f"{what}: not a watch event: {line[:200]!r}") from None
                if not isinstance(event, dict):
                    raise NodeAgentError(f"{what}: not a watch event: {line[:200]!r}")
                if event.get("type") == "ERROR":
                    obj = event.get("object") or {}
                    raise typed_error(int(obj.get("code") or 0), obj, what)
                yield event
        finally:
            resp.release()

    def spawn(self, coro: Any, name: str) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(task)
        return task

    async def close(self) -> None:
        await self.events.flush(wait=False)
        await cancel_and_wait(self._tasks, ignore_errors=True)
        self._tasks.clear()
        api, self._api = self._api, None
        # the retired clients too: their delayed close was just cancelled, and an aiohttp session
        # left open logs `Unclosed client session` when the process stops (a node stopped after
        # its control plane had retired one per failed request)
        retired, self._retired = self._retired, []
        for old in [*retired, *([api] if api is not None else [])]:
            await _close(old)

    async def _get_or_none(self, path: str) -> Mapping[str, Any] | None:
        try:
            out = await self.request("GET", path)
        except NotFound:
            return None
        return out if isinstance(out, dict) else None

    # ------------------------------------------------------------------ Node

    async def get_node(self, name: str) -> Mapping[str, Any] | None:
        return await self._get_or_none(f"/api/v1/nodes/{name}")

    async def create_node(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        out = await self.request("POST", "/api/v1/nodes", body=dict(node))
        return dict(out)

    async def patch_node_labels(self, name: str, labels: Mapping[str, str | None]) -> None:
        await self.request("PATCH", f"/api/v1/nodes/{name}", body={"metadata": {"labels": dict(labels)}},
                           content_type=MERGE_PATCH)

    async def update_node_status(self, name: str, status: Mapping[str, Any]) -> None:
        current = await self.get_node(name)
        if current is None:
            raise NotFound(f'nodes "{name}" not found')
        await self.request("PUT", f"/api/v1/nodes/{name}/status", body={**current, "status": dict(status)})

    # ------------------------------------------------------------------ Lease

    async def get_lease(self, name: str) -> Mapping[str, Any] | None:
        return await self._get_or_none(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{name}")

    async def create_lease(self, lease: Mapping[str, Any]) -> Mapping[str, Any]:
        return dict(await self.request("POST", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases",
                                       body=dict(lease)))

    async def update_lease(self, lease: Mapping[str, Any]) -> Mapping[str, Any]:
        name = str((lease.get("metadata") or {}).get("name", ""))
        return dict(await self.request(
            "PUT", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{name}", body=dict(lease)))

    # ------------------------------------------------------------------ Pods

    def watch_pods(self, node_name: str, *, unscheduled: bool = False) -> QueueWatch:
        # a node that joins a cluster has its scheduler: `unscheduled` (self-binding) is in-process only
        return self._watch("/api/v1/pods", f"spec.nodeName={node_name}", f"pods of node {node_name}")

    def watch_bound_pods(self) -> QueueWatch:
        return self._watch("/api/v1/pods", "spec.nodeName!=", "pods bound to nodes")

    def watch_claims(self) -> QueueWatch:
        return self._watch(CLAIMS_PATH, "", "resourceclaims")

    def _watch(self, path: str, field_selector: str, what: str) -> QueueWatch:
        watch = QueueWatch()
        reflector = Reflector(self, path, field_selector, what,
                              on_list=lambda items: watch.put(PodEvent(SYNC, items=items)),
                              on_event=lambda kind, obj: watch.put(PodEvent(kind, obj)))
        watch.task = self.spawn(reflector.run(), f"watch {what}")
        return watch

    async def get_pod(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return await self._get_or_none(f"/api/v1/namespaces/{namespace}/pods/{name}")

    async def patch_pod_status(self, namespace: str, name: str, uid: str, status: Mapping[str, Any],
                               node_owned: frozenset[str], node_conditions: frozenset[str]) -> None:
        patch_status: dict[str, Any] = {k: None for k in node_owned if k not in status}
        patch_status.update(status)
        body: dict[str, Any] = {"status": patch_status}
        if uid:
            body["metadata"] = {"uid": uid}
        await self.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status", body=body,
                           content_type=STRATEGIC_PATCH)

    async def create_pod(self, pod: Mapping[str, Any]) -> None:
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        await self.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=dict(pod))

    async def delete_pod(self, namespace: str, name: str, uid: str | None = None,
                         grace_period: int | None = None) -> None:
        body: dict[str, Any] = {}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        if uid:
            body["preconditions"] = {"uid": uid}
        await self.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", body=body or None)

    async def bind_pod(self, namespace: str, name: str, node_name: str) -> None:
        await self.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body={
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}})

    # ------------------------------------------------------------------ events

    def post_event(self, event: Event) -> None:
        self.events.post(event)

    def start_events(self) -> None:
        """Post queued events in the background (the kubelet's event broadcaster: eventsink.py)."""
        self.spawn(self.events.run(), "post events")

    # ------------------------------------------------------------------ DRA

    async def get_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        claim = await self._get_or_none(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}")
        if claim is not None:
            self.claims.put(claim)
        return claim

    async def delete_node_slices(self, node_name: str, driver: str | None = None) -> int:
        selector = f"spec.nodeName={node_name}" + (f",spec.driver={driver}" if driver else "")
        listed = await self.request("GET", SLICES_PATH, query=[("fieldSelector", selector)])
        count = len(listed.get("items") or []) if isinstance(listed, dict) else 0
        if count:
            await self.request("DELETE", SLICES_PATH, query=[("fieldSelector", selector)])
        return count


    # ------------------------------------------------------------------ many nodes in one process

    async def list_nodes(self, label_selector: str) -> list[Mapping[str, Any]]:
        return await self._list("/api/v1/nodes", "Node", label_selector)

    async def list_slices(self, label_selector: str) -> list[Mapping[str, Any]]:
        return await self._list(SLICES_PATH, "ResourceSlice", label_selector)

    async def _list(self, path: str, kind: str, label_selector: str) -> list[Mapping[str, Any]]:
        listed = await self.request("GET", path, query=[("labelSelector", label_selector)])
        items = (listed.get("items") or []) if isinstance(listed, dict) else []
        return [{"kind": kind, **i} for i in items if isinstance(i, Mapping)]

    async def put_slice(self, resource_slice: Mapping[str, Any]) -> None:
        meta = resource_slice.get("metadata") or {}
        if meta.get("resourceVersion"):
            await self.request("PUT", f"{SLICES_PATH}/{meta.get('name', '')}", body=dict(resource_slice))
        else:
            await self.request("POST", SLICES_PATH, body=dict(resource_slice))

    async def delete_slice(self, name: str) -> None:
        await self.request("DELETE", f"{SLICES_PATH}/{name}")


async def _close(api: k8s.ApiClient) -> None:
    try:
        await api.close()
    except Exception:  # a session that is already broken has nothing left to close
        logger.debug("closing the API client failed", exc_info=True)


class QueueWatch:
    """PodWatch fed by a Reflector task."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[PodEvent] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    def put(self, event: PodEvent) -> None:
        self._queue.put_nowait(event)

    async def next(self) -> PodEvent:
        return await self._queue.get()

    def get_nowait(self) -> PodEvent | None:
        try:
            return self._queue.get_nowait()
        except asyncio.QueueEmpty:
            return None

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()


class Reflector:
    """list, then watch from the list's resourceVersion (bookmarks on); 410 or a failure: list again,
    after a backoff when the server was unreachable (logged once per outage, and when it is back)."""

    def __init__(self, api: RemoteAPI, path: str, field_selector: str, what: str, *,
                 on_list: Callable[[list[Mapping[str, Any]]], None],
                 on_event: Callable[[str, Mapping[str, Any]], None]) -> None:
        self._api = api
        self._path = path
        self._selector = field_selector
        self._what = what
        self._on_list = on_list
        self._on_event = on_event
        self.synced = asyncio.Event()

    def _query(self) -> list[tuple[str, str]]:
        return [("fieldSelector", self._selector)] if self._selector else []

    async def run(self) -> None:
        failures = 0
        backoff = Backoff(BACKOFF_START, BACKOFF_CAP)
        while True:
            try:
                listed = await self._api.request("GET", self._path, query=self._query())
                # list items carry no kind
                items: list[Mapping[str, Any]] = [{"kind": _kind_of(self._path), **i}
                                                  for i in listed.get("items") or [] if isinstance(i, Mapping)]
                self._on_list(items)
                self.synced.set()
                if failures:
                    logger.info("API reachable again: %s listed api=%s", self._what, self._api.description)
                failures = 0
                rv = str((listed.get("metadata") or {}).get("resourceVersion") or "")
                while True:
                    query = [*self._query(), ("watch", "true"), ("resourceVersion", rv),
                             ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(WATCH_TIMEOUT))]
                    async for raw in self._api.stream(self._path, query):
                        obj = raw.get("object") or {}
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        kind = str(raw.get("type", ""))
                        if kind in ("ADDED", "MODIFIED", DELETED):
                            self._on_event(kind, obj)
            except asyncio.CancelledError:
                raise
            except Gone:
                logger.info("watch expired (410): listing %s again", self._what)
            except Exception as err:
                failures += 1
                wait = backoff.delay(failures)
                level = logging.WARNING if failures == 1 or failures % 20 == 0 else logging.DEBUG
                logger.log(level, "cannot watch %s api=%s err=%s (retry in %.1fs)", self._what,
                           self._api.description, err or type(err).__name__, wait)
                await asyncio.sleep(wait)


def _version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _kind_of(path: str) -> str:
    return {"pods": "Pod", "resourceclaims": "ResourceClaim"}.get(path.rsplit("/", 1)[-1], "")


# The Node authorizer's refusal while its graph lacks the node's edge to an object (plugin/pkg/auth/
# authorizer/node/node_authorizer.go), and how long a claim's GET waits for the graph to catch up.
NO_RELATIONSHIP = "no relationship found between node"
FORBIDDEN_RETRIES = 5
FORBIDDEN_RETRY_DELAY = 0.2


class ClaimCache:
    """The DRA manager's view of ResourceClaims on a remote API: a reflector over every claim,
    topped up by the node's GETs, with a change signal for pods waiting on a claim."""

    def __init__(self, api: RemoteAPI) -> None:
        self._api = api
        self._claims: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._fetching: set[tuple[str, str]] = set()
        self.changed = asyncio.Event()

    def put(self, claim: Mapping[str, Any], deleted: bool = False) -> None:
        """Keep (or drop) a claim; the change signal only when it changed (a GET of the same
        resourceVersion is no change: the retries it would cause would GET it again)."""
        meta = claim.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        old = self._claims.get(key)
        if deleted:
            if self._claims.pop(key, None) is None:
                return
        elif old is not None and _version(old) and _version(old) == _version(claim):
            return
        else:
            self._claims[key] = claim
        self.changed.set()

    async def fetch(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The claim from the API server now (the kubelet's GET at each prepare), kept here too.

        Intended difference: a GET refused by kube-apiserver's Node authorizer because its graph
        has no edge from this node to the claim yet ("no relationship found", HTTP 403) is tried
        again for up to a second. The graph follows pod bindings through an informer; nodeagent
        reaches the prepare within milliseconds of the binding, the kubelet later (pod worker,
        sandbox set-up), so the kubelet does not meet this lag and never reports it as a failed
        prepare (measured in the kubelet tier, scenario 45-dra-claim-deleted)."""
        for attempt in range(FORBIDDEN_RETRIES + 1):
            try:
                claim = await self._api.get_claim(namespace, name)
                break
            except NodeAgentError as err:
                if NO_RELATIONSHIP not in str(err) or attempt == FORBIDDEN_RETRIES:
                    raise
                await asyncio.sleep(FORBIDDEN_RETRY_DELAY)
        if claim is None:
            self.put({"metadata": {"namespace": namespace, "name": name}}, deleted=True)
        return claim

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The claim as last seen; on a miss the kubelet's GET goes out in the background (the pod
        waiting for it is retried on the change signal when it arrives)."""
        claim = self._claims.get((namespace, name))
        if claim is None and (namespace, name) not in self._fetching:
            self._fetching.add((namespace, name))
            self._api.spawn(self._fetch(namespace, name), f"GET resourceclaim {namespace}/{name}")
        return claim

    async def _fetch(self, namespace: str, name: str) -> None:
        try:
            await self._api.get_claim(namespace, name)  # puts it here when found
        except NodeAgentError as err:
            logger.info("ResourceClaim not read claim=%s/%s err=%s", namespace, name, err)
        finally:
            self._fetching.discard((namespace, name))

    def start(self) -> Reflector:
        def listed(items: list[Mapping[str, Any]]) -> None:
            self._claims.clear()
            for item in items:
                self.put(item)
            self.changed.set()

        reflector = Reflector(self._api, CLAIMS_PATH, "", "resourceclaims", on_list=listed,
                              on_event=lambda kind, obj: self.put(obj, deleted=kind == DELETED))
        self._api.spawn(reflector.run(), "watch resourceclaims")
        return reflector

    async def changes(self) -> AsyncIterator[None]:
        while True:
            await self.changed.wait()
            self.changed.clear()
            yield None
