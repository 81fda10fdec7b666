"""The authentication step of the API's request path: the aiohttp side of chain.py and throttle.py.

Why a module of its own: http.py's handle() calls one function and gets either the request's
UserInfo (stored as request[USER], where the authorization step reads it) or the refusal to send;
what a refusal looks like is upstream's: 401 with the Status `Unauthorized` (reason Unauthorized,
no WWW-Authenticate header: k8s.io/apiserver filters.Unauthorized), and, nodeagent's own, 429 with
Retry-After and max-in-flight's text when one address failed too often (throttle.py says why).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable, Callable, Mapping

import orjson
from aiohttp import web

from nodeagent.apiserver.authn.chain import Authenticator, Outcome
from nodeagent.apiserver.authn.throttle import FailureThrottle, LogLine
from nodeagent.apiserver.authn.user import UserInfo, anonymous
from nodeagent.apiserver.errors import status_object

logger = logging.getLogger(__name__)

USER = web.RequestKey("user", UserInfo)
AUTHN_WARNINGS = web.RequestKey("nodeagent.authn_warnings", tuple[str, ...])
"""The authenticator's warnings for the request (an auto-generated legacy token's): every answer
to it carries them first, as kube-apiserver's warning recorder, filled during authentication, does."""
"""The request key holding the UserInfo of an authenticated (or anonymous) request (request[USER])."""
TOO_MANY = "Too many requests, please try again later.\n"  # http.Error of filters/priority-and-fairness.go


def user_of(request: web.Request) -> UserInfo:
    """The identity the authentication step found for `request` (anonymous if it did not run)."""
    return request.get(USER) or anonymous()


def unauthorized() -> web.Response:
    return web.Response(status=401, body=orjson.dumps(status_object(401, "Unauthorized", "Unauthorized")),
                        content_type="application/json")


class RequestAuthn:
    """Authenticates each request; counts, throttles and logs failed bearer tokens per source address."""

    def __init__(self, authenticator: Authenticator, now: Callable[[], float],
                 throttle: FailureThrottle | None = None) -> None:
        self.authenticator = authenticator
        self.throttle = throttle or FailureThrottle()
        self._now = now

    def outcome(self, request: web.Request) -> Outcome:
        transport = request.transport
        peer = transport.get_extra_info("peercert") if transport is not None else None
        subject = peer.get("subject") if isinstance(peer, Mapping) else None
        der = None
        if subject:
            tls = transport.get_extra_info("ssl_object") if transport is not None else None
            der = tls.getpeercert(binary_form=True) if isinstance(tls, ssl.SSLObject) else None
        source = request.remote or ""
        may = self.throttle.retry_after(source, self._now()) == 0
        return self.authenticator.authenticate(subject, request.headers.get("Authorization"), may_check_token=may,
                                               peer_der=der)

    def authenticate(self, request: web.Request, *, public: bool = False) -> web.Response | None:
        """None with request[USER] set, or the answer refusing the request (never for a `public` path,
        which is served to anyone, as nodeagent has always served /healthz, /livez, /readyz, /version)."""
        outcome = self.outcome(request)
        if outcome.user is not None:
            request[USER] = outcome.user
            if outcome.warnings:
                request[AUTHN_WARNINGS] = outcome.warnings
            return None
        if public:
            request[USER] = anonymous()
            return None
        if not outcome.token_presented:
            return unauthorized()  # no credential at all: not a guess, neither counted nor logged
        source = request.remote or ""
        now = self._now()
        # a throttled request is logged as a failure too, but drains nothing: it was not checked
        self._log(self.throttle.failed(source, outcome.error or "", now, checked=not outcome.throttled))
        if outcome.throttled:
            return web.Response(status=429, text=TOO_MANY, content_type="text/plain",
                                headers={"Retry-After": str(self.throttle.retry_after(source, now) or 1),
                                         "X-Content-Type-Options": "nosniff"})
        return unauthorized()

    def _log(self, line: LogLine | None) -> None:
        if line is None:
            return
        if line.first and line.count == 1:
            logger.warning("api request not authenticated source=%s reason=%s (further failures from this address "
                           "are counted and logged once per %gs)", line.source, line.reason, self.throttle.interval)
        else:
            logger.warning("api requests not authenticated source=%s count=%d last_reason=%s interval=%gs",
                           line.source, line.count, line.reason, self.throttle.interval)

    def flush(self) -> None:
        for line in self.throttle.flush(self._now()):
            self._log(line)

    async def run(self, sleep: Callable[[float], Awaitable[None]]) -> None:
        """Log the counted failures once per interval, until cancelled (then what is left)."""
        try:
            while True:
                await sleep(self.throttle.interval)
                self.flush()
        finally:
            for line in self.throttle.pending():
                self._log(line)
