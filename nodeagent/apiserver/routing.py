"""Request paths and media types of the Kubernetes REST API, parsed into what the registry needs.

Why apart from the handlers: the path grammar (/api/v1/namespaces/NS/pods/NAME/status, the
legacy /watch/ prefix, namespaces' own subresources) and the Accept/Content-Type rules
(Table and PartialObjectMetadata views, JSON or protobuf, patch types) are pure string work
with the API server's error texts, and are tested without a server. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeagent.apiserver.catalog import Catalog, Resource
from nodeagent.apiserver.errors import APIError

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"


@dataclass(frozen=True)
class Target:
    """A resource request: what, where, and whether it came through the legacy /watch/ prefix."""

    resource: Resource
    namespace: str
    name: str
    subresource: str
    legacy_watch: bool = False


def parse_path(catalog: Catalog, path: str) -> Target | None:
    """None when the path is not a resource path (discovery and OpenAPI are routed elsewhere)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return None
    legacy_watch = False
    if rest[0] == "watch":
        legacy_watch, rest = True, rest[1:]
        if not rest:
            return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace, rest = rest[1], rest[2:]
    plural, name, sub = rest[0], rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else ""
    if len(rest) > 3:
        raise _not_found_path(path)
    res = catalog.find(group, version, plural)
    if res is None:
        raise _not_found_path(path)
    if namespace and not res.namespaced:
        raise _not_found_path(path)
    if sub and sub not in res.subresources:
        raise _not_found_path(path)
    return Target(res, namespace, name, sub, legacy_watch)


def _not_found_path(path: str) -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource", details={})


@dataclass(frozen=True)
class View:
    """How to answer a read: a plain object, a Table, or PartialObjectMetadata, in JSON or protobuf."""

    kind: str  # "object" | "table" | "metadata"
    content_type: str = JSON


# The serializers kube-apiserver's codec factory offers, in its order (CBOR's feature gate is off):
# (type, subtype, has a stream serializer). YAML has none, so a watch negotiated to YAML is a 406.
_OFFERS = (("application", "json", True), ("application", "yaml", False),
           ("application", "vnd.kubernetes.protobuf", True))
_MEDIA = {"json": JSON, "yaml": YAML, "vnd.kubernetes.protobuf": PROTOBUF}
_META_VERSIONS = ("v1", "v1beta1")


@dataclass(frozen=True)
class _Clause:
    type: str
    subtype: str
    q: float
    params: dict[str, str]


def _clauses(header: str) -> list[_Clause]:
    """goautoneg.ParseAccept: clauses with their q (1 unless given) and parameters, sorted by q, then
    concrete types before wildcards, with Go's sort (an insertion sort at these sizes: stable)."""
    out: list[_Clause] = []
    for part in header.split(","):
        part = part.strip(" ")
        media, _, rest = part.partition(";")
        typ, slash, sub = media.partition("/")
        typ = typ.strip(" ")
        if not slash:
            if typ != "*":
                continue
            sub = "*"
        elif "/" in sub:
            continue
        q, params = 1.0, {}
        for param in rest.split(";") if rest else ():
            key, eq, value = param.partition("=")
            if not eq or "=" in value:
                continue
            if key.strip(" ") == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                params[key.strip(" ")] = value.strip(" ")
        out.append(_Clause(typ, sub.strip(" "), q, params))

    def less(a: _Clause, b: _Clause) -> bool:
        return a.q > b.q or (a.type != "*" and b.type == "*") or (a.subtype != "*" and b.subtype == "*")

    for i in range(1, len(out)):
        j = i
        while j > 0 and less(out[j], out[j - 1]):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return out


def _options(clause: _Clause, subtype: str, streams: bool, protobuf: bool, endpoint: bool) -> View | None:
    """acceptMediaTypeOptions with the resource endpoint's restrictions (RequestScope's), or with
    DefaultEndpointRestrictions when `endpoint` is False (errors: no view, any serializer)."""
    p = clause.params
    convert = any(k in p for k in ("as", "g", "v"))
    if p.get("stream") and (not streams or p["stream"] != "watch"):
        return None
    if p.get("sv") and (not endpoint or p["sv"] != "v1"):
        return None
    media = _MEDIA[subtype]
    if not convert:
        # the kind's own serializers: protobuf only where the kind has a protobuf message (custom
        # resources' StandardSerializers leave it out; here also built-in kinds without tables)
        return View("object", media) if endpoint is False or media != PROTOBUF or protobuf else None
    if not endpoint or p.get("g") != "meta.k8s.io" or p.get("v") not in _META_VERSIONS:
        return None
    as_ = p.get("as", "")
    if as_ == "Table":
        return View("table", JSON) if media != PROTOBUF else None
    if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList"):
        return View("metadata", media)
    return None


def _negotiate(header: str, protobuf: bool, endpoint: bool) -> tuple[View | None, bool]:
    """The first (clause, offer) pair that negotiates, as NegotiateMediaTypeOptions; and whether
    the offer it matched streams."""
    if not header.strip():
        return View("object"), True
    for clause in _clauses(header):
        for typ, sub, streams in _OFFERS:
            if (clause.type == typ and clause.subtype in (sub, "*")) or (clause.type == "*" and clause.subtype == "*"):
                view = _options(clause, sub, streams, protobuf, endpoint)
                if view is not None:
                    return view, streams
    return None, False


def parse_accept(header: str, *, protobuf: bool = False, watch: bool = False) -> View:
    """The view and media type kube-apiserver negotiates for a resource request's Accept header:
    clauses by q, each against JSON, YAML and protobuf in that order; `protobuf` says the kind has
    a protobuf message; a watch needs a streaming serializer (YAML has none). 406 when nothing is
    acceptable. YAML is answered as JSON (a difference written down in the README)."""
    view, streams = _negotiate(header, protobuf, endpoint=True)
    if watch and (view is None or not streams):
        raise APIError(406, "NotAcceptable", "only the following media types are accepted: "
                       f"{JSON};stream=watch, {PROTOBUF};stream=watch")
    if view is None:
        raise APIError(406, "NotAcceptable", "only the following media types are accepted: "
                       f"{JSON}, {YAML}, {PROTOBUF}")
    if view.content_type == YAML:
        return View(view.kind, JSON)
    return view


def error_media(header: str) -> str:
    """The media type of an error Status: responsewriters.ErrorNegotiated negotiates the request's
    Accept with the default restrictions (no view conversions), so a client that asked for protobuf
    gets its Status in protobuf; JSON when nothing negotiates, as WriteObjectNegotiated falls back."""
    view, _ = _negotiate(header, True, endpoint=False)
    return PROTOBUF if view is not None and view.content_type == PROTOBUF else JSON


def content_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()
