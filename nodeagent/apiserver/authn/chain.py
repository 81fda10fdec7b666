"""Who sent a request: kube-apiserver's union of authenticators, x509 → bearer token → anonymous.

Why this order and these outcomes (k8s.io/kubernetes pkg/kubeapiserver/authenticator/config.go,
k8s.io/apiserver pkg/authentication/request/{x509,bearertoken,union,anonymous}):
- a client certificate the TLS layer verified against the CA names the user (CN) and its groups
  (O); one without a common name is no answer, and the next authenticator is asked;
- an `Authorization: Bearer <token>` header is looked up in the token table, then given to the
  service-account token authenticator (serviceaccount.py; a JWT of another issuer is not its to
  judge); a token nobody holds is an error ("invalid bearer token", or the service-account
  authenticator's reason) that fails the request even when anonymous requests are allowed
  (union.NewFailOnError), so a wrong token is never quietly downgraded to anonymous;
- any other Authorization header (Basic, no scheme) or an empty token is no answer;
- every authenticated user gets system:authenticated (group.AuthenticatedGroupAdder);
- with nothing found: `system:anonymous` in `system:unauthenticated` when anonymous requests are
  allowed, else the request is unauthenticated (401).

The certificate's verification itself (chain to the CA, validity, client-auth usage) happens in
the TLS handshake (ssl's CERT_OPTIONAL), which is where a bad certificate is refused: see
certs.server_ssl_context for that difference from upstream. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nodeagent.apiserver.authn.serviceaccount import TokenAuthenticator
from nodeagent.apiserver.authn.tokens import TokenTable
from nodeagent.apiserver.authn.user import ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, UserInfo, anonymous
from nodeagent.util.x509subject import CREDENTIAL_ID, identity_of_subject

INVALID_TOKEN = "invalid bearer token"
THROTTLED = "too many failed authentications from this address"

# ssl's getpeercert() subject: a sequence of RDNs, each a sequence of (attribute, value) pairs.
Subject = Sequence[Sequence[tuple[str, str]]]


@dataclass(frozen=True)
class Outcome:
    """The answer for one request: a user, or the error that made it unauthenticated (None: nothing
    presented and anonymous not allowed)."""

    user: UserInfo | None
    error: str | None = None
    token_presented: bool = False  # a bearer token came with the request (the failures the throttle counts)
    throttled: bool = False  # the token was not looked at: its source failed too often (429)
    warnings: tuple[str, ...] = ()  # the authenticator's, sent with the answer (an auto-generated legacy token's)


def user_of_subject(subject: Subject, der: bytes | None = None) -> UserInfo | None:
    """CN user, O groups, the userId attribute as uid of a verified certificate's subject, and its
    SHA-256 as the credential id when its DER bytes are given (x509.CommonNameUserConversion); None
    without a common name."""
    found = identity_of_subject(subject, der)
    if found is None:
        return None
    extra = {CREDENTIAL_ID: (found.credential_id,)} if found.credential_id else {}
    return UserInfo(found.name, found.uid, found.groups, extra)


def bearer(header: str | None) -> str | None:
    """The token of an Authorization header as bearertoken.Authenticator parses it, else None.

    Upstream also warns about a header with two spaces before the token (an empty token, ignored);
    nodeagent ignores it without the warning."""
    text = (header or "").strip()
    if not text:
        return None
    parts = text.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def with_authenticated(user: UserInfo) -> UserInfo:
    """`user` with system:authenticated added, unless it already says authenticated or unauthenticated."""
    if ALL_AUTHENTICATED in user.groups or ALL_UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, ALL_AUTHENTICATED), user.extra)


class Authenticator:
    """The chain of one API server: its token table and whether anonymous requests are allowed."""

    def __init__(self, tokens: TokenTable, *, anonymous: bool,
                 service_accounts: TokenAuthenticator | None = None) -> None:
        self.tokens = tokens
        self.anonymous = anonymous
        self.service_accounts = service_accounts

    def authenticate(self, peer_subject: Subject | None, authorization: str | None, *,
                     may_check_token: bool = True, peer_der: bytes | None = None) -> Outcome:
        """Who sent a request with this verified client certificate (subject, DER bytes) and Authorization
        header; with `may_check_token` false a bearer token is refused unread (the throttle's 429)."""
        if peer_subject:
            user = user_of_subject(peer_subject, peer_der)
            if user is not None:
                return Outcome(with_authenticated(user))
        token = bearer(authorization)
        if token is not None:
            if not may_check_token:
                return Outcome(None, THROTTLED, token_presented=True, throttled=True)
            user, error, _audiences, warnings = self.token_user_warned(token)
            if user is None:
                return Outcome(None, error, token_presented=True)
            return Outcome(user, token_presented=True, warnings=warnings)
        if self.anonymous:
            return Outcome(anonymous())
        return Outcome(None)

    def token_user(self, token: str,
                   audiences: Sequence[str] = ()) -> tuple[UserInfo | None, str, tuple[str, ...]]:
        """token_user_warned without the warnings."""
        user, error, both, _warnings = self.token_user_warned(token, audiences)
        return user, error, both

    def token_user_warned(self, token: str, audiences: Sequence[str] = ()) -> tuple[
            UserInfo | None, str, tuple[str, ...], tuple[str, ...]]:
        """(user, "", audiences) of bearer `token` for `audiences` (the API's when empty; system:authenticated
        added; the audiences a service-account token shares with them, () for a token of the table, which is
        audience-agnostic), else (None, why, ()): the token table first, then service-account tokens."""
        user = self.tokens.authenticate(token)
        if user is not None:
            return with_authenticated(user), "", (), ()
        if self.service_accounts is not None:
            result = self.service_accounts.authenticate(token, audiences)
            if result.mine:
                if result.user is None:
                    # kube-apiserver's request authenticators include two bearer-token ones, the first (token
                    # file) failing with invalid bearer token; the union's aggregate names both errors
                    # (measured: a TokenReview of a token whose pod is gone)
                    return None, f"[{INVALID_TOKEN}, {result.error}]", (), ()
                return with_authenticated(result.user), "", result.audiences, result.warnings
        return None, INVALID_TOKEN, (), ()
