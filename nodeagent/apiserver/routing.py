"""Request paths and media types of the Kubernetes REST API, parsed into what the registry needs.

Why apart from the handlers: the path grammar (/api/v1/namespaces/NS/pods/NAME/status, the
legacy /watch/ prefix, namespaces' own subresources) and the Accept/Content-Type rules
(Table and PartialObjectMetadata views, patch types, protobuf refused) are pure string work
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
    """How to answer a read: a plain object, a Table, or PartialObjectMetadata."""

    kind: str  # "object" | "table" | "metadata"
    content_type: str = JSON


def parse_accept(header: str) -> View:
    """Pick the first acceptable media type of the Accept header, as the API server negotiates;
    406 when none is (protobuf, text/html, or only views the server does not produce)."""
    if not header.strip():
        return View("object")
    for raw in header.split(","):
        media, *params = [p.strip() for p in raw.split(";")]
        if media not in (JSON, "*/*", "application/*", YAML):
            continue
        opts = dict(p.split("=", 1) for p in params if "=" in p)
        as_ = opts.get("as", "")
        if as_ == "Table" and opts.get("g") == "meta.k8s.io" and opts.get("v") in ("v1", "v1beta1"):
            return View("table")
        if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList") and opts.get("g") == "meta.k8s.io":
            return View("metadata")
        if not as_:
            return View("object")
    raise APIError(406, "NotAcceptable", "only the following media types are accepted: application/json, "
                   "application/yaml")


def content_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()
