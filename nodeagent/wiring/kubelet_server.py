"""Wiring of a node's kubelet endpoint (nodeagent/kubeletserver): settings, credentials, reviews, content.

Exists because the endpoint needs parts that live in different places: the metrics port's
handlers, the pod manager's pods and events, the device and DRA managers' allocations (the
environment /containerLogs shows), the TLS files under rootDir, and whoever answers the
TokenReviews and SubjectAccessReviews: the embedded API server of this process (called in
place once it runs: `Reviewers.embedded` is set by the daemon after the server started) or, for
a node that joined a cluster, the API server of its kubeconfig over HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from nodeagent.config import Config
from nodeagent.devices.manager import DeviceManager
from nodeagent.dra.manager import DRAManager
from nodeagent.errors import ConfigError, NotFound
from nodeagent.host.address import resolve_node_ips
from nodeagent.host.model import HostProbe
from nodeagent.kubeletserver import logs as logtext
from nodeagent.kubeletserver import options as server_options
from nodeagent.kubeletserver import runtime_pods, tlsfiles
from nodeagent.kubeletserver.auth import User
from nodeagent.kubeletserver.resource_metrics import ProcessStart, ResourceMetrics
from nodeagent.kubeletserver.server import Authn, Content, KubeletServer, LogError
from nodeagent.kubeletserver.webhook import ReviewError, WebhookReviews
from nodeagent.metrics.http import NodeHTTPServer, serve_metrics
from nodeagent.nodeapi.ports import NodeAPI
from nodeagent.objects.pod.output import pod_to_manifest
from nodeagent.pods.events import EventRecorder
from nodeagent.pods.manager import PodManager
from nodeagent.util.clock import Clock
from nodeagent.wiring.running import Running

logger = logging.getLogger(__name__)

# Where a container runtime looks for CDI specs (containerd's and CRI-O's defaults), then where
# the fake DRA driver writes them by default (next to the kubelet root).
CDI_DIRS = (Path("/etc/cdi"), Path("/var/run/cdi"))


class Reviewers:
    """Who answers the endpoint's reviews; `embedded` is the in-process API server's review function
    (kind, body) -> answer, set once it serves; `remote` posts over HTTP for a node that joined."""

    def __init__(self, remote: Callable[[str, Mapping[str, Any]], Any] | None = None) -> None:
        self.remote = remote
        self.embedded: Callable[[str, Mapping[str, Any]], Mapping[str, Any]] | None = None

    async def post(self, path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.remote is not None:
            answer = await self.remote(path, body)
            if not isinstance(answer, Mapping):
                raise ReviewError(f"{path}: the answer is not an object")
            return answer
        if self.embedded is None:
            raise ReviewError("no API server answers reviews yet (it starts after the node registers)")
        return self.embedded(path, body)


def _kubeconfig_ca(kubeconfig: Path) -> bytes | None:
    """The certificate authority of the kubeconfig's first cluster (data or file); None without one."""
    try:
        doc = yaml.safe_load(kubeconfig.read_text())
        cluster = (doc.get("clusters") or [{}])[0].get("cluster") or {}
    except (OSError, yaml.YAMLError, AttributeError, IndexError):
        return None
    if cluster.get("certificate-authority-data"):
        return base64.b64decode(cluster["certificate-authority-data"])
    if cluster.get("certificate-authority"):
        try:
            return (kubeconfig.parent / str(cluster["certificate-authority"])).read_bytes()
        except OSError:
            return None
    return None


def _hosts(address: str, node_ips: Sequence[str], is_local: Callable[[str], bool], node: str = "") -> list[str | None]:
    """Where the endpoint listens: `address` when set (a bind failure is then a start error), else the
    node's InternalIPs that are addresses of this host, and 127.0.0.1.

    Why only local ones: a node IP may be any address (fake nodes on one machine are told apart by
    it); the kubelet binds 0.0.0.0, so its node IP never stops it from starting, and neither may it
    here. A node IP that is not local is said once in the log for each node (full virtual nodes of a
    process may share it, each its own endpoint); kube-apiserver's node proxy to it then fails as for an
    unreachable node.
    """
    if address in ("0.0.0.0", "::"):
        return [None] if address == "0.0.0.0" else ["::"]
    if address:
        return [address.strip("[]")]
    local = [ip for ip in node_ips if is_local(ip)]
    for ip in node_ips:
        if ip not in local:
            logger.warning("kubelet endpoint of node %s not listening on node IP %s: not an address of this host "
                           "(the node proxy to it fails as for an unreachable node; KubeletConfiguration.address "
                           "sets where it listens)", node, ip)
    # 127.0.0.1 too, for this host's clients, unless the node has a loopback IP of its own (127.0.0.2: one of
    # several nodes on one machine, each on its own address, none of them on 127.0.0.1)
    own_loopback = any(_is_loopback(ip) for ip in local)
    return list(dict.fromkeys([*local, *(() if own_loopback else ("127.0.0.1",))]))


def _is_loopback(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip.strip("[]")).is_loopback
    except ValueError:
        return False


def is_local_address(ip: str) -> bool:
    """Whether this host can bind `ip` (a test bind to a free port, closed at once): the kernel's own
    answer, so addresses any interface holds, the whole of 127.0.0.0/8, and ip_nonlocal_bind all count."""
    try:
        parsed = ipaddress.ip_address(ip.strip("[]"))
    except ValueError:
        return False
    family = socket.AF_INET6 if parsed.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((str(parsed), 0))
    except OSError:
        return False
    return True


class LogSource:
    """What /containerLogs shows of a container (kubeletserver/logs.py shapes it)."""

    def __init__(self, pods: PodManager, recorder: EventRecorder, devices: DeviceManager, dra: DRAManager,
                 clock: Clock, cdi_dirs: Sequence[Path]) -> None:
        self._pods, self._recorder, self._devices, self._dra = pods, recorder, devices, dra
        self._clock = clock
        self._cdi_dirs = cdi_dirs

    def _specs(self) -> list[Mapping[str, Any]]:
        out: list[Mapping[str, Any]] = []
        for folder in self._cdi_dirs:
            try:
                files = sorted(p for p in folder.iterdir() if p.suffix in (".json", ".yaml", ".yml"))
            except OSError:
                continue
            for path in files:
                try:
                    doc = yaml.safe_load(path.read_text())
                except (OSError, yaml.YAMLError, UnicodeDecodeError):
                    continue
                if isinstance(doc, Mapping):
                    out.append(doc)
        return out

    def __call__(self, namespace: str, name: str, container: str, query: Mapping[str, str]) -> bytes:
        try:
            view = self._pods.get(namespace, name)
        except NotFound:
            raise LogError(404, f'pod "{name}" does not exist') from None
        pod, status = view.pod, view.status
        manifest = pod_to_manifest(pod, status)
        spec = manifest.get("spec") or {}
        containers = [c for key in ("initContainers", "containers") for c in spec.get(key) or ()]
        found = next((c for c in containers if isinstance(c, Mapping) and c.get("name") == container), None)
        if found is None:
            raise LogError(404, f'container "{container}" not found in pod "{name}"')
        options = _log_options(query)
        sources = [logtext.EnvSource(f"device plugin {resource}", tuple(sorted(alloc.response.envs.items())))
                   for resource, alloc in sorted(self._devices.pod_allocations(pod.uid).get(container, {}).items())]
        sources.append(logtext.spec_env(found))
        cdi_ids = [d for alloc in self._devices.pod_allocations(pod.uid).get(container, {}).values()
                   for d in alloc.response.cdi_devices]
        cdi_ids += [d for info in self._dra.container_dynamic_resources(pod, container)
                    for dev in info.devices for d in dev.cdi_devices]
        unresolved: list[str] = []
        specs = self._specs() if cdi_ids else []
        for device_id in cdi_ids:
            env = logtext.cdi_env(device_id, specs)
            if env is None:
                unresolved.append(device_id)
            else:
                sources.append(env)
        statuses = {s.name: s for s in (*status.init_container_statuses, *status.container_statuses)}
        cs = statuses.get(container)
        state = f"{cs.state}" + (f" ({cs.reason})" if cs is not None and cs.reason else "") if cs else "waiting"
        events = [logtext.LogEvent(e.last_timestamp, e.type, e.reason, e.message) for e in self._recorder.for_pod(pod)]
        lines = logtext.container_text(namespace, name, container, events=events, sources=sources, state=state,
                                       unresolved=unresolved)
        return logtext.render(lines, now=self._clock.now(), **options)


def _log_options(query: Mapping[str, str]) -> dict[str, Any]:
    """timestamps, tailLines, limitBytes of PodLogOptions; 400 with the kubelet's text when undecodable."""
    out: dict[str, Any] = {"timestamps": query.get("timestamps", "").lower() in ("true", "1")}
    for key, attr in (("tailLines", "tail_lines"), ("limitBytes", "limit_bytes")):
        if key in query:
            try:
                value = int(query[key])
            except ValueError:
                raise LogError(400, '{"message": "Unable to decode query."}') from None
            if value < 0 or (key == "limitBytes" and value == 0):
                raise LogError(422, '{"message": "Invalid request."}')
            out[attr] = value
    return out


class ServingTLS:
    """The endpoint's TLS context, made when first asked for (a full virtual node makes its certificate and
    context after the node is ready: OpenSSL 3 takes milliseconds per context, a thousand nodes seconds),
    and the client CA the daemon adds once its API server serves."""

    def __init__(self, files: Callable[[], tuple[Path, Path]], client_ca: bytes | None, fixed_ca: bool) -> None:
        self._files = files
        self._client_ca = client_ca
        self._fixed_ca = fixed_ca  # clientCAFile set, or the kubeconfig's CA: never replaced
        self._context: ssl.SSLContext | None = None

    def context(self) -> ssl.SSLContext:
        """The context; ConfigError naming tlsCertFile when the pair cannot be loaded."""
        if self._context is None:
            cert, key = self._files()
            try:
                self._context = tlsfiles.server_context(cert, key, self._client_ca)
            except (OSError, ssl.SSLError) as err:
                raise ConfigError(f"KubeletConfiguration.tlsCertFile: {cert} with tlsPrivateKeyFile {key}: "
                                  f"{getattr(err, 'strerror', None) or err}") from None
        return self._context

    def add_client_ca(self, pem: bytes) -> None:
        """Trust `pem` for client certificates, unless a CA was configured (now or when the context is made)."""
        if self._fixed_ca or self._client_ca is not None:
            return
        self._client_ca = pem
        if self._context is not None:
            self._context.load_verify_locations(cadata=pem.decode("ascii", "replace"))
            self._context.verify_mode = ssl.CERT_OPTIONAL


def build(
    cfg: Config, clock: Clock, *, http: NodeHTTPServer, summary: Callable[[], Mapping[str, Any]],
    pods: PodManager, recorder: EventRecorder, devices: DeviceManager, dra: DRAManager, api: NodeAPI,
    node_ips: Sequence[str], embedded: bool, healthy: Callable[[], bool] = lambda: True,
    is_local: Callable[[str], bool] = is_local_address, port: int | None = None,
) -> tuple[KubeletServer, Reviewers, ServingTLS] | None:
    """The node's kubelet endpoint (not bound, its TLS context not made), its reviewers and its TLS;
    None when enableServer is false. `port`: instead of KubeletConfiguration.port (a full virtual node's 0)."""
    opts = server_options.server_options(cfg.kubelet.raw)
    if not opts.enabled:
        return None
    remote = None
    client_ca: bytes | None = None
    if opts.client_ca_file is not None:
        try:
            client_ca = opts.client_ca_file.read_bytes()
        except OSError as err:
            raise ConfigError(f"KubeletConfiguration.authentication.x509.clientCAFile: {opts.client_ca_file}: "
                              f"{err.strerror or err}") from None
    if not embedded:
        from nodeagent.nodeapi.remote import RemoteAPI

        if isinstance(api, RemoteAPI):
            remote_api = api

            async def post(path: str, body: Mapping[str, Any]) -> Any:
                return await remote_api.request("POST", path, body=dict(body))

            remote = post
            if client_ca is None:
                client_ca = _kubeconfig_ca(api.kubeconfig)
    reviewers = Reviewers(remote)
    reviews = WebhookReviews(reviewers.post, clock.monotonic, token_ttl=opts.token_cache_ttl,
                             authorized_ttl=opts.authorized_ttl, unauthorized_ttl=opts.unauthorized_ttl)

    async def authenticate(token: str) -> User | None:
        return await reviews.authenticate(token)

    def files() -> tuple[Path, Path]:
        if opts.tls_cert_file is not None and opts.tls_private_key_file is not None:
            return opts.tls_cert_file, opts.tls_private_key_file
        return tlsfiles.ensure_self_signed(cfg.agent.root_dir / "pki", cfg.agent.node_name, clock.now())

    tls = ServingTLS(files, client_ca, fixed_ca=client_ca is not None)

    from prometheus_client import CollectorRegistry

    resource_registry, probe_registry = CollectorRegistry(), CollectorRegistry()
    resource_registry.register(ResourceMetrics(summary))
    probe_registry.register(ProcessStart(clock.now()))
    content = Content(
        read_only=http.handlers(),
        pods=lambda: [pod_to_manifest(v.pod, v.status) for v in pods.list()],
        container_logs=LogSource(pods, recorder, devices, dra, clock,
                                 (*CDI_DIRS, cfg.agent.root_dir.parent / "cdi")),
        resource_metrics=lambda request: serve_metrics(request, resource_registry),
        probe_metrics=lambda request: serve_metrics(request, probe_registry),
        healthy=healthy,
        running_pods=lambda: runtime_pods.running_pods((v.pod, v.status) for v in pods.list()),
    )
    authn = Authn(
        anonymous=opts.anonymous,
        authenticate_token=authenticate if opts.webhook_authentication else None,
        authorize=reviews.authorize if opts.authorization_mode == "Webhook" else None,
        fine_grained=cfg.kubelet.gate("KubeletFineGrainedAuthz"),
    )
    server = KubeletServer(cfg.agent.node_name, _hosts(opts.address, node_ips, is_local, cfg.agent.node_name),
                           opts.port if port is None else port, None, authn, content,
                           field="KubeletConfiguration.address" if opts.address else "")
    return server, reviewers, tls


class Endpoint:
    """A bound kubelet endpoint and what the daemon completes once its API server serves."""

    def __init__(self, server: KubeletServer, reviewers: Reviewers, tls: ServingTLS) -> None:
        self.server = server
        self._reviewers = reviewers
        self.tls = tls

    def use_api_server(self, api_server: Any) -> None:
        """Answer reviews with the embedded API server of this process and trust its CA for client certificates."""
        from nodeagent.apiserver.reviews import review_kind

        handler = api_server.handler
        assert handler is not None and api_server.credentials is not None

        def create(path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
            kind = review_kind(path)
            if kind is None:
                raise ReviewError(f"{path}: not a review path")
            answer: Mapping[str, Any] = handler.reviews.create(kind, body)
            return answer

        self._reviewers.embedded = create
        self.tls.add_client_ca(api_server.credentials.ca_pem)

    async def serve(self) -> None:
        """Make the TLS context (and the self-signed pair) and serve on the bound sockets."""
        await self.server.serve(self.tls.context())


async def start(
    cfg: Config, clock: Clock, *, http: NodeHTTPServer, summary: Callable[[], Mapping[str, Any]],
    pods: PodManager, recorder: EventRecorder, devices: DeviceManager, dra: DRAManager, api: NodeAPI,
    probe: HostProbe, embedded: bool, running: Running,
    later: list[Callable[[], Awaitable[None]]] | None = None,
) -> Endpoint | None:
    """Build the node's kubelet endpoint and bind it (None when enableServer is false); serve it now, or, given
    `later` (a full virtual node, on a free port), append to it the step that makes its certificate and TLS
    context and serves, for whoever runs them once every node started: the port is bound, so the Node names
    it from the start, and early connections wait in the backlog."""
    node_ips = resolve_node_ips(cfg.agent.node_ips, probe)
    built = build(cfg, clock, http=http, summary=summary, pods=pods, recorder=recorder, devices=devices, dra=dra,
                  api=api, node_ips=node_ips, embedded=embedded,
                  healthy=lambda: all(s.serving for s in running.servers),
                  port=0 if later is not None else None)
    if built is None:
        return None
    endpoint = Endpoint(*built)
    if later is None:
        endpoint.tls.context()  # a bad tlsCertFile is a start error before anything listens
    endpoint.server.bind()
    running.closers.append(endpoint.server.stop)
    if later is None:
        await endpoint.serve()
    else:
        later.append(endpoint.serve)
    return endpoint


async def serve_later(steps: list[Callable[[], Awaitable[None]]]) -> None:
    """Run the full virtual nodes' deferred endpoint steps one after the other (each a few milliseconds of
    OpenSSL), yielding between them so the loop serves everything else meanwhile; a failure is logged and
    leaves that node's port bound but unanswered, as a kubelet whose server did not come up."""
    started = len(steps)
    failed = 0
    while steps:
        step = steps.pop(0)
        try:
            await step()
        except Exception:
            failed += 1
            logger.exception("kubelet endpoint not served")
        await asyncio.sleep(0)
    logger.info("kubelet endpoints of the full virtual nodes serving nodes=%d failed=%d", started - failed, failed)
