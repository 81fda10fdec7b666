"""The HTTPS edge of the Kubernetes API: authentication, routing, decoding, encoding, watch streams.

Only HTTP lives here: a request is authenticated (authn/: client certificate, bearer token,
anonymous), parsed (routing.py), its body decoded with duplicate-field detection and the size
limit, and handed to one registry call;
the answer is encoded as JSON (orjson) or, when the client negotiated it and the kind has a message,
protobuf (protobuf/encoding.py), as a Table or as PartialObjectMetadata, with warnings in
`Warning` headers. Errors are metav1.Status objects (errors.py), in the client's negotiated
encoding. Watches are chunked JSON event streams or length-framed protobuf ones (watching.py).
aiohttp serves it (one library for every HTTP surface).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import platform
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson
from aiohttp import web
from multidict import CIMultiDict

from nodeagent.apiserver import discovery, eviction, nodeproxy, tokenrequest
from nodeagent.apiserver import headers as header_values
from nodeagent.apiserver.authn import serviceaccount as sa_tokens
from nodeagent.apiserver.authn.filter import AUTHN_WARNINGS, USER, RequestAuthn, user_of
from nodeagent.apiserver.authn.serviceaccount import Signer
from nodeagent.apiserver.authn.user import ALL_AUTHENTICATED, UserInfo
from nodeagent.apiserver.authz import escalation, impersonation, noderestriction, pluginrestriction
from nodeagent.apiserver.authz.attributes import Attributes as AuthzAttributes
from nodeagent.apiserver.authz.attributes import forbidden_status_message, request_attributes
from nodeagent.apiserver.authz.chain import Authorizer
from nodeagent.apiserver.authz.node import node_identity
from nodeagent.apiserver.catalog import Catalog, Resource
from nodeagent.apiserver.errors import APIError, bad_request, not_found, status_object
from nodeagent.apiserver.options import BodyFacts, WriteOptions, delete_options, write_options
from nodeagent.apiserver.policy.dispatch import Attributes as AdmissionAttributes
from nodeagent.apiserver.policy.dispatch import PolicyAdmission
from nodeagent.apiserver.protobuf import decoder, encoding
from nodeagent.apiserver.registry import APPLY_PATCH, PATCH_TYPES, Registry
from nodeagent.apiserver.reviews import Reviews, review_kind
from nodeagent.apiserver.routing import (
    JSON,
    PROTOBUF,
    Target,
    View,
    content_type,
    error_media,
    parse_accept,
    parse_path,
)
from nodeagent.apiserver.schema import fields as schema_fields
from nodeagent.apiserver.schema import typed
from nodeagent.apiserver.selection import (
    parse_field_selector,
    parse_int,
    parse_label_selector,
    parse_resource_version,
    query_bool,
)
from nodeagent.apiserver.watching import Event, RestWatch, WatchOptions
from nodeagent.apiserver.watchwriter import Unresponsive, WatchWriter
from nodeagent.protowire.encoder import EncodeError, Memo
from nodeagent.store import StoreBusy
from nodeagent.store.watch import WatchEvent
from nodeagent.util.httpserve import SentResponse

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

DEFAULT_MAX_BODY = 3 * 1024 * 1024
"""The API server's default limit on a request body (--max-request-bytes, 3 MiB)."""
PUBLIC_PATHS = frozenset({"/version", "/healthz", "/livez", "/readyz"})
DEFAULT_WATCH_TIMEOUT = 1800.0
ESCALATION_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
OFFLOAD_BYTES = 16 * 1024
"""A request body (or a stored object to delete) this big is decoded and written in a worker thread:
the registry's pure Python work on it (typed and unknown-field walks, strategy, managedFields) takes
seconds for a pod with 10,000 containers, and must not hold up every other socket meanwhile. The
store is thread-safe (one lock, watch events handed to the loop thread-safely). 256 KiB before: the
body of a pod of 7,400 containers ({"name": "cN", "image": "x"}, 237 KB) was written on the loop,
1.0-1.5 s with its size check (the work is about 0.2 ms a container, so 16 KiB keeps what stays on
the loop under the issue's 100 ms)."""
STREAM_BYTES = 256 * 1024
"""A JSON list answer larger than this is written in pieces of about this size as it is encoded (_json_list)."""
BODY_SIZE = web.RequestKey("nodeagent.body_size", int)
ADMISSION_WARNINGS = web.RequestKey("nodeagent.admission_warnings", list[str])
# kinds whose writes change the served catalog (callbacks that rebuild discovery and OpenAPI): on the loop
_LOOP_ONLY = frozenset({"customresourcedefinitions", "namespaces", "apiservices"})


class APIHandler:
    """The aiohttp handler of every API path; `app()` builds the application."""

    def __init__(
        self,
        registry: Registry,
        catalog: Catalog,
        *,
        authn: RequestAuthn,
        openapi: Any,
        server_address: Callable[[], str],
        on_write: Callable[[Resource], None] | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        bookmark_interval: float = 30.0,
        node_proxy: nodeproxy.NodeProxy | None = None,
        kubernetes_version: str = discovery.DEFAULT_VERSION,
        now: Callable[[], float] = time.time,
        authorizer: Authorizer | None = None,
        token_signer: Signer | None = None,
    ) -> None:
        self.registry = registry
        self._token_signer = token_signer
        self._now = now
        self.authorizer = authorizer
        self._impersonator = impersonation.Impersonator(authorizer) if authorizer is not None else None
        self.authn = authn
        self.reviews = Reviews(authn.authenticator, now, authorizer)
        self._node_proxy = node_proxy
        self.catalog = catalog
        self._openapi = openapi
        self._server_address = server_address
        self._on_write = on_write
        self._max_body = max_body
        self._bookmark_interval = bookmark_interval
        self._kubernetes_version = kubernetes_version
        self._watches: set[asyncio.Task[Any]] = set()
        self._encoded = EventLines()
        # one memo of stored versions' protobuf bytes for answers and watch frames: a write's answer,
        # its watch frames and later GETs and LISTs of that version share one encoding
        self._memo = Memo()
        self._encoded_proto = EventLines(proto=True, memo=self._memo)
        self.stopping = asyncio.Event()
        self._policies = PolicyAdmission(registry.store, catalog, self._convert, self._authorize_check)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self._max_body * 2 + 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_response_prepare.append(_authn_warnings)
        app.on_response_prepare.append(_safe_headers)
        return app

    # --- entry ---

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            # authentication (authn/filter.py): request["user"] is set, or the refusal is the answer
            refused = self.authn.authenticate(request, public=request.path in PUBLIC_PATHS)
            if refused is not None:
                return refused
            self._impersonate(request)
            self._authorize(request)
            return await self._dispatch(request)
        except APIError as err:
            return self._status(err, (*request.get(ADMISSION_WARNINGS, ()), *err.warnings), request)
        except asyncio.CancelledError:
            raise
        except ConnectionError:
            raise
        except Exception as err:  # a bug: never take the daemon down, answer 500
            logger.exception("api request failed method=%s path=%s", request.method, request.path)
            return self._status(APIError(500, "InternalError", f"Internal error occurred: {err}"), (), request)

    def _impersonate(self, request: web.Request) -> None:
        """The impersonation step (authz/impersonation.py): with Impersonate-* headers the request
        continues as the user they name, when the authorizers allow the requestor that; logged as
        upstream's httplog line (`<who> is impersonating <whom>`), since nodeagent keeps no audit log."""
        wanted = impersonation.wanted_from_headers(request.headers.items())
        if wanted is None:
            return
        requestor = user_of(request)
        if self._impersonator is None:  # no authorizers (a test's server): AlwaysAllow
            user = UserInfo(wanted.name, wanted.uid, (*wanted.groups, ALL_AUTHENTICATED), dict(wanted.extra))
            constraint = ""
        else:
            attrs = request_attributes(requestor, request.method, request.path, request.query)
            user, constraint = self._impersonator.impersonate(wanted, attrs)
        request[USER] = user
        logger.info("api request impersonating requestor=%s user=%s constraint=%s method=%s path=%s",
                    impersonation.user_string(requestor), impersonation.user_string(user), constraint or "legacy",
                    request.method, request.path)

    def _authorize(self, request: web.Request) -> None:
        """The authorization step (authz/chain.py: system:masters, Node, RBAC) on the authenticated
        user; a refusal is kube-apiserver's 403 Status, word for word."""
        if self.authorizer is None:
            return
        attrs = request_attributes(user_of(request), request.method, request.path, request.query)
        decision = self.authorizer.authorize(attrs)
        if not decision.allowed:
            raise APIError(403, "Forbidden", forbidden_status_message(attrs, decision.reason),
                           details={k: v for k, v in (("name", attrs.name), ("group", attrs.api_group),
                                                      ("kind", attrs.resource)) if v},
                           empty_details=True)

    def _admitting(self, request: web.Request, t: Target, opts: WriteOptions) -> WriteOptions:
        """`opts` with the writer's admission: NodeRestriction when a node writes
        (authz/noderestriction.py), RBAC's escalation check on roles and bindings (authz/escalation.py),
        then the ValidatingAdmissionPolicies (policy/dispatch.py), whose warnings the answer carries."""
        authz = self.authorizer
        user = user_of(request)
        node, is_node = node_identity(user) if authz is not None else ("", False)
        group, plural = t.resource.group, t.resource.plural
        rbac = authz is not None and group == "rbac.authorization.k8s.io" and t.resource.kind in ESCALATION_KINDS
        plugin = authz is not None and pluginrestriction.restricted(user, group, plural)
        policies = self._policies.active()
        if not is_node and not rbac and not plugin and not policies:
            return opts

        def admit(obj: Mapping[str, Any], old: Mapping[str, Any] | None, subresource: str) -> None:
            name = t.name or str((obj.get("metadata") or {}).get("name") or "")
            if plugin:
                _plugin_admit(user, name, obj)
            refusal = ""
            if is_node:
                refusal = noderestriction.admit_write(node, group, plural, subresource, t.namespace, name, obj, old)
            if not refusal and rbac and authz is not None:
                refusal = escalation.check_write(authz, user, t.resource.kind, t.namespace, name, obj, old)
            if refusal:
                raise _admission_forbidden(group, plural, name, refusal)
            if policies:
                operation = "CREATE" if old is None else "UPDATE"
                self._admit_policies(request, t, operation, subresource, obj, old, opts.dry_run,
                                     _options("CreateOptions" if old is None else "UpdateOptions", opts))

        return dataclasses.replace(opts, admit=admit)

    def _admit_policies(self, request: web.Request, t: Target, operation: str, subresource: str,
                        obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None, dry_run: bool,
                        options: Mapping[str, Any]) -> None:
        """The ValidatingAdmissionPolicy plugin on one write; its warnings go on the request."""
        res = t.resource
        md = (obj or old or {}).get("metadata") or {}
        name = t.name or str(md.get("name") or "")
        namespace = t.namespace or str(md.get("namespace") or "") if res.namespaced else ""
        if res.kind == "Namespace" and not res.group and operation != "CREATE":
            namespace = name  # the request's namespace is the namespace itself (RequestInfo)
        if res.namespaced and operation == "CREATE" and self.registry.store.peek("Namespace", "", namespace) is None \
                and namespace != "default":
            return  # NamespaceLifecycle, earlier in upstream's chain, refuses it with its 404
        user = user_of(request)
        attrs = AdmissionAttributes(operation, res, subresource, namespace, name, obj, old, user=user.name,
                                    uid=user.uid, groups=user.groups, extra=user.extra, dry_run=dry_run,
                                    options=options)
        found, refusal = self._policies.admit(attrs)
        if found:
            request.setdefault(ADMISSION_WARNINGS, []).extend(found)
        if refusal is not None:
            raise refusal

    def _admit_delete(self, request: web.Request, t: Target, dry_run: bool) -> None:
        """NodeRestriction on a node's delete (only pods and ResourceSlices bound to it), then the
        ValidatingAdmissionPolicies with the stored object as oldObject."""
        user = user_of(request)
        node, is_node = node_identity(user)
        if self.authorizer is not None and t.name and pluginrestriction.restricted(user, t.resource.group,
                                                                                   t.resource.plural):
            stored_slice = self.registry.store.peek(t.resource.store_kind, t.namespace, t.name)
            if stored_slice is not None:  # a plugin deletes only its node's slices (authz/pluginrestriction.py)
                _plugin_admit(user, t.name, stored_slice)
        if is_node and self.authorizer is not None and t.name:
            stored = self.registry.store.peek(t.resource.store_kind, t.namespace, t.name)
            refusal = noderestriction.admit_delete(node, t.resource.group, t.resource.plural, stored)
            if refusal:
                raise _admission_forbidden(t.resource.group, t.resource.plural, t.name, refusal)
        if t.name and self._policies.active():
            stored = self.registry.store.peek(t.resource.store_kind, t.namespace, t.name)
            if stored is not None:
                old = self.registry.from_store(t.resource, stored)
                options = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
                if dry_run:
                    options["dryRun"] = ["All"]  # type: ignore[assignment]
                self._admit_policies(request, t, "DELETE", t.subresource, None, old, dry_run, options)

    def _authorize_check(self, target: Mapping[str, Any], verb: str) -> tuple[bool, str]:
        """The policy CEL authorizer library's check (policy/authorizer.py): the API server's
        authorizers on a path or resource check (none configured: everything allowed)."""
        if self.authorizer is None:
            return True, ""
        extra = {str(k): tuple(v) for k, v in (target.get("extra") or {}).items()}
        user = UserInfo(str(target.get("user") or ""), str(target.get("uid") or ""),
                        tuple(target.get("groups") or ()), extra)
        if target.get("__authz") == "path":
            attrs = AuthzAttributes(user, verb, False, path=str(target.get("path") or ""))
        else:
            attrs = AuthzAttributes(user, verb, True, namespace=str(target.get("namespace") or ""),
                                    api_group=str(target.get("group") or ""), api_version="*",
                                    resource=str(target.get("resource") or ""),
                                    subresource=str(target.get("subresource") or ""),
                                    name=str(target.get("name") or ""))
        decision = self.authorizer.authorize(attrs)
        return decision.allowed, decision.reason

    def _convert(self, obj: Mapping[str, Any], api_version: str) -> Mapping[str, Any]:
        """An object (stored or in a request's version) in another served version of its kind."""
        res = self.catalog.for_kind(api_version, str(obj.get("kind") or ""))
        if res is None:
            return obj
        return self.registry.to_version(res, self.registry.to_storage(res, dict(obj)))

    def _with_warnings(self, request: web.Request, warnings: tuple[str, ...]) -> tuple[str, ...]:
        extra = request.get(ADMISSION_WARNINGS)
        return (*warnings, *extra) if extra else warnings

    def _status(self, err: APIError, warnings: Any = (), request: web.Request | None = None) -> web.Response:
        headers: list[tuple[str, str]] = list((err.headers or {}).items())
        headers += header_values.warning_headers(warnings)
        status = err.status()
        if request is not None and request.path.startswith(("/api/", "/apis/")) and \
                error_media(request.headers.get("Accept", "")) == PROTOBUF:
            # ErrorNegotiated: the Status in the encoding the client negotiated
            return web.Response(status=err.code, body=encoding.encode_object(status), content_type=PROTOBUF,
                                headers=CIMultiDict(headers) if headers else None)
        return web.Response(status=err.code, body=orjson.dumps(status), content_type=JSON,
                            headers=CIMultiDict(headers) if headers else None)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        connect = nodeproxy.match(request.path) if self._node_proxy is not None else None
        if connect is not None and self._node_proxy is not None:
            return await self._connect(request, self._node_proxy, connect)
        path = request.path.rstrip("/") or "/"
        if request.method == "POST":
            kind = review_kind(path)
            if kind == "SelfSubjectReview":  # nothing of the body is read (kubectl sends it as protobuf)
                await request.read()
                return _json(self.reviews.create(kind, None, user_of(request)), status=201)
            if kind is not None:
                body, _dups, _ctype = await self._body(request)
                parts = path.split("/")
                namespace = parts[5] if kind == "LocalSubjectAccessReview" else ""
                return _json(self.reviews.create(kind, body, user_of(request), namespace), status=201)
        static = self._static(request, path)
        if static is not None:
            return static
        target = parse_path(self.catalog, path)
        if target is None or (not target.resource.stored and (target.name or target.legacy_watch)):
            # a review kind has no item path (upstream registers only its collection's POST)
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        method = request.method
        if not target.resource.stored:  # a review kind: its POST was answered above
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        if method in ("GET", "HEAD"):
            return await self._read(request, target)
        if target.legacy_watch:
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        if method == "POST":
            return await self._post(request, target)
        if method == "PUT":
            return await self._put(request, target)
        if method == "PATCH":
            return await self._patch(request, target)
        if method == "DELETE":
            return await self._delete(request, target)
        raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    async def _connect(self, request: web.Request, proxy: nodeproxy.NodeProxy,
                       target: tuple[str, ...]) -> web.StreamResponse:
        """The connect subresources that reach a kubelet: nodes/proxy, pods/log, exec/attach/portforward."""
        what, first, second = target
        if what == "proxy":
            return await proxy.node_proxy(request, first, second)
        if what == "log":
            return await proxy.pod_log(request, first, second)
        raise proxy.refuse_stream(first, second, what, request.query.get("container", ""))

    # --- discovery, version, openapi ---

    def _static(self, request: web.Request, path: str) -> web.Response | None:
        if path == "/version":
            return _json(discovery.version_info(self._kubernetes_version, platform.python_version(),
                                                f"{sys.platform}/{platform.machine()}"))
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if path in (sa_tokens.OPENID_CONFIG_PATH, sa_tokens.JWKS_PATH) and self._token_signer is not None:
            # the service-account issuer's discovery (routes/openidmetadata.go): for relying parties that
            # verify tokens themselves; system:service-account-issuer-discovery lets service accounts read it
            keys = [self._token_signer.public]
            body, media = (sa_tokens.jwks(keys), "application/jwk-set+json") if path == sa_tokens.JWKS_PATH else (
                sa_tokens.openid_configuration(f"https://{self._server_address()}{sa_tokens.JWKS_PATH}"),
                "application/json")
            return web.Response(body=body, headers={"Content-Type": media,
                                                    "Cache-Control": f"public, max-age={sa_tokens.OPENID_MAX_AGE}"})
        if path in ("/api", "/apis"):
            accept = request.headers.get("Accept", "")
            for media in (discovery.AGGREGATED_V2, discovery.AGGREGATED_V2BETA1):
                if _accepts_aggregated(accept, media):
                    version = "apidiscovery.k8s.io/v2" if media == discovery.AGGREGATED_V2 \
                        else "apidiscovery.k8s.io/v2beta1"
                    doc = discovery.aggregated(self.catalog, core=path == "/api", api_version=version)
                    return web.Response(body=orjson.dumps(doc), headers={"Content-Type": media})
            if path == "/api":
                return _json(discovery.api_versions(self._server_address()))
            return _json(discovery.api_group_list(self.catalog))
        parts = [p for p in path.split("/") if p]
        found: dict[str, Any] | None
        if len(parts) == 2 and parts[0] == "api":
            found = discovery.resource_list(self.catalog, "", parts[1])
        elif len(parts) == 2 and parts[0] == "apis":
            found = discovery.api_group(self.catalog, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            found = discovery.resource_list(self.catalog, parts[1], parts[2])
        else:
            found = {}
        if found is None:
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        if found:
            return _json(found)
        if parts and parts[0] == "openapi":
            return self._openapi_doc(request, parts[1:])
        return None

    def _openapi_doc(self, request: web.Request, rest: list[str]) -> web.Response:
        """The OpenAPI documents, negotiated and validated as kube-openapi serves them (openapi_http.py)."""
        answer: web.Response | None = self._openapi.serve(request, rest)
        if answer is not None:
            return answer
        raise APIError(404, "NotFound", "the server could not find the requested resource")

    # --- reads ---

    async def _read(self, request: web.Request, t: Target) -> web.StreamResponse:
        q = request.query
        watching = bool(query_bool(q.get("watch")) or t.legacy_watch) and (not t.name or t.legacy_watch)
        view = self._view(request, t, watch=watching)
        if t.name and not t.legacy_watch:
            if t.subresource in ("binding", "finalize", "token", "eviction"):  # FinalizeREST: Update only; TokenREST,
                # EvictionREST: Create only
                raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                               "resource")
            if t.subresource == "scale":
                return _answer(self.registry.get_scale(t.resource, t.namespace, t.name), view)
            obj = self.registry.get(t.resource, t.namespace, t.name)
            return self._object(obj, t.resource, view, request=request)
        getters = self.registry.behaviour(t.resource).strategy.field_getters()
        labels = parse_label_selector(q.get("labelSelector", "")) if q.get("labelSelector") else None
        field_text = q.get("fieldSelector", "")
        if t.name:  # legacy /watch/.../NAME
            field_text = ",".join(x for x in (field_text, f"metadata.name={t.name}") if x)
        fields = parse_field_selector(field_text, getters, t.resource.kind, t.resource.version) if field_text else None
        if watching:
            return await self._watch(request, t, labels, fields, view)
        rv = parse_resource_version(q.get("resourceVersion"))
        match = q.get("resourceVersionMatch", "")
        self._check_list_rv(rv, match)
        limit = parse_int(q.get("limit"), "limit")
        items, list_rv, token, remaining = self.registry.list(
            t.resource, t.namespace, labels, fields, limit=limit or None, continue_token=q.get("continue", ""))
        list_meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if token:
            list_meta["continue"] = token
        if remaining is not None:
            list_meta["remainingItemCount"] = remaining
        if view.kind == "table":
            return _json(self._table(t.resource, items, request, list_meta))
        if view.kind == "metadata":
            doc = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
                   "items": [_partial(o) for o in items]}
        else:
            if not t.resource.custom and view.content_type != PROTOBUF:
                # a typed list's items carry no apiVersion/kind in kube-apiserver's JSON (its encoder
                # writes the list's TypeMeta only); a custom resource's (unstructured) keep theirs
                items = [_without_type_meta(o) for o in items]
            doc = {"kind": t.resource.list_kind, "apiVersion": t.resource.api_version, "metadata": list_meta,
                   "items": items}
        if view.content_type != PROTOBUF and request.method == "GET":
            return await _json_list(request, doc)
        return _answer(doc, view, memo=self._memo)

    def _view(self, request: web.Request, t: Target, *, watch: bool = False) -> View:
        """The negotiated view and media type of a resource request's answer (routing.parse_accept):
        protobuf for the kinds with a message (the scale subresource answers autoscaling/v1 Scale),
        never for custom resources (their StandardSerializers leave protobuf out)."""
        if t.subresource == "scale":
            proto = True
        else:
            proto = not t.resource.custom and encoding.has_message(t.resource.api_version, t.resource.kind)
        return parse_accept(request.headers.get("Accept", ""), protobuf=proto, watch=watch)

    def _check_list_rv(self, rv: int | None, match: str) -> None:
        if match and match not in ("Exact", "NotOlderThan"):
            raise bad_request(f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", '
                              '"NotOlderThan"')
        if match and rv is None:
            raise bad_request("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                              "resourceVersion is provided")
        current = self.registry.store.resource_version
        if rv is not None and rv > current:
            raise APIError(504, "Timeout", f"Too large resource version: {rv}, current: {current}",
                           details={"causes": [{"reason": "ResourceVersionTooLarge",
                                                "message": "Too large resource version"}], "retryAfterSeconds": 1})
        if match == "Exact" and rv is not None and rv != current:
            raise APIError(410, "Expired", f"too old resource version: {rv} ({current})")

    @staticmethod
    def _include_object(request: web.Request) -> str:
        """TableOptions.includeObject of the request: upstream's optionsForTransform reads it for every
        Table answer, a single object's (GET, and a write's answer) as a list's."""
        include = request.query.get("includeObject", "Metadata")
        if include not in ("None", "Metadata", "Object"):
            raise bad_request(f'includeObject: Unsupported value: "{include}": supported values: "None", '
                              '"Metadata", "Object"')
        return include

    def _table(self, res: Resource, items: list[dict[str, Any]], request: web.Request,
               list_meta: Mapping[str, Any] | None) -> dict[str, Any]:
        include = self._include_object(request)
        beh = self.registry.behaviour(res)
        from nodeagent.apiserver import tables  # see _object

        return tables.table(res, items, now=self.registry.clock.now(), include_object=include,
                            printer_columns=beh.printer_columns or None, list_meta=list_meta)

    def _object(self, obj: dict[str, Any], res: Resource, view: View, *, status: int = 200,
                warnings: tuple[str, ...] = (), request: web.Request | None = None) -> web.Response:
        if view.kind == "table":
            include = "Metadata" if request is None else self._include_object(request)
            # imported here, not with this module: the printers of every kind, jsonpath (12 modules, ~11 ms
            # CPU of imports) are no part of a restart to ready (issue 25); the daemon loads them right after
            # READY=1 (wiring/control_plane._load_printers), not on the first Table asked for
            from nodeagent.apiserver import tables

            doc: Any = tables.table(res, [obj], now=self.registry.clock.now(), include_object=include,
                                    printer_columns=self.registry.behaviour(res).printer_columns or None)
        elif view.kind == "metadata":
            doc = _partial(obj)
        else:
            doc = obj
        headers = header_values.warning_headers(warnings)
        return _answer(doc, view, status=status, headers=headers or None, api_version=res.api_version, kind=res.kind,
                       memo=self._memo)

    async def _watch(self, request: web.Request, t: Target, labels: Any, fields: Any, view: View) -> web.StreamResponse:
        q = request.query
        rv = parse_resource_version(q.get("resourceVersion"))
        send_initial: bool | None = None
        if q.get("sendInitialEvents") is not None:
            send_initial = query_bool(q["sendInitialEvents"])
            if q.get("resourceVersionMatch") != "NotOlderThan":
                raise APIError(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
                               'Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan')
        elif q.get("resourceVersionMatch"):
            raise APIError(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                           "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
        current = self.registry.store.resource_version
        if rv is not None and rv > current:  # the watch cache's answer after its wait
            raise APIError(504, "Timeout", f"Too large resource version: {rv}, current: {current}",
                           details={"causes": [{"reason": "ResourceVersionTooLarge",
                                                "message": "Too large resource version"}], "retryAfterSeconds": 1})
        timeout = parse_int(q.get("timeoutSeconds"), "timeoutSeconds")
        opts = WatchOptions(resource_version=rv, send_initial_events=send_initial,
                            bookmarks=query_bool(q.get("allowWatchBookmarks")),
                            timeout=float(timeout) if timeout else DEFAULT_WATCH_TIMEOUT,
                            bookmark_interval=self._bookmark_interval)
        watch = RestWatch(self.registry, t.resource, t.namespace, labels, fields, opts)
        proto = view.content_type == PROTOBUF
        # kube-apiserver's watch handler: any type but JSON is announced with its `;stream=watch`
        media = f"{PROTOBUF};stream=watch" if proto else JSON
        lines = self._encoded_proto if proto else self._encoded
        response = web.StreamResponse(status=200, headers={"Content-Type": media, "Cache-Control": "no-cache"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        writer = WatchWriter(request, response, t.resource.plural)
        batches = watch.batches()
        first_table = True
        task = asyncio.current_task()
        if task is not None:
            self._watches.add(task)
        reader = t.resource.plural if view.kind == "object" else ""  # other views encode their own dicts
        if reader:
            lines.join(reader)
        try:
            async for batch in batches:
                if view.kind != "object":
                    out: list[Event] = []
                    for ev in map(_as_dict, batch):
                        if ev["type"] == "BOOKMARK" and view.kind == "metadata":
                            # as kube-apiserver writes it: a PartialObjectMetadata with only the
                            # resourceVersion (and the initial-events-end annotation); client-go's
                            # metadata informer refuses any other kind and falls back to list+watch
                            ev = {"type": "BOOKMARK", "object": _partial(ev["object"])}
                        elif ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            if view.kind == "table":
                                shown: dict[str, Any] = self._table(t.resource, [ev["object"]], request, None)
                                if not first_table:
                                    shown["columnDefinitions"] = []
                                first_table = False
                            else:
                                shown = _partial(ev["object"])
                            ev = {"type": ev["type"], "object": shown}
                        out.append(ev)
                    batch = out
                await writer.write(lines.batch(batch, t.namespace, shared=lines.shared(reader)))
                if self.stopping.is_set():
                    break
        except Unresponsive:
            await batches.aclose()  # the store watch goes now, with what it had queued
            await writer.close_unresponsive()
            return response
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if reader:
                lines.leave(reader)
            await batches.aclose()
            if task is not None:
                self._watches.discard(task)
        await writer.end()
        return response

    async def close_watches(self) -> None:
        self.stopping.set()
        for task in list(self._watches):
            task.cancel()

    # --- writes ---

    async def _body(self, request: web.Request, *, yaml_ok: bool = True,
                    kind: str = "") -> tuple[Any, BodyFacts, str]:
        """The decoded body, its duplicate fields and its media type. `kind` names the built-in or
        custom kind a create or update body must be: a body that is no object, or not JSON, is
        refused as upstream's version/kind sniff refuses it (`the object provided is unrecognized
        (must be of type Pod): couldn't get version/kind; json parse error: ...`)."""
        length = request.content_length
        if length is not None and length > self._max_body:
            raise await self._too_large(request)
        # StreamReader.read(n) returns what has arrived so far (up to n bytes), not the whole body: a
        # large body comes in several reads, so read until EOF or just past the limit.
        buf = bytearray()
        while len(buf) <= self._max_body:
            chunk = await request.content.read(self._max_body + 1 - len(buf))
            if not chunk:
                break
            buf += chunk
        raw = bytes(buf)
        if len(raw) > self._max_body:
            raise await self._too_large(request)
        ctype = content_type(request.headers.get("Content-Type", JSON))
        request[BODY_SIZE] = len(raw)
        if not raw.strip():
            return None, BodyFacts(), ctype
        try:
            if len(raw) >= OFFLOAD_BYTES:
                value, dups = await asyncio.to_thread(_decode, raw, ctype, yaml_ok)
            else:
                value, dups = _decode(raw, ctype, yaml_ok)
        except decoder.UnknownKind:
            raise APIError(415, "UnsupportedMediaType", 'the body of the request was in an unknown format - '
                           'accepted media types include: application/json, application/yaml') from None
        except ValueError as err:
            if kind and ctype in (JSON, "*/*", ""):
                raise _unrecognized(kind, str(err), raw) from None
            raise bad_request(f"error decoding request body: {err}") from None
        if kind and ctype != PROTOBUF:
            sniffed = typed.sniff_error(value)
            if sniffed is not None:
                raise _unrecognized(kind, sniffed, raw)
            if value is None:  # `null` decodes into the empty object, as into a Go struct
                value = {}
        return value, dups, ctype

    async def _too_large(self, request: web.Request) -> APIError:
        """The 413 of a body past the limit, after reading (and dropping) what follows of it up to twice
        the limit: a client that writes its whole body before it reads (the Python client, urllib3)
        gets the answer instead of a connection reset. A longer body is cut off unread, as before."""
        dropped = 0
        with contextlib.suppress(ConnectionError, asyncio.TimeoutError):
            while dropped <= self._max_body * 2:
                chunk = await request.content.readany()
                if not chunk:
                    break
                dropped += len(chunk)
        return APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {self._max_body}")

    async def _post(self, request: web.Request, t: Target) -> web.Response:
        if t.subresource == "token" and t.resource.plural == "serviceaccounts" and not t.resource.group:
            return await self._token_request(request, t)
        if t.subresource == "eviction" and t.resource.plural == "pods" and not t.resource.group:
            return await self._evict(request, t)
        binding = t.subresource == "binding" or t.resource.plural == "bindings"
        body, dups, _ctype = await self._body(request, kind="Binding" if binding else t.resource.kind)
        opts = self._admitting(request, t, write_options(request.query, request.headers.get("User-Agent", "")))
        view = self._view(request, t)
        if binding:
            self.registry.bind(t.namespace, t.name, body, opts)
            return _answer(status_object(201, "", ""), view, status=201)
        if t.name:
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        written = await self._run(request, t, self.registry.create, t.resource, t.namespace, body, opts, dups)
        self._written(t.resource)
        return self._object(written.object, t.resource, view, status=201 if not opts.dry_run else 200,
                            warnings=self._with_warnings(request, written.warnings), request=request)

    async def _evict(self, request: web.Request, t: Target) -> web.Response:
        """pods/NAME/eviction (eviction.py): a Status, 201 when the pod was deleted (or would be)."""
        body, _dups, _ctype = await self._body(request, kind="Eviction")
        opts = write_options(request.query, request.headers.get("User-Agent", ""))
        node, is_node = node_identity(user_of(request))
        if is_node and self.authorizer is not None:  # NodeRestriction's admitPodEviction
            pod = self.registry.store.peek("Pod", t.namespace, t.name)
            if pod is not None and (pod.get("spec") or {}).get("nodeName") != node:
                raise _admission_forbidden("", "pods", t.name,
                                           f'node "{node}" can only evict pods with spec.nodeName set to itself')
        code, answer = eviction.evict(self.registry.store, t.resource, t.namespace, t.name, body, opts.dry_run,
                                      self.registry.delete, self.registry.clock.now())
        return _json(answer, status=code)

    async def _token_request(self, request: web.Request, t: Target) -> web.Response:
        """serviceaccounts/NAME/token (tokenrequest.py); a node's request passes NodeRestriction first."""
        body, _dups, _ctype = await self._body(request, kind="TokenRequest")
        if self._token_signer is None:
            raise APIError(404, "NotFound", "the server could not find the requested resource")
        user = user_of(request)
        node, is_node = node_identity(user)
        peek = self.registry.store.peek

        def admit(tr: Mapping[str, Any]) -> None:
            if not is_node or self.authorizer is None:
                return
            pod_name, refusal = noderestriction.token_pod_name(tr)
            if not refusal:
                pod = peek("Pod", t.namespace, pod_name)
                if pod is None:
                    raise not_found("", "pods", pod_name)
                refusal = noderestriction.admit_token_request(
                    node, user.name, tr, pod, lambda audience: self._may_request_audience(user, t, audience))
            if refusal:
                raise _admission_forbidden("", "serviceaccounts", t.name, refusal)

        manager = write_options(request.query, request.headers.get("User-Agent", "")).manager()
        issued = tokenrequest.create(t.namespace, t.name, body, get=peek, signer=self._token_signer,
                                     now=self._now(), admit=admit, manager=manager)
        return _json(issued.answer, status=201)

    def _may_request_audience(self, user: UserInfo, t: Target, audience: str) -> bool:
        """The `request-serviceaccounts-token-audience` check of NodeRestriction's audience restriction."""
        assert self.authorizer is not None
        attrs = AuthzAttributes(user, "request-serviceaccounts-token-audience", True, namespace=t.namespace,
                           api_group="", api_version="v1", resource=audience, name=t.name)
        return self.authorizer.authorize(attrs).allowed

    async def _put(self, request: web.Request, t: Target) -> web.Response:
        if t.subresource in ("token", "eviction"):
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        if not t.name:
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        body, dups, _ctype = await self._body(request, kind="Scale" if t.subresource == "scale" else t.resource.kind)
        opts = self._admitting(request, t, write_options(request.query, request.headers.get("User-Agent", "")))
        if t.subresource == "scale":
            scaled = self.registry.update_scale(t.resource, t.namespace, t.name, body, opts)
            self._written(t.resource)
            return _answer(scaled, self._view(request, t))
        written = await self._run(request, t, self.registry.update, t.resource, t.namespace, t.name, t.subresource,
                                  body, opts, dups)
        self._written(t.resource)
        return self._object(written.object, t.resource, self._view(request, t),
                            warnings=self._with_warnings(request, written.warnings), request=request)

    async def _patch(self, request: web.Request, t: Target) -> web.Response:
        if not t.name:
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        ctype = content_type(request.headers.get("Content-Type", ""))
        if ctype not in PATCH_TYPES:
            raise APIError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                           "media types include: application/json-patch+json, application/merge-patch+json, "
                           "application/apply-patch+yaml, application/strategic-merge-patch+json, "
                           "application/apply-patch+cbor")
        if t.subresource in ("finalize", "token", "eviction"):  # FinalizeREST, TokenREST, EvictionREST: no Get,
            # so no Patch
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        body, dups, _ = await self._body(request)
        opts = self._admitting(request, t, write_options(request.query, request.headers.get("User-Agent", ""),
                                                         apply=ctype == APPLY_PATCH))
        if t.subresource == "scale":
            scaled = self.registry.patch_scale(t.resource, t.namespace, t.name, ctype, body, opts)
            self._written(t.resource)
            return _answer(scaled, self._view(request, t))
        request[BODY_SIZE] = max(request.get(BODY_SIZE, 0), self._stored_size(t))
        written = await self._run(request, t, self.registry.patch, t.resource, t.namespace, t.name, t.subresource,
                                  ctype, body, opts, dups)
        self._written(t.resource)
        return self._object(written.object, t.resource, self._view(request, t),
                            status=201 if written.created else 200,
                            warnings=self._with_warnings(request, written.warnings), request=request)

    async def _delete(self, request: web.Request, t: Target) -> web.Response:
        body, _dups, _ = await self._body(request)
        opts = delete_options(request.query, body)
        if t.name:
            self._admit_delete(request, t, opts.dry_run)
            request[BODY_SIZE] = self._stored_size(t)
            obj, gone = await self._run(request, t, self.registry.delete_outcome, t.resource, t.namespace, t.name,
                                        opts)
            self._written(t.resource)
            # upstream's delete handler: 202 when the object stays and orphanDependents=false was
            # asked for explicitly (not for propagationPolicy, nor for other pending deletions)
            accepted = not gone and opts.orphan_dependents is False
            view = self._view(request, t)
            return self._object(obj, t.resource, View("object", view.content_type), status=202 if accepted else 200,
                                warnings=self._with_warnings(request, ()))
        if "deletecollection" not in t.resource.verbs:
            raise APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        q = request.query
        getters = self.registry.behaviour(t.resource).strategy.field_getters()
        labels = parse_label_selector(q["labelSelector"]) if q.get("labelSelector") else None
        fields = parse_field_selector(q["fieldSelector"], getters, t.resource.kind, t.resource.version) \
            if q.get("fieldSelector") else None
        items = self.registry.delete_collection(t.resource, t.namespace, labels, fields, opts)
        self._written(t.resource)
        return _answer({"kind": t.resource.list_kind, "apiVersion": t.resource.api_version,
                        "metadata": {"resourceVersion": str(self.registry.store.resource_version)}, "items": items},
                       self._view(request, t))

    async def _run(self, request: web.Request, t: Target, call: Callable[..., _T], *args: Any) -> _T:
        """A registry write, in a worker thread when its body or object is big (OFFLOAD_BYTES), or when
        another thread's transaction holds the store (`busy`: a huge pod's status write, 0.1-1 s), which
        the write would wait for on the event loop, every socket with it (issue 25)."""
        if t.resource.plural in _LOOP_ONLY:
            return call(*args)
        store = self.registry.store
        if request.get(BODY_SIZE, 0) >= OFFLOAD_BYTES or store.busy:
            return await asyncio.to_thread(call, *args)
        warned = len(request.get(ADMISSION_WARNINGS, ()))
        try:
            with store.not_waiting():
                return call(*args)
        except StoreBusy:  # a worker took the store after the check: nothing was written, so again off the loop
            if ADMISSION_WARNINGS in request:
                del request[ADMISSION_WARNINGS][warned:]  # the admission runs again
            return await asyncio.to_thread(call, *args)

    def _stored_size(self, t: Target) -> int:
        """The encoded size of the object a DELETE names (0 when absent), for _run."""
        obj = self.registry.store.peek(t.resource.store_kind, t.namespace, t.name)
        return 0 if obj is None else len(orjson.dumps(obj))

    def _written(self, res: Resource) -> None:
        if self._on_write is not None:
            self._on_write(res)


class EventLines:
    """Encoded watch events shared by every watcher: the store hands each watcher the same
    committed object, so N watchers of one change cost one encoding, not N. An entry is reused
    only for the very object it was made from (identity, kept alive by the entry). Each cache is
    bounded in entries and in bytes (`max_bytes`): 8192 lines of large objects held half a GiB,
    and kept their events alive after every watcher had gone. `proto`: length-framed protobuf
    metav1.WatchEvent messages (protobuf/encoding.py) instead of JSON lines.

    Only events that more than one watcher reads are kept (`join`/`leave` count each resource's
    watchers of this encoding): a resource with one watcher (bench/scheduler_peer.py's pod watch,
    any single kubectl --watch) would fill both budgets with lines nobody reads again, 16 MiB that
    also kept superseded versions alive, for no hit."""

    def __init__(self, size: int = 8192, max_bytes: int = 8 << 20, *, proto: bool = False,
                 memo: Memo | None = None) -> None:
        self._proto = proto
        self._memo = memo
        self._size = size
        self._max_bytes = max_bytes
        self._lines: OrderedDict[int, tuple[WatchEvent, bytes]] = OrderedDict()
        self._lines_bytes = 0
        self._batches: OrderedDict[tuple[int, int, int, str], tuple[WatchEvent, WatchEvent, bytes]] = OrderedDict()
        self._batches_bytes = 0
        self._readers: dict[str, int] = {}

    def join(self, resource: str) -> None:
        """A watcher of `resource` (its plural) reading this encoding starts."""
        self._readers[resource] = self._readers.get(resource, 0) + 1

    def leave(self, resource: str) -> None:
        left = self._readers.get(resource, 0) - 1
        if left > 0:
            self._readers[resource] = left
        else:
            self._readers.pop(resource, None)

    def shared(self, resource: str) -> bool:
        """Whether another watcher of `resource` may read the same events: else caching is waste."""
        return self._readers.get(resource, 0) > 1

    def batch(self, events: list[Event], scope: str, *, shared: bool = True) -> bytes:
        """The lines of a batch; watchers fed by the same commit usually drain the very same run
        of store events, so a whole run is looked up once (identity of its first and last event, its
        length, and the namespace the watch is scoped to: a scoped run skips other namespaces' events).
        `shared` false: the only reader, encoded without touching the caches."""
        if not shared:
            return b"".join(map(self._encode, events))
        first, last = events[0], events[-1]
        if isinstance(first, WatchEvent) and isinstance(last, WatchEvent):
            key = (id(first), id(last), len(events), scope)
            hit = self._batches.get(key)
            if hit is not None and hit[0] is first and hit[1] is last:
                return hit[2]
            data = b"".join(map(self.line, events))
            if len(events) > 1:  # a batch of one is its line, cached already
                old = self._batches.pop(key, None)
                self._batches_bytes += len(data) - (len(old[2]) if old else 0)
                self._batches[key] = (first, last, data)
                while self._batches and (len(self._batches) > 256 or self._batches_bytes > self._max_bytes):
                    self._batches_bytes -= len(self._batches.popitem(last=False)[1][2])
            return data
        return b"".join(map(self.line, events))

    def _encode(self, ev: Event) -> bytes:
        """One event's line, uncached."""
        if not isinstance(ev, WatchEvent):
            if self._proto:
                return encoding.encode_event(ev["type"], ev["object"], memo=self._memo)
            return orjson.dumps(ev) + b"\n"
        if self._proto:
            return encoding.encode_event(ev.type, ev.object, memo=self._memo)
        return orjson.dumps({"type": ev.type, "object": ev.object}) + b"\n"

    def line(self, ev: Event) -> bytes:
        if not isinstance(ev, WatchEvent):
            return self._encode(ev)
        hit = self._lines.get(id(ev))
        if hit is not None and hit[0] is ev:
            return hit[1]
        data = self._encode(ev)
        old = self._lines.pop(id(ev), None)
        self._lines_bytes += len(data) - (len(old[1]) if old else 0)
        self._lines[id(ev)] = (ev, data)
        while self._lines and (len(self._lines) > self._size or self._lines_bytes > self._max_bytes):
            self._lines_bytes -= len(self._lines.popitem(last=False)[1][1])
        return data


def _as_dict(ev: Event) -> dict[str, Any]:
    return {"type": ev.type, "object": ev.object} if isinstance(ev, WatchEvent) else ev


def _decode(raw: bytes, ctype: str, yaml_ok: bool) -> tuple[Any, BodyFacts]:
    """A body in its media type (pure: a big one is decoded in a worker thread)."""
    if ctype in ("application/yaml", "application/apply-patch+yaml") and yaml_ok:
        value, lines = schema_fields.decode_yaml(raw)
        return value, BodyFacts(tuple(lines), yaml=True)
    if ctype in (JSON, "application/json-patch+json", "application/merge-patch+json",
                 "application/strategic-merge-patch+json", "*/*", ""):
        value, paths = schema_fields.decode_json(raw)
        return value, BodyFacts(tuple(paths), raw=raw if paths else b"")
    if ctype == PROTOBUF:
        # client-go's typed clients and kubectl's generators send protobuf for built-in kinds
        return decoder.decode(raw)[0], BodyFacts()
    raise APIError(415, "UnsupportedMediaType", 'the body of the request was in an unknown format - '
                   'accepted media types include: application/json, application/yaml')


def _unrecognized(kind: str, err: str, raw: bytes) -> APIError:
    """upstream's transformDecodeError when the version/kind sniff failed: the error and a summary of the body."""
    if raw[:1] == b"{":
        summary = raw[:30].decode(errors="replace") + (" ..." if len(raw) > 30 else "")
    else:
        summary = raw[:30].hex() + (" ..." if len(raw) > 30 else "")
    return bad_request(f"the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; "
                       f"json parse error: {err} ({summary})")


def _without_type_meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "apiVersion" and k != "kind"}


def _json(doc: Any, status: int = 200) -> web.Response:
    return SentResponse(status=status, body=orjson.dumps(doc), content_type=JSON)


async def _json_list(request: web.Request, doc: Mapping[str, Any]) -> web.StreamResponse:
    """A list's JSON answer (`doc`'s items its last key), the bytes of orjson.dumps(doc): one body when
    it stays under STREAM_BYTES, else written as its items are encoded, chunked, about STREAM_BYTES at
    a time, each write waiting for the connection to take the last (kube-apiserver's streaming
    collection encoder, StreamingCollectionEncodingToJSON: the list is never one buffer either).

    Why: a whole body was the encoded list and, on its way out, its TLS records in the SSL object's
    buffer and in the socket transport's: a 2500-pod LIST (16 MB) raised the daemon's RSS by ~50 MiB
    at once in bench/scheduler_peer.py."""
    items = doc["items"]
    assert list(doc)[-1] == "items"
    head = orjson.dumps({k: v for k, v in doc.items() if k != "items"})
    parts = [head[:-1], b',"items":[']
    pending = 0
    response: web.StreamResponse | None = None
    for i, item in enumerate(items):
        data = orjson.dumps(item)
        if i:
            parts.append(b",")
        parts.append(data)
        pending += len(data)
        if pending >= STREAM_BYTES:
            if response is None:
                response = web.StreamResponse(status=200)
                response.content_type = JSON
                response.enable_chunked_encoding()
                await response.prepare(request)
            await response.write(b"".join(parts))
            parts.clear()
            pending = 0
    parts.append(b"]}")
    if response is None:
        return SentResponse(body=b"".join(parts), content_type=JSON)
    await response.write(b"".join(parts))
    await response.write_eof()
    return response


def _answer(doc: Mapping[str, Any], view: View, *, status: int = 200, headers: Any = None, api_version: str = "",
            kind: str = "", memo: Memo | None = None) -> web.Response:
    """An answer in the negotiated media type: protobuf in its envelope, or JSON. An answer the tables
    cannot write (a kind without a message, a value of the wrong type) goes as JSON, which every
    client reads by its Content-Type, rather than as a 500. `memo` only for documents made of stored
    versions (encoder.Memo)."""
    if view.content_type == PROTOBUF:
        try:
            body = encoding.encode_object(doc, api_version, kind, memo)
        except (KeyError, EncodeError):
            logger.exception("protobuf answer not encodable, answered JSON kind=%s", doc.get("kind") or kind)
        else:
            return SentResponse(status=status, body=body, content_type=PROTOBUF, headers=headers)
    return SentResponse(status=status, body=orjson.dumps(doc), content_type=JSON, headers=headers)


def _partial(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


async def _authn_warnings(request: web.Request, response: web.StreamResponse) -> None:
    """The authenticator's warnings (AUTHN_WARNINGS) on every answer, before the answer's own (the
    recorder got them first upstream), a text once."""
    found = request.get(AUTHN_WARNINGS)
    if not found:
        return
    own = response.headers.getall("Warning", [])
    first = [value for _, value in header_values.warning_headers(found)]
    response.headers.popall("Warning", None)
    for value in (*first, *(v for v in own if v not in first)):
        response.headers.add("Warning", value)


async def _safe_headers(_request: web.Request, response: web.StreamResponse) -> None:
    """Every answer's header values made writable as net/http writes them (headers.safe_headers)."""
    header_values.safe_headers(response.headers)


def _accepts_aggregated(accept: str, media: str) -> bool:
    want = {p.strip() for p in media.split(";")}
    for raw in accept.split(","):
        parts = {p.strip() for p in raw.split(";")}
        if want <= parts:
            return True
    return False


def _options(kind: str, opts: WriteOptions) -> dict[str, Any]:
    """The request's CreateOptions/UpdateOptions as admission's request.options shows them."""
    out: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if opts.dry_run:
        out["dryRun"] = ["All"]
    if opts.field_manager:
        out["fieldManager"] = opts.field_manager
    return out


def _plugin_admit(user: UserInfo, name: str, obj: Mapping[str, Any]) -> None:
    """A plugin identity's slice write, judged as the DRA driver charts' ValidatingAdmissionPolicy does."""
    message = pluginrestriction.refusal(user, obj)
    if message:
        text = pluginrestriction.denied_message(name, message)
        raise APIError(422, "Invalid", text, details={
            "name": name, "group": "resource.k8s.io", "kind": "resourceslices",
            "causes": [{"message": text.partition(" is forbidden: ")[2]}]})


def _admission_forbidden(group: str, plural: str, name: str, reason: str) -> APIError:
    """admission.NewForbidden: `<resource>[.group] "<name>" is forbidden: <reason>`."""
    qualified = f"{plural}.{group}" if group else plural
    message = f'{qualified} "{name}" is forbidden: {reason}' if name else f"{qualified} is forbidden: {reason}"
    return APIError(403, "Forbidden", message, details={k: v for k, v in (("name", name), ("group", group),
                                                                         ("kind", plural)) if v})
