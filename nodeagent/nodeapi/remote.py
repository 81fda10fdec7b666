"""The node's API port over the network: any Kubernetes API server named by a kubeconfig.

Exists so a node process can join nodeagent's own API server in another process, or a real
cluster, doing over REST what a kubelet does: GET/POST/PUT/PATCH with a request timeout,
list+watch with resourceVersion and bookmarks (410 Gone: list again), every error typed
(404 NotFound, 409 Conflict/AlreadyExists, 410 Gone, unreachable/429/5xx Unavailable, other
statuses NodeAgentError with the server's Status message). Watches (reflector.py: each with a
server-side timeout and a liveness check of its own, so a frozen or half-open server is noticed)
and event posting (eventsink.py) run as background tasks that retry with a capped exponential
backoff on the injected clock, so an API server that goes away and comes back is caught up with,
never a crash. Every request's outcome goes to one reachability tracker (reachability.py), which
logs an outage once and its end once.

The HTTP client is kubernetes_asyncio's ApiClient (TLS, bearer tokens and client
certificates from the kubeconfig), used with raw paths: the node needs plain JSON, not the
generated models. A kubeconfig that does not parse is a ConfigError at start (exit 2).
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException

from nodeagent.errors import ConfigError, NodeAgentError, NotFound, RequestTooLarge, Unavailable, ValidationError
from nodeagent.nodeapi.eventsink import RemoteEventSink
from nodeagent.nodeapi.ports import LEASE_NAMESPACE, Gone
from nodeagent.nodeapi.reachability import Reachability, Unreachable, request_kind
from nodeagent.nodeapi.reflector import QueueWatch, queue_watch
from nodeagent.pods.events import Event
from nodeagent.util.clock import Clock, RealClock
from nodeagent.util.kubeclient import KubeconfigError, error_for_status, load_client, status_of
from nodeagent.util.tasks import cancel_and_wait

logger = logging.getLogger(__name__)

USER_AGENT = "kubelet/v1.37.2 (linux/amd64) nodeagent"
"""As the kubelet's client names itself (rest.DefaultKubernetesUserAgent): kube-apiserver records the
first word as the field manager of the node's writes, "kubelet", as the in-process writes are recorded
(inprocess.MANAGER)."""
CLAIMS_PATH = "/apis/resource.k8s.io/v1/resourceclaims"
SLICES_PATH = "/apis/resource.k8s.io/v1/resourceslices"
WATCH_READ_IDLE = 10.0
"""Seconds a watch may stay quiet before its liveness check asks whether the server still answers
(client-go's HTTP/2 ReadIdleTimeout is 30 s, then a ping; see `stream`)."""
WATCH_QUIET_LIMIT = 75.0
"""Seconds without an event or a bookmark after which a watch is dead even if the server answers
other requests (a half-open connection): kube-apiserver's bookmark frequency (1 min) + 15 s."""
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"


def typed_error(status: int, body: Any, what: str) -> NodeAgentError:
    """The typed error for an HTTP status and its Status body; `what` names the request."""
    message, reason = status_of(body, f"HTTP {status}")
    if status == 422:  # Invalid: the same request would be refused again (the node backs off)
        return ValidationError("", f"{what}: {message}")
    if status == 500 and (message == "etcdserver: request is too large"
                          or "trying to send message larger than max" in message):
        return RequestTooLarge(f"{what}: {message}")  # etcd's limit: refused again until the object shrinks
    return error_for_status(status, f"{what}: {message}", reason, gone=Gone,
                            other=lambda code, text: NodeAgentError(f"{text} (HTTP {code})"))


def server_text(err: NodeAgentError) -> str:
    """A refused request's error as client-go prints it, the server's message alone: typed_error's
    text without the request in front ("GET /path: ") nor the status code behind (" (HTTP 403)")."""
    text = re.sub(r" \(HTTP \d+\)$", "", str(err))
    return re.sub(r"^[A-Z]+ /\S*: ", "", text)


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

    def __init__(self, kubeconfig: Path, *, timeout: float = 10.0, node_name: str = "", clock: Clock | None = None,
                 rng: random.Random | None = None, watch_read_idle: float = WATCH_READ_IDLE,
                 watch_quiet_limit: float = WATCH_QUIET_LIMIT) -> None:
        check_kubeconfig(kubeconfig)  # ConfigError now, not at the first request
        self.kubeconfig = kubeconfig
        self.timeout = timeout
        self._node = node_name
        self._clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self.watch_read_idle = watch_read_idle
        self.watch_quiet_limit = watch_quiet_limit
        self._api: k8s.ApiClient | None = None
        self._host = ""
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._retired: list[k8s.ApiClient] = []  # dropped clients not closed yet (close() closes them)
        self._probe: asyncio.Task[bool] | None = None
        self.reachability = Reachability(self._clock, lambda: self.description)
        self.claims = ClaimCache(self)
        self.events = RemoteEventSink(self.request, node_name, self._clock)

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def rng(self) -> random.Random:
        return self._rng

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
        started = self._clock.monotonic()
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
            self.reachability.answered()
            raise typed_error(int(err.status or 0), err.body, what) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            raise await self._unreachable(what, err, request_kind(method, path), started) from None
        self.reachability.answered()
        if not 200 <= resp.status <= 299:
            raise typed_error(resp.status, data, what)
        if resp.status not in (200, 201, 202) or not data:
            return None
        try:
            return orjson.loads(data)
        except ValueError:
            return data.decode("utf-8", "replace")

    async def _unreachable(self, what: str, err: BaseException | str, kind: str, started: float) -> Unreachable:
        """A request (sent at `started`) that got no answer: reported to the tracker, the pooled
        connections dropped."""
        await self._drop()  # pooled connections to a server that went away are dead
        text = err if isinstance(err, str) else (str(err) or type(err).__name__)
        self.reachability.failed(kind, text, started)
        return Unreachable(f"{what} on {self.description}: {text}")

    async def responsive(self) -> bool:
        """Whether the server answers now: yes if any request got an answer within the watch read-idle
        time, else one GET /version (public to every identity, as upstream's system:public-info-viewer)
        shared by every watch that asks meanwhile. Any HTTP answer counts, a refusal too."""
        if self.reachability.answered_within(self.watch_read_idle):
            return True
        if self._probe is None or self._probe.done():
            self._probe = asyncio.get_running_loop().create_task(self._probe_once(), name="probe the API server")
        return await asyncio.shield(self._probe)

    async def _probe_once(self) -> bool:
        try:
            await self.request("GET", "/version", timeout=min(self.timeout, self.watch_read_idle))
        except Unreachable:
            return False
        except NodeAgentError:
            return True  # an answer (a refusal or a 5xx): the server is there
        return True

    async def stream(self, path: str, query: Sequence[tuple[str, str]], *,
                     timeout_seconds: int) -> AsyncIterator[dict[str, Any]]:
        """The events of one watch request, until the server ends it (its `timeoutSeconds`).

        A watch that is quiet is checked, since a frozen server or a connection that stopped
        forwarding without closing gives no error, only silence: quiet for the read-idle time
        (10 s), the server is asked whether it answers (`responsive`: free while other requests
        get answers); no answer, or quiet beyond the bookmark interval + slack (75 s) with a server
        that answers, and the watch is dead: the stream ends with Unreachable and the reflector
        lists again. Worst case for a frozen server: two read-idle periods and the probe's
        timeout, 30 s, within one node lease period (40 s). client-go gets the same from HTTP/2
        pings (ReadIdleTimeout 30 s + PingTimeout 15 s); an HTTP/1.1 stream has no ping. The
        client-side deadline is the server's timeout plus one request timeout."""
        api: Any = await self._client()
        what = f"WATCH {path}"
        started = self._clock.monotonic()
        try:
            resp = await api.call_api(
                path, "GET", query_params=list(query), header_params={"Accept": JSON},
                auth_settings=["BearerToken"], _return_http_data_only=True, _preload_content=False,
                _request_timeout=aiohttp.ClientTimeout(total=timeout_seconds + self.timeout,
                                                       sock_connect=self.timeout))
        except ApiException as err:
            self.reachability.answered()
            raise typed_error(int(err.status or 0), err.body, what) from None
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            raise await self._unreachable(what, err, "watch", started) from None
        self.reachability.answered()
        liveness = _Liveness(self, resp)
        checker = asyncio.get_running_loop().create_task(liveness.watch(), name=f"liveness of {what}")
        try:
            if resp.status >= 300:
                raise typed_error(resp.status, await resp.read(), what)
            while True:
                try:
                    line = await resp.content.readline()
                except (TimeoutError, aiohttp.ClientError, OSError) as err:
                    raise await self._unreachable(what, liveness.dead or err, "watch", liveness.last) from None
                if liveness.dead:
                    raise await self._unreachable(what, liveness.dead, "watch", liveness.last)
                if not line:
                    return
                liveness.heard()
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
            await cancel_and_wait([checker], ignore_errors=True)
            resp.release()

    def spawn(self, coro: Any, name: str) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks = [t for t in self._tasks if not t.done()]
        self._tasks.append(task)
        return task

    async def close(self) -> None:
        await self.events.flush(wait=False)
        await cancel_and_wait([*self._tasks, self._probe], ignore_errors=True)
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
        return queue_watch(self, self.spawn, path, field_selector, what)

    async def get_pod(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return await self._get_or_none(f"/api/v1/namespaces/{namespace}/pods/{name}")

    async def patch_pod_status(self, namespace: str, name: str, uid: str, status: Mapping[str, Any],
                               node_owned: frozenset[str], node_conditions: frozenset[str]) -> None:
        patch_status: dict[str, Any] = {k: None for k in node_owned if k not in status}
        patch_status.update(status)
        if "conditions" in status:
            patch_status["conditions"] = [_condition_patch(c, node_conditions) for c in status["conditions"]]
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

    async def put_slice(self, resource_slice: Mapping[str, Any], field_manager: str) -> None:
        meta = resource_slice.get("metadata") or {}
        query = [("fieldManager", field_manager)]  # not the kubelet's User-Agent: a DRA plugin publishes slices
        if meta.get("resourceVersion"):
            await self.request("PUT", f"{SLICES_PATH}/{meta.get('name', '')}", query=query, body=dict(resource_slice))
        else:
            await self.request("POST", SLICES_PATH, query=query, body=dict(resource_slice))

    async def delete_slice(self, name: str) -> None:
        await self.request("DELETE", f"{SLICES_PATH}/{name}")


class _Liveness:
    """The liveness check of one watch stream (RemoteAPI.stream): when the stream is dead, the
    response is closed, which ends the pending read, and `dead` says why."""

    def __init__(self, api: RemoteAPI, resp: Any) -> None:
        self._api = api
        self._resp = resp
        self.last = api.clock.monotonic()
        """When the stream last gave a line (or began): a dead watch's failure dates from then."""
        self.dead = ""

    def heard(self) -> None:
        self.last = self._api.clock.monotonic()

    async def watch(self) -> None:
        api = self._api
        clock = api.clock
        while True:
            quiet = clock.monotonic() - self.last
            if quiet < api.watch_read_idle:
                await clock.sleep(api.watch_read_idle - quiet)
                continue
            if quiet >= api.watch_quiet_limit:
                self.dead = f"no event nor bookmark for {quiet:.1f}s (the connection stopped forwarding)"
                break
            if not await api.responsive():
                quiet = clock.monotonic() - self.last
                if quiet < api.watch_read_idle:
                    continue  # the watch spoke while the server was asked
                self.dead = f"watch quiet for {quiet:.1f}s and the API server does not answer"
                break
            await clock.sleep(min(api.watch_read_idle, api.watch_quiet_limit - quiet))
        self._resp.close()


async def _close(api: k8s.ApiClient) -> None:
    try:
        await api.close()
    except Exception:  # a session that is already broken has nothing left to close
        logger.debug("closing the API client failed", exc_info=True)


def _version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


# The Node authorizer's refusal while its graph lacks the node's edge to an object (plugin/pkg/auth/
# authorizer/node/node_authorizer.go), and how long a claim's GET waits for the graph to catch up.
NO_RELATIONSHIP = "no relationship found between node"
FORBIDDEN_RETRIES = 5
FORBIDDEN_RETRY_DELAY = 0.2


class ClaimCache:
    """The DRA manager's view of ResourceClaims on a remote API: what the node's GETs returned (the
    kubelet's GET of each claim of its pods), with a change signal for pods waiting on a claim.

    No list or watch of ResourceClaims, as the kubelet makes none: kube-apiserver's Node authorizer
    lets a node GET only the claims of its own pods, and refuses a cluster-scope list (403; a
    reflector here logged one refusal per backoff on every joined node, seen in the kubelet tier's
    50-static-pod). A pod waiting for a claim is retried by its starter's backoff, as the kubelet's
    pod worker retries a failed prepare."""

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
                    raise NodeAgentError(server_text(err)) from None
                await self._api.clock.sleep(FORBIDDEN_RETRY_DELAY)
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

    async def changes(self) -> AsyncIterator[None]:
        while True:
            await self.changed.wait()
            self.changed.clear()
            yield None


_CONDITION_TEXTS = ("reason", "message")


def _condition_patch(condition: Mapping[str, Any], node_conditions: frozenset[str]) -> dict[str, Any]:
    """One condition of the status patch. Conditions merge by type in a strategic merge patch, so a
    field the new condition leaves out would keep its old value (a Ready turned True keeping reason
    ContainersNotReady and its message); the kubelet's two-way merge patch (statusutil.PatchPodStatus)
    sets such fields to null, and so does this, for the conditions the node owns."""
    out = dict(condition)
    if out.get("type") in node_conditions:
        for key in _CONDITION_TEXTS:
            out.setdefault(key, None)
    return out
