"""The API server as the daemon runs it: credentials, catalog, registry, CRDs, OpenAPI, HTTPS site.

Why one object: the daemon starts and stops the Kubernetes API as one unit once the object
store is open. Start: make sure the credentials exist (CA, serving certificate, token; kept
in the state dir), create the namespaces every cluster has, serve the stored CRDs, bind the
HTTPS site, write the kubeconfig. Stop: end the watches, close the site. Nothing on the node
side reaches through here: it keeps using the store in process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from nodeagent.apiserver import certs, discovery, nodeproxy
from nodeagent.apiserver.apply import gozero
from nodeagent.apiserver.authn import identities, legacy
from nodeagent.apiserver.authn.chain import Authenticator
from nodeagent.apiserver.authn.filter import RequestAuthn
from nodeagent.apiserver.authn.serviceaccount import Signer, TokenAuthenticator
from nodeagent.apiserver.authn.tokens import TokenTable
from nodeagent.apiserver.authn.user import SERVICE_ACCOUNT_PREFIX, UserInfo
from nodeagent.apiserver.authz import bootstrap
from nodeagent.apiserver.authz.chain import Authorizer
from nodeagent.apiserver.catalog import Catalog, builtin_resources
from nodeagent.apiserver.crds import CustomResources
from nodeagent.apiserver.http import DEFAULT_MAX_BODY, APIHandler
from nodeagent.apiserver.kubernetes_service import KubernetesService, advertise_address
from nodeagent.apiserver.legacy_tokens import TokensController
from nodeagent.apiserver.namespace_companions import NamespaceCompanions
from nodeagent.apiserver.plugin_credentials import PluginCredentials
from nodeagent.apiserver.policy.status import PolicyStatusController
from nodeagent.apiserver.protobuf.encoding import stored_size
from nodeagent.apiserver.registry import BindingGates, Registry
from nodeagent.apiserver.schema import crd as crd_schema
from nodeagent.apiserver.schema import selectable
from nodeagent.apiserver.schema.builtin import BUILTIN_GVK, builtin_definitions
from nodeagent.apiserver.schema.model import Definitions
from nodeagent.apiserver.strategies import builtin_strategies
from nodeagent.config.fields import is_loopback, split_host_port
from nodeagent.errors import AlreadyExists, ConfigError, Conflict, NotFound
from nodeagent.objects import cluster
from nodeagent.store import ObjectStore
from nodeagent.util.clock import Clock
from nodeagent.util.httpserve import format_address, start_site
from nodeagent.util.tasks import cancel_and_wait

if TYPE_CHECKING:
    from nodeagent.apiserver.openapi_http import Representation

logger = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
WILDCARDS = ("0.0.0.0", "::")
_AGGREGATION_ROUNDS = 8
LISTEN_BACKLOG = socket.SOMAXCONN
"""As Go's listeners (net.maxListenerBacklog: net.core.somaxconn): client-go speaks HTTP/1.1 here (aiohttp serves
no HTTP/2) and opens a connection per request in flight beyond its 25 idle ones; asyncio's default queue of 128
overflowed under such a burst, the kernel dropped the connections' SYNs while the loop was busy, and the clients'
10 s TLS handshake timeouts ran out (issue 23: the real kube-scheduler against this server at 500 nodes)."""
"""Aggregated ClusterRoles nest (admin selects edit, edit selects view): rounds until nothing changes."""


@dataclass(frozen=True)
class APIServerOptions:
    bind_address: str = "127.0.0.1:6443"
    credentials_dir: Path = Path("/var/lib/nodeagent/apiserver")
    kubeconfig: Path | None = None
    anonymous: bool = False
    max_request_bytes: int = DEFAULT_MAX_BODY
    extra_sans: tuple[str, ...] = field(default=())
    bookmark_interval: float = 30.0
    # the emulated release (NodeAgentConfiguration.kubernetesVersion), as /version reports it
    kubernetes_version: str = "1.37"
    # NodeAgentConfiguration.classicDRA: classic DRA's claims are served in resource.k8s.io/v1alpha3 too
    classic_dra: bool = False
    # the feature gates pods/binding reads, at the emulated release's defaults unless set
    binding: BindingGates = field(default_factory=BindingGates)
    # the host's addresses, put into the serving certificate when bindAddress is a wildcard (0.0.0.0, ::)
    host_addresses: Callable[[], Sequence[str]] = lambda: ()
    # the embedded serviceaccount and root-ca-cert-publisher controllers (namespace_companions.py):
    # controlPlane.controllers switches them off for the real kube-controller-manager's
    service_accounts: bool = True
    root_ca_publisher: bool = True
    # the embedded validatingadmissionpolicy-status controller (policy/status.py)
    policy_status: bool = True
    # the embedded serviceaccount-token controller (legacy_tokens.py), likewise
    service_account_tokens: bool = True


class OpenAPIDocs:
    """The OpenAPI documents, built on first request and again after the catalog changes.

    Each document is encoded once per catalog version: /openapi/v2 as JSON and as gnostic
    protobuf (the proto encoded from the same dict, the ETag the SHA-512 of the JSON, as
    kube-openapi does), the v3 index, and each v3 group-version document with the hash the index
    lists as its ETag. `serve` answers a request for one of them (openapi_http.py).

    The builders (schema/openapi.py), the gnostic encoder and openapi_http are imported with the first
    document asked for: ~58 M instructions of imports (valgrind), ~1.7% of a restart to READY=1 (issue 25)."""

    def __init__(self, catalog: Catalog, defs_of: Callable[[], Definitions], now: Callable[[], float],
                 server_version: str = "", v2_defs_of: Callable[[], Definitions] | None = None) -> None:
        """`defs_of` gives the v3 documents' definitions, `v2_defs_of` (default the same) v2's: a custom
        resource's differ (schema/crd.published). `server_version`: info.version of every document
        ("": schema/openapi.py's DEFAULT_SERVER_VERSION)."""
        self._server_version = server_version
        self._catalog = catalog
        self._defs_of = defs_of
        self._v2_defs_of = v2_defs_of or defs_of
        self._now = now
        self._v2_doc: dict[str, Any] | None = None
        self._v2: Representation | None = None
        self._v2_proto: Representation | None = None
        self._v3: dict[str, Representation] = {}
        self._index: Representation | None = None

    def invalidate(self) -> None:
        self._v2_doc, self._v2, self._v2_proto, self._index, self._v3 = None, None, None, None, {}

    def _gvks(self) -> dict[str, tuple[str, str, str]]:
        gvks = dict(BUILTIN_GVK)
        for r in self._catalog:
            gvks.setdefault(r.definition, (r.group, r.version, r.kind))
        return gvks

    def _version(self) -> str:
        from nodeagent.apiserver.schema import openapi

        return self._server_version or openapi.DEFAULT_SERVER_VERSION

    def _v2_json(self) -> Representation:
        from nodeagent.apiserver import openapi_http
        from nodeagent.apiserver.openapi_http import Representation
        from nodeagent.apiserver.schema import openapi

        if self._v2 is None:
            self._v2_doc = openapi.openapi_v2(list(self._catalog), self._v2_defs_of(), self._gvks(),
                                               server_version=self._version())
            body = orjson.dumps(self._v2_doc)
            self._v2 = Representation(body, openapi_http.JSON, openapi_http.etag_of(body), self._now())
        return self._v2

    def _v2_protobuf(self) -> Representation:
        from nodeagent.apiserver import openapi_http
        from nodeagent.apiserver.openapi_http import Representation
        from nodeagent.apiserver.protobuf import gnostic

        if self._v2_proto is None:
            as_json = self._v2_json()
            assert self._v2_doc is not None
            self._v2_proto = Representation(gnostic.encode(self._v2_doc), openapi_http.PROTO_V2,
                                            as_json.etag, as_json.last_modified)
        return self._v2_proto

    def v2(self) -> bytes:
        return self._v2_json().body

    def v2_protobuf(self) -> bytes:
        return self._v2_protobuf().body

    def _v3_index(self) -> Representation:
        from nodeagent.apiserver import openapi_http
        from nodeagent.apiserver.openapi_http import Representation
        from nodeagent.apiserver.schema import openapi

        if self._index is None:
            body = orjson.dumps(openapi.openapi_v3_index(list(self._catalog), self._defs_of(), self._gvks(),
                                                          server_version=self._version()))
            self._index = Representation(body, openapi_http.JSON, openapi_http.etag_of(body), self._now())
        return self._index

    def v3_index(self) -> bytes:
        return self._v3_index().body

    def _v3_group(self, path: str) -> Representation | None:
        from nodeagent.apiserver import openapi_http
        from nodeagent.apiserver.openapi_http import Representation
        from nodeagent.apiserver.schema import openapi

        if path not in self._v3:
            parts = path.split("/")
            if parts[:1] == ["api"] and len(parts) == 2:
                group, version = "", parts[1]
            elif parts[:1] == ["apis"] and len(parts) == 3:
                group, version = parts[1], parts[2]
            else:
                return None
            if not self._catalog.in_version(group, version):
                return None
            doc = openapi.openapi_v3_group(list(self._catalog), self._defs_of(), self._gvks(), group, version,
                                           server_version=self._version())
            # The ETag is the hash the index lists for this document, so ?hash= checks agree with it.
            self._v3[path] = Representation(orjson.dumps(doc), openapi_http.JSON, openapi.document_hash(doc),
                                            self._now())
        return self._v3[path]

    def v3_group(self, path: str) -> bytes | None:
        rep = self._v3_group(path)
        return None if rep is None else rep.body

    def serve(self, request: web.Request, rest: list[str]) -> web.Response | None:
        """The answer to GET /openapi/<rest...>; None when no such document exists."""
        from nodeagent.apiserver import openapi_http

        if rest == ["v2"]:
            return openapi_http.serve_v2(request, self._v2_json, self._v2_protobuf)
        if rest == ["v3"]:
            return openapi_http.serve(request, self._v3_index(), compress=False)
        if rest and rest[0] == "v3":
            path = "/".join(rest[1:])
            rep = self._v3_group(path)
            return None if rep is None else openapi_http.serve_v3_group(request, rep, path, self._now())
        return None


class APIServer:
    def _go_fields_of(self, kind: str) -> Callable[[dict[str, Any], dict[str, Any] | None], dict[str, Any]] | None:
        """The fill of a stored built-in kind's always-written fields: its storage version's definition."""
        if kind in self._fills:
            return self._fills[kind]
        info = self.store.kinds.get(kind)
        definition = next((r.definition for r in self.catalog if r.store_kind == kind and not r.custom
                           and r.api_version == info.api_versions[0]), "")
        found = self._zero.filler(definition) if definition else None
        self._fills[kind] = found
        return found

    def __init__(self, store: ObjectStore, clock: Clock, options: APIServerOptions) -> None:
        host, port = split_host_port(options.bind_address, "apiServer.bindAddress")
        if options.anonymous and not is_loopback(host):
            raise ConfigError(f"apiServer.bindAddress: {options.bind_address} is not a loopback address; "
                              "anonymous access is only allowed on loopback")
        self._host, self._port = host, port
        self.options = options
        self.store = store
        self.clock = clock
        self.catalog = Catalog(builtin_resources(classic_dra=options.classic_dra))
        self._builtin_defs = builtin_definitions()
        self.registry = Registry(store, self.catalog, self._builtin_defs, builtin_strategies(), clock,
                                 binding=options.binding)
        store.field_manager = self.registry.in_process_fields  # the embedded components' managedFields
        store.stored_size = stored_size  # built-in kinds weighed as etcd holds them (protobuf)
        self._zero = gozero.ZeroFiller(self._builtin_defs)
        self._fills: dict[str, Callable[[dict[str, Any], dict[str, Any] | None], dict[str, Any]] | None] = {}
        store.go_fields = self._go_fields_of  # stored as kube-apiserver's Go types write them
        # the published definitions (v2: True), made with the first document asked for after a catalog change
        self._published: dict[bool, Definitions] | None = None
        self.openapi = OpenAPIDocs(self.catalog, lambda: self._published_defs(v2=False), clock.now,
                                   discovery.git_version(options.kubernetes_version),
                                   v2_defs_of=lambda: self._published_defs(v2=True))
        self.crds = CustomResources(store, self.catalog, self.registry, clock, self._catalog_changed)
        self.credentials: certs.Credentials | None = None
        self.handler: APIHandler | None = None
        self.kubelet_client: nodeproxy.KubeletClient | None = None
        self._runner: web.AppRunner | None = None
        self._crd_task: asyncio.Task[None] | None = None
        self._authn_task: asyncio.Task[None] | None = None
        self.authn: RequestAuthn | None = None
        self.token_signer: Signer | None = None
        self.plugin_credentials: PluginCredentials | None = None
        self._token_task: asyncio.Task[None] | None = None
        self._companions_task: asyncio.Task[None] | None = None
        self._legacy_tokens_task: asyncio.Task[None] | None = None
        self._policy_status_task: asyncio.Task[None] | None = None
        self._kubernetes_service_task: asyncio.Task[None] | None = None
        self.port = 0

    def _catalog_changed(self) -> None:
        defs = Definitions()
        for name, schema in self._builtin_defs.items():
            defs.add(name, schema)
        for (group, version, plural), beh in self.registry.custom.items():
            res = self.catalog.find(group, version, plural)
            if res is not None:
                defs.add(res.definition, beh.schema)
        self.registry.defs = defs
        self._published = None
        self.openapi.invalidate()

    def _published_defs(self, *, v2: bool) -> Definitions:
        """What the OpenAPI documents publish (v2's or v3's): a custom resource's definitions are not what the
        server checks it against (apiVersion, kind and metadata added with their descriptions, its List kind).
        Made when a document is built, not at each catalog change: no part of a start (issue 25)."""
        if self._published is None:
            published: dict[bool, Definitions] = {False: Definitions(), True: Definitions()}
            for (group, version, plural), beh in self.registry.custom.items():
                res = self.catalog.find(group, version, plural)
                if res is None:
                    continue
                fields = beh.selectable_fields
                for as_v2, out in published.items():
                    out.add(res.definition, selectable.published(crd_schema.published(beh.schema, v2=as_v2), fields))
                    out.add(res.list_definition, selectable.published(crd_schema.published_list(
                        res.definition, res.kind, res.list_kind, res.plural), fields))
            self._published = {as_v2: self.registry.defs.merged(out) for as_v2, out in published.items()}
        return self._published[v2]

    @property
    def url(self) -> str:
        """Where this host's clients reach the server: the bound address, loopback for a wildcard bind."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self._host, self._host)
        host = f"[{host}]" if ":" in host else host
        return f"https://{host}:{self.port}"

    def ensure_namespaces(self) -> None:
        for name in SYSTEM_NAMESPACES:
            if self.store.peek("Namespace", "", name) is not None:
                continue
            with contextlib.suppress(AlreadyExists):
                self.store.create({"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                                   "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})

    def ensure_priority_classes(self) -> None:
        """system-node-critical and system-cluster-critical, created when missing as kube-apiserver's
        scheduling/bootstrap-system-priority-classes post-start hook does."""
        for pc in cluster.system_priority_classes():
            if self.store.peek("PriorityClass", "", pc["metadata"]["name"]) is not None:
                continue
            with contextlib.suppress(AlreadyExists):
                self.store.create(pc)

    def serving_hosts(self) -> list[str]:
        """The names the serving certificate must hold: the bound address (every address of the host
        for a wildcard bind), loopback, and the configured extra names."""
        bound = [self._host]
        if self._host in WILDCARDS:
            ipv6 = self._host == "::"  # asyncio sets IPV6_V6ONLY: a "::" socket takes IPv6 only
            bound = [ip for ip in self.options.host_addresses() if (":" in ip) == ipv6]
        return sorted({*bound, "127.0.0.1", "localhost", *self.options.extra_sans} - set(WILDCARDS))

    def ensure_rbac_policy(self) -> None:
        """The RBAC bootstrap policy (authz/bootstrap.py), as kube-apiserver's rbac/bootstrap-roles
        post-start hook writes it: each role and binding created when missing, reconciled when it
        lacks what the policy needs (unless annotated autoupdate "false"); then the aggregated
        ClusterRoles (admin, edit, view) get their rules."""
        for expected in bootstrap.policy():
            md = expected["metadata"]
            existing = self.store.try_get(expected["kind"], md.get("namespace", ""), md["name"])
            if existing is None:
                with contextlib.suppress(AlreadyExists):
                    self.store.create(expected)
                continue
            updated = bootstrap.reconcile(expected, existing)
            if updated is not None:
                self.store.update(updated)
        self.aggregate_cluster_roles()

    def aggregate_cluster_roles(self) -> None:
        """What the clusterrole-aggregation controller does, in process: every ClusterRole with an
        aggregationRule holds the rules of the roles it selects. A real kube-controller-manager
        writes the same rules, so both may run."""
        for _ in range(_AGGREGATION_ROUNDS):  # an aggregated role may select another (edit selects view)
            roles = self.store.list("ClusterRole")
            changed = False
            for role in roles:
                wanted = bootstrap.aggregated_rules(role, roles)
                if wanted is not None and wanted != (role.get("rules") or []):
                    with contextlib.suppress(Conflict, NotFound):
                        self.store.update({**role, "rules": wanted})
                        changed = True
            if not changed:
                return

    async def start(self) -> None:
        # A wildcard bind and anonymous: true are warned about by the daemon at start (hardening.py) and by
        # check-config.
        self.credentials = certs.ensure_credentials(self.options.credentials_dir, hosts=self.serving_hosts(),
                                                    clock_now=self.clock.now())
        token_rows = certs.ensure_token_file(self.options.credentials_dir, self.credentials.token)
        sa_key = certs.ensure_service_account_key(self.options.credentials_dir)
        self.token_signer = Signer(sa_key)
        sa_tokens = TokenAuthenticator([sa_key.public_key()], self._stored, self.clock.now,
                                       mark_used=self._mark_legacy_token_used)
        self.authn = RequestAuthn(Authenticator(TokenTable(token_rows), anonymous=self.options.anonymous,
                                                service_accounts=sa_tokens), self.clock.monotonic)
        self.ensure_namespaces()
        companions = NamespaceCompanions(self.store, self.credentials.ca_pem.decode("ascii"),
                                         service_accounts=self.options.service_accounts,
                                         root_ca=self.options.root_ca_publisher)
        if companions.enabled:
            companions.sync_all()
            self.registry.after_create["Namespace"] = companions.ensure
        self.ensure_priority_classes()
        self.ensure_rbac_policy()
        self.crds.sync()
        self._catalog_changed()
        client_cert = certs.ensure_client_cert(
            self.options.credentials_dir, cert_name=certs.KUBELET_CLIENT_CERT, key_name=certs.KUBELET_CLIENT_KEY,
            user=certs.KUBELET_CLIENT_NAME, groups=certs.KUBELET_CLIENT_GROUPS, clock_now=self.clock.now())
        self.kubelet_client = nodeproxy.KubeletClient(*client_cert)
        self.handler = APIHandler(
            self.registry, self.catalog,
            authn=self.authn,
            openapi=self.openapi,
            server_address=lambda: format_address(self._host, self.port),
            on_write=self._after_write,
            max_body=self.options.max_request_bytes,
            bookmark_interval=self.options.bookmark_interval,
            node_proxy=nodeproxy.NodeProxy(self.store.peek, self.kubelet_client),
            kubernetes_version=self.options.kubernetes_version,
            now=self.clock.now,
            authorizer=Authorizer(self.store),
            token_signer=self.token_signer,
        )
        app = self.handler.app()
        self._runner, self.port = await start_site(app, self._host, self._port,
                                                   ssl_context=certs.server_ssl_context(self.credentials),
                                                   name="apiServer.bindAddress", backlog=LISTEN_BACKLOG)
        self._crd_task = asyncio.create_task(self.crds.run(), name="apiserver-crds")
        kubernetes = KubernetesService(self.store, lambda: self.port,
                                       advertise_address(self._host, self.options.host_addresses()),
                                       now=self.clock.now)
        kubernetes.try_sync()
        self._kubernetes_service_task = asyncio.create_task(kubernetes.run(self.clock.sleep),
                                                            name="apiserver-kubernetes-service")
        self._companions_task = asyncio.create_task(companions.run(), name="apiserver-namespace-companions")
        if self.options.service_account_tokens:
            tokens = TokensController(self.store, self.token_signer, self.credentials.ca_pem)
            self._legacy_tokens_task = asyncio.create_task(tokens.run(), name="apiserver-tokens-controller")
        if self.options.policy_status:
            status = PolicyStatusController(self.store, self.registry, self.catalog)
            self._policy_status_task = asyncio.create_task(status.run(), name="apiserver-policy-status")
        self._authn_task = asyncio.create_task(self.authn.run(self.clock.sleep), name="apiserver-authn-log")
        self.plugin_credentials = PluginCredentials(self.store, self.token_signer, self.clock.now, lambda: self.url,
                                                    self.credentials.ca_pem)
        self._token_task = asyncio.create_task(self.plugin_credentials.run(self.clock.sleep),
                                               name="apiserver-plugin-tokens")
        if self.options.kubeconfig is not None:
            certs.write_kubeconfig(self.options.kubeconfig, self.kubeconfig())
        logger.info("api server serving url=%s kubeconfig=%s", self.url, self.options.kubeconfig)

    def write_identity_kubeconfig(self, path: Path, user: UserInfo, namespace: str = "default", *,
                                  node: str = "") -> None:
        """Write at `path` a kubeconfig of this server holding one credential of `user`, nothing of the admin's:
        for a spawned plugin's service account (authn/identities.py) a token of it, bound to `node` and
        refreshed before it expires (plugin_credentials.py); for a node, a new client certificate of the CA."""
        assert self.credentials is not None
        prefix = f"{SERVICE_ACCOUNT_PREFIX}{identities.PLUGIN_NAMESPACE}:{identities.PLUGIN_PREFIX}"
        if user.name.startswith(prefix) and self.plugin_credentials is not None:
            self.plugin_credentials.write(path, user.name.rpartition(":")[2], node, namespace)
            return
        cert_pem, key_pem = certs.issue_client_cert(self.options.credentials_dir, user=user.name,
                                                    groups=user.groups, clock_now=self.clock.now())
        certs.write_kubeconfig(path, certs.client_kubeconfig(self.url, self.credentials.ca_pem, cert_pem, key_pem,
                                                             user=user.name, namespace=namespace))

    def _mark_legacy_token_used(self, secret: Mapping[str, Any], day: str) -> None:
        """Stamp a legacy token's Secret with the day it was used (authn/legacy.py): upstream's merge patch
        of the label with the Secret's uid as precondition; a failure is logged, the request goes on."""
        md = secret.get("metadata") or {}
        current = self.store.peek("Secret", str(md.get("namespace") or ""), str(md.get("name") or ""))
        if current is None or (current.get("metadata") or {}).get("uid") != md.get("uid"):
            return
        cur_md = current.get("metadata") or {}
        try:
            self.store.update({**current, "metadata": {**cur_md, "labels": {
                **(cur_md.get("labels") or {}), legacy.LAST_USED: day}}})
        except (Conflict, NotFound, RuntimeError) as err:
            logger.warning("failed to label legacy service account token secret=%s/%s err=%s",
                           md.get("namespace"), md.get("name"), err)

    def _stored(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """A stored object for the service-account token checks (None when absent)."""
        return self.store.peek(kind, namespace, name)

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        assert self.credentials is not None
        return certs.kubeconfig(self.url, self.credentials, namespace=namespace)

    def _after_write(self, res: Any) -> None:
        if res.store_kind == "CustomResourceDefinition":
            self.crds.sync()
        elif res.store_kind == "ClusterRole":
            self.aggregate_cluster_roles()

    async def stop(self) -> None:
        if self.handler is not None:
            await self.handler.close_watches()
        await cancel_and_wait([self._crd_task, self._authn_task, self._token_task, self._companions_task,
                               self._legacy_tokens_task, self._policy_status_task, self._kubernetes_service_task],
                              ignore_errors=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.kubelet_client is not None:
            await self.kubelet_client.close()
