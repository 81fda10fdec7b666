"""Request paths and Accept negotiation as the API server's request-info resolver and negotiator read them."""

from __future__ import annotations

import pytest

from nodeagent.apiserver.catalog import Catalog, builtin_resources
from nodeagent.apiserver.errors import APIError
from nodeagent.apiserver.routing import content_type, error_media, parse_accept, parse_path

CATALOG = Catalog(builtin_resources())
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
TABLE_B1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
META = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
PROTOBUF = "application/vnd.kubernetes.protobuf"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # cluster-scoped
        ("/api/v1/nodes", ("", "v1", "nodes", "", "", "", False)),
        ("/api/v1/nodes/n1", ("", "v1", "nodes", "", "n1", "", False)),
        ("/api/v1/nodes/n1/status", ("", "v1", "nodes", "", "n1", "status", False)),
        ("/apis/resource.k8s.io/v1beta1/resourceslices/s", ("resource.k8s.io", "v1beta1", "resourceslices", "", "s",
                                                            "", False)),
        # namespaced, and lists across all namespaces
        ("/api/v1/namespaces/ns1/pods", ("", "v1", "pods", "ns1", "", "", False)),
        ("/api/v1/namespaces/ns1/pods/p", ("", "v1", "pods", "ns1", "p", "", False)),
        ("/api/v1/pods", ("", "v1", "pods", "", "", "", False)),
        ("/apis/resource.k8s.io/v1/resourceclaims", ("resource.k8s.io", "v1", "resourceclaims", "", "", "", False)),
        # subresources
        ("/api/v1/namespaces/ns1/pods/p/status", ("", "v1", "pods", "ns1", "p", "status", False)),
        ("/api/v1/namespaces/ns1/pods/p/binding", ("", "v1", "pods", "ns1", "p", "binding", False)),
        ("/apis/resource.k8s.io/v1/namespaces/d/resourceclaims/c/status",
         ("resource.k8s.io", "v1", "resourceclaims", "d", "c", "status", False)),
        # namespaces themselves and their own /status
        ("/api/v1/namespaces", ("", "v1", "namespaces", "", "", "", False)),
        ("/api/v1/namespaces/ns1", ("", "v1", "namespaces", "", "ns1", "", False)),
        ("/api/v1/namespaces/ns1/status", ("", "v1", "namespaces", "", "ns1", "status", False)),
        # the legacy /watch/ prefix
        ("/api/v1/watch/pods", ("", "v1", "pods", "", "", "", True)),
        ("/api/v1/watch/namespaces/ns1/pods", ("", "v1", "pods", "ns1", "", "", True)),
        ("/api/v1/watch/namespaces/ns1/pods/p", ("", "v1", "pods", "ns1", "p", "", True)),
        ("/api/v1/watch/namespaces", ("", "v1", "namespaces", "", "", "", True)),
        ("/api/v1/watch/namespaces/ns1", ("", "v1", "namespaces", "", "ns1", "", True)),
        ("/apis/resource.k8s.io/v1/watch/resourceslices", ("resource.k8s.io", "v1", "resourceslices", "", "", "",
                                                           True)),
        # trailing slashes and doubled slashes do not matter
        ("/api/v1/namespaces/ns1/pods/", ("", "v1", "pods", "ns1", "", "", False)),
    ],
)
def test_resource_paths(path: str, expected: tuple[str, str, str, str, str, str, bool]) -> None:
    t = parse_path(CATALOG, path)
    assert t is not None
    got = (t.resource.group, t.resource.version, t.resource.plural, t.namespace, t.name, t.subresource, t.legacy_watch)
    assert got == expected


@pytest.mark.parametrize("path", ["/", "/api", "/apis", "/api/v1", "/apis/resource.k8s.io",
                                  "/apis/resource.k8s.io/v1", "/version", "/healthz", "/openapi/v2", "/api/v1/watch"])
def test_non_resource_paths_are_none(path: str) -> None:
    assert parse_path(CATALOG, path) is None


@pytest.mark.parametrize(
    "path",
    [
        "/apis/nope.example.com/v1/things",  # unknown group
        "/apis/resource.k8s.io/v9/resourceclaims",  # unknown version
        "/api/v1/widgets",  # unknown resource
        "/api/v1/namespaces/ns1/nodes",  # a cluster-scoped kind under a namespace
        "/api/v1/namespaces/ns1/pods/p/log",  # a subresource not served
        "/api/v1/namespaces/ns1/configmaps/c/status",  # configmaps have no status
        "/api/v1/namespaces/ns1/pods/p/status/extra",  # too deep
        "/apis/resource.k8s.io/v1alpha3/resourceclaims",  # v1alpha3 serves only PodSchedulingContext
    ],
)
def test_unknown_paths_are_404(path: str) -> None:
    with pytest.raises(APIError) as err:
        parse_path(CATALOG, path)
    assert (err.value.code, err.value.reason, err.value.message) == (
        404, "NotFound", "the server could not find the requested resource")


@pytest.mark.parametrize(
    ("accept", "view"),
    [
        ("", "object"),
        ("application/json", "object"),
        ("*/*", "object"),
        ("application/*", "object"),
        ("application/yaml", "object"),
        ("application/json, */*", "object"),
        # kubectl get: Table in v1, then v1beta1, then plain JSON
        (f"{TABLE},{TABLE_B1},application/json", "table"),
        (f"{TABLE_B1},application/json", "table"),
        (f"{META},application/json", "metadata"),
        ("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", "metadata"),
        # client-go asking for protobuf first gets JSON
        (f"{PROTOBUF},application/json", "object"),
        (f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io,{TABLE}", "table"),
        # a view the server does not know falls through to the next entry
        ("application/json;as=Table;v=v2;g=meta.k8s.io,application/json", "object"),
        ("application/json;as=Foo;g=x;v=y,application/json", "object"),
        # parameters in any order, with spaces
        ("application/json; g=meta.k8s.io; v=v1; as=Table", "table"),
    ],
)
def test_accept_negotiation(accept: str, view: str) -> None:
    assert parse_accept(accept).kind == view
    assert parse_accept(accept).content_type == "application/json"


@pytest.mark.parametrize(
    "accept",
    [
        PROTOBUF,
        f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io",
        "text/html",
        "application/xml, text/plain",
        "application/json;as=Foo;g=x;v=y",  # only a view we do not serve
    ],
)
def test_nothing_acceptable_is_406(accept: str) -> None:
    with pytest.raises(APIError) as err:
        parse_accept(accept)
    assert (err.value.code, err.value.reason) == (406, "NotAcceptable")
    assert err.value.message.startswith("only the following media types are accepted: application/json")


@pytest.mark.parametrize(
    ("header", "media"),
    [
        ("application/json", "application/json"),
        ("application/json; charset=utf-8", "application/json"),
        ("Application/Merge-Patch+JSON", "application/merge-patch+json"),
        ("", ""),
    ],
)
def test_content_type(header: str, media: str) -> None:
    assert content_type(header) == media


PB = "application/vnd.kubernetes.protobuf"


@pytest.mark.parametrize(
    ("accept", "kind", "media"),
    [
        # client-go's default for built-in kinds, and its `q` spelling
        (f"{PB}, */*", "object", PB),
        (f"{PB};q=0.9, application/json;q=0.5", "object", PB),
        # q orders before position; a concrete type before a wildcard
        (f"application/json;q=0.5, {PB}", "object", PB),
        (f"*/*, {PB}", "object", PB),
        # goautoneg's Less looks at wildcards even when q already ordered the pair: a lower-q
        # concrete type still moves before a wildcard (as kube-apiserver answers)
        (f"application/*, {PB};q=0.8", "object", PB),
        (f"application/json, {PB};q=0.8", "object", "application/json"),
        ("*/*", "object", "application/json"),
        (f"application/json, {PB}", "object", "application/json"),
        # views: PartialObjectMetadata has protobuf, Table only JSON (AllowsMediaTypeTransform)
        (f"{PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json", "metadata", PB),
        (f"{PB};as=Table;g=meta.k8s.io;v=v1, application/json", "object", "application/json"),
        (f"{PB};stream=watch", "object", PB),
    ],
)
def test_protobuf_negotiation_for_a_kind_with_a_message(accept: str, kind: str, media: str) -> None:
    view = parse_accept(accept, protobuf=True)
    assert (view.kind, view.content_type) == (kind, media)


def test_a_kind_without_a_message_falls_back_to_json_or_406() -> None:
    assert parse_accept(f"{PB}, */*").content_type == "application/json"
    meta = parse_accept(f"{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    assert (meta.kind, meta.content_type) == ("metadata", PB)  # any resource's metadata view has protobuf
    with pytest.raises(APIError) as err:
        parse_accept(PB)
    assert err.value.message == ("only the following media types are accepted: application/json, "
                                 "application/yaml, application/vnd.kubernetes.protobuf")


def test_a_watch_needs_a_streaming_serializer() -> None:
    assert parse_accept(f"{PB}, */*", protobuf=True, watch=True).content_type == PB
    with pytest.raises(APIError) as err:
        parse_accept("application/yaml, application/json", protobuf=True, watch=True)
    assert (err.value.code, err.value.message) == (406, "only the following media types are accepted: "
                                                   "application/json;stream=watch, "
                                                   "application/vnd.kubernetes.protobuf;stream=watch")


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        (PB, PB),
        (f"{PB}, */*", PB),
        (f"{PB};as=Table;g=meta.k8s.io;v=v1, application/json", "application/json"),
        ("application/json;as=Table;g=meta.k8s.io;v=v1", "application/json"),  # nothing: JSON as fallback
        ("", "application/json"),
    ],
)
def test_error_status_media(accept: str, media: str) -> None:
    assert error_media(accept) == media
