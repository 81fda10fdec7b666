"""Serving the OpenAPI documents the way kube-openapi's handlers do: content negotiation over the
JSON and gnostic-protobuf encodings, ETags with If-None-Match (304), gzip, 406, and the
`?hash=` redirect and immutable caching of the per-group-version v3 documents.

Why it matters: kubectl picks the encoding by Accept. It asks /openapi/v2 for protobuf (the
`spec.v2@v1.0+protobuf` spelling, older ones `spec.v2.v1.0+protobuf`) and cannot read JSON there;
it caches v3 documents by the hash in the index and revalidates with ETags. The answers follow
upstream's: the first Accept clause (by q, then specificity) that matches an offered type wins,
in the server's order of offers; the protobuf answers carry the `spec.v2.v1.0+protobuf` type
whichever spelling was asked for; nothing acceptable is a bare 406.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime

from aiohttp import web

JSON = "application/json"
PROTO_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
PROTO_V2_DEPRECATED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTO_V3 = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
PROTO_V3_DEPRECATED = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
GZIP_MIN_SIZE = 1400
"""gziphandler's default: smaller bodies are sent as they are."""
YEAR = 365 * 24 * 3600.0


def etag_of(data: bytes) -> str:
    """kube-openapi's ETag: SHA-512 of the JSON encoding, upper-case hex (quoted on the wire)."""
    return hashlib.sha512(data).hexdigest().upper()


@dataclass
class Representation:
    """One encoding of a document, with its validator; the gzip form is made once, when first asked."""

    body: bytes
    content_type: str
    etag: str
    last_modified: float
    _gzipped: bytes | None = field(default=None, repr=False)

    def gzipped(self) -> bytes:
        if self._gzipped is None:
            self._gzipped = gzip.compress(self.body, compresslevel=6, mtime=0)
        return self._gzipped


@dataclass(frozen=True)
class Clause:
    type: str
    subtype: str
    q: float


def parse_accept(header: str) -> list[Clause]:
    """The Accept header's media ranges, best first (goautoneg: q, then concrete before wildcard)."""
    clauses: list[Clause] = []
    for part in (header or "*/*").split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        typ, _, subtype = media.partition("/")
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
        clauses.append(Clause(typ.strip().lower(), subtype.strip().lower(), q))
    clauses.sort(key=lambda c: (-c.q, c.type == "*", c.subtype == "*"))
    return clauses


def negotiate(accept: str, offers: Sequence[str]) -> str | None:
    """The offered media type (from `offers`, in the server's order) the first fitting clause picks."""
    for clause in parse_accept(accept):
        if clause.q <= 0:
            continue
        for offer in offers:
            typ, _, subtype = offer.partition("/")
            if clause.type in (typ, "*") and clause.subtype in (subtype, "*"):
                return offer
    return None


def _accepts_gzip(header: str) -> bool:
    for part in header.split(","):
        coding, *params = (p.strip() for p in part.split(";"))
        if coding.lower() in ("gzip", "*"):
            q = next((p.partition("=")[2] for p in params if p.startswith("q=")), "1")
            try:
                return float(q) > 0
            except ValueError:
                return False
    return False


def _etag_matches(header: str, etag: str) -> bool:
    """If-None-Match: `*` or any listed tag equal to ours (weak comparison, as net/http does)."""
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == f'"{etag}"':
            return True
    return False


def _not_modified_since(request: web.Request, modified: float) -> bool:
    since = request.headers.get("If-Modified-Since")
    if not since or "If-None-Match" in request.headers:
        return False
    try:
        return int(modified) <= parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError):
        return False


def serve(request: web.Request, rep: Representation, *, compress: bool,
          extra_headers: Mapping[str, str] | None = None) -> web.Response:
    """http.ServeContent with a fixed body: validators, 304 when the client's copy is current,
    gzip (gziphandler) when asked and worth it."""
    headers = {"Etag": f'"{rep.etag}"', "Vary": "Accept",
               "Last-Modified": formatdate(rep.last_modified, usegmt=True), **(extra_headers or {})}
    if compress:
        headers["Vary"] = "Accept, Accept-Encoding"
    inm = request.headers.get("If-None-Match")
    if (inm is not None and _etag_matches(inm, rep.etag)) or _not_modified_since(request, rep.last_modified):
        del headers["Last-Modified"]
        return web.Response(status=304, headers=headers)
    headers["Content-Type"] = rep.content_type
    body = rep.body
    if compress and len(body) >= GZIP_MIN_SIZE and _accepts_gzip(request.headers.get("Accept-Encoding", "")):
        headers["Content-Encoding"] = "gzip"
        body = rep.gzipped()
    return web.Response(body=b"" if request.method == "HEAD" else body, headers=headers)


def not_acceptable() -> web.Response:
    """Upstream writes a bare 406 with no body when no offered type is acceptable."""
    return web.Response(status=406, headers={"Vary": "Accept"})


def serve_v2(request: web.Request, json_rep: Callable[[], Representation],
             proto_rep: Callable[[], Representation]) -> web.Response:
    """GET /openapi/v2: JSON or gnostic protobuf by Accept (kube-openapi handler order)."""
    chosen = negotiate(request.headers.get("Accept", ""), (JSON, PROTO_V2_DEPRECATED, PROTO_V2))
    if chosen is None:
        return not_acceptable()
    return serve(request, json_rep() if chosen == JSON else proto_rep(), compress=True)


def serve_v3_group(request: web.Request, rep: Representation, group_path: str, now: float) -> web.Response:
    """GET /openapi/v3/<group-version>: JSON only (kubectl and client-go read v3 as JSON; the v3
    protobuf encoding is not served, so asking only for it is a 406). With ?hash=: a stale hash is
    a 301 to the current URL, a current one makes the answer cacheable forever."""
    if negotiate(request.headers.get("Accept", ""), (JSON,)) is None:
        return not_acceptable()
    extra: dict[str, str] = {}
    wanted = request.query.get("hash", "")
    if wanted:
        if wanted != rep.etag:
            return web.Response(status=301, headers={"Location": f"/openapi/v3/{group_path}?hash={rep.etag}",
                                                     "Vary": "Accept"})
        extra = {"Cache-Control": "public, immutable", "Expires": formatdate(now + YEAR, usegmt=True)}
    return serve(request, rep, compress=False, extra_headers=extra)
