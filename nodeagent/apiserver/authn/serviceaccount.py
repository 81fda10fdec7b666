"""Service-account tokens: the JWTs the API server signs (TokenRequest) and authenticates.

Why as kube-apiserver does them (k8s.io/kubernetes pkg/serviceaccount/{jwt,claims}.go, apiserver's
pkg/authentication/serviceaccount/util.go): a token is worth what its claims say only while the
objects it names still exist with the same uid, so a token handed to a plugin or bound to a pod dies
with its service account, pod, secret or node, and it is signed, so the server keeps no table of
issued tokens. The token is a compact JWS, RS256 with the key id upstream derives (base64url of the
SHA-256 of the public key's DER), claims aud/exp/iat/iss/jti/nbf/sub and `kubernetes.io`
{namespace, serviceaccount{name,uid}, pod|secret|node{name,uid}, warnafter}, keys sorted as Go's
map encoding writes them. The user is `system:serviceaccount:NS:NAME` (uid the service account's)
in system:serviceaccounts and system:serviceaccounts:NS, with extra pod-name/pod-uid,
node-name/node-uid and credential-id `JTI=<jti>`.

Signed and verified with `cryptography` directly rather than a JWT library: the project already pins
it for the PKI, one algorithm (RS256) and one token shape are all that is needed, and doing the
checks here keeps their order and their error texts upstream's (a library raises its own).

Pure: the signing key, the time and the object lookups are passed in.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from nodeagent.apiserver.authn import legacy
from nodeagent.apiserver.authn.identities import service_account_user
from nodeagent.apiserver.authn.user import UserInfo

ISSUER = "https://kubernetes.default.svc.cluster.local"
"""kube-apiserver's --service-account-issuer as kubeadm sets it; the API audiences default to it."""
API_AUDIENCES = (ISSUER,)
VERIFIED_CACHE = 4096  # tokens whose signature is remembered (TokenAuthenticator.authenticate)
LEEWAY = 60.0  # go-jose's jwt.DefaultLeeway
MIN_EXPIRATION = 600  # authentication validation's MinTokenAgeSec
DEFAULT_EXPIRATION = 3600  # SetDefaults_TokenRequestSpec
WARN_ONLY_EXPIRATION = 3607  # serviceaccount.WarnOnlyBoundTokenExpirationSeconds
EXTENDED_EXPIRATION = 365 * 24 * 3600  # serviceaccount.ExpirationExtensionSeconds

POD_NAME = "authentication.kubernetes.io/pod-name"
POD_UID = "authentication.kubernetes.io/pod-uid"
NODE_NAME = "authentication.kubernetes.io/node-name"
NODE_UID = "authentication.kubernetes.io/node-uid"
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
INVALIDATED = "service account token has been invalidated"


class ObjectGetter(Protocol):
    """Reads the stored objects a token names (None when absent)."""

    def __call__(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_private_key() -> rsa.RSAPrivateKey:
    """A key as kubeadm's sa.key is: RSA 2048."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def key_id(public: rsa.RSAPublicKey) -> str:
    """jwt.go keyIDFromPublicKey: base64url (no padding) of the SHA-256 of the PKIX DER."""
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return _b64(hashlib.sha256(der).digest())


def _md(obj: Mapping[str, Any] | None, key: str) -> str:
    return str(((obj or {}).get("metadata") or {}).get(key) or "")


def _ref(obj: Mapping[str, Any]) -> dict[str, str]:
    return {k: v for k, v in (("name", _md(obj, "name")), ("uid", _md(obj, "uid"))) if v}


@dataclass(frozen=True)
class Bound:
    """The objects a token is bound to (at most one of pod, secret, node; a pod's token also names its node)."""

    pod: Mapping[str, Any] | None = None
    secret: Mapping[str, Any] | None = None
    node: Mapping[str, Any] | None = None


def claims(sa: Mapping[str, Any], bound: Bound, *, audiences: Sequence[str], expiration: int, now: float,
           jti: str, warn_after: int = 0, issuer: str = ISSUER) -> dict[str, Any]:
    """The claims kube-apiserver's token.Claims puts into a token for service account `sa`."""
    issued = int(now)
    namespace = _md(sa, "namespace")
    private: dict[str, Any] = {"namespace": namespace, "serviceaccount": _ref(sa)}
    if bound.pod is not None:
        private["pod"] = _ref(bound.pod)
        if bound.node is not None:
            private["node"] = _ref(bound.node)
    elif bound.secret is not None:
        private["secret"] = _ref(bound.secret)
    elif bound.node is not None:
        private["node"] = _ref(bound.node)
    if warn_after:
        private["warnafter"] = issued + warn_after
    return {"aud": list(audiences), "exp": issued + expiration, "iat": issued, "iss": issuer, "jti": jti,
            "kubernetes.io": private, "nbf": issued, "sub": f"system:serviceaccount:{namespace}:{_md(sa, 'name')}"}


def new_jti() -> str:
    return str(uuid.uuid4())


class Signer:
    """Signs claims with the API server's service-account key (RS256, kid as upstream)."""

    def __init__(self, key: rsa.RSAPrivateKey) -> None:
        self._key = key
        self.public = key.public_key()
        self.kid = key_id(self.public)

    def sign(self, payload: Mapping[str, Any]) -> str:
        header = _b64(orjson.dumps({"alg": "RS256", "kid": self.kid}))
        body = _b64(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS))
        signature = self._key.sign(f"{header}.{body}".encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{body}.{_b64(signature)}"


@dataclass(frozen=True)
class Result:
    """A token's authentication: `mine` false when it is no token of this issuer (the next
    authenticator is asked); else the user, or the error that refused it."""

    mine: bool
    user: UserInfo | None = None
    error: str = ""
    audiences: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # sent with the answer to the request (an auto-generated legacy token's)


NOT_MINE = Result(False)


def _go_quote_list(items: Sequence[str]) -> str:
    """Go's %q of a []string: ["a" "b"]."""
    return "[" + " ".join(orjson.dumps(i).decode() for i in items) + "]"


class TokenAuthenticator:
    """jwtTokenAuthenticator + the service-account validator of one API server."""

    def __init__(self, public_keys: Sequence[rsa.RSAPublicKey], get: ObjectGetter, now: Callable[[], float], *,
                 issuers: Sequence[str] = (ISSUER,), audiences: Sequence[str] = API_AUDIENCES,
                 mark_used: Callable[[Mapping[str, Any], str], None] | None = None) -> None:
        """`mark_used(secret, day)`: stamp a legacy token's Secret with its last-used day (legacy.py);
        without it legacy tokens (issuer kubernetes/serviceaccount) are not this authenticator's."""
        self._keys = {key_id(k): k for k in public_keys}
        self._verified: OrderedDict[bytes, dict[str, Any]] = OrderedDict()
        self._get = get
        self._now = now
        self._mark_used = mark_used
        self.issuers = tuple(issuers) + ((legacy.ISSUER,) if mark_used is not None else ())
        self.audiences = tuple(audiences)

    def authenticate(self, token: str, audiences: Sequence[str] = ()) -> Result:
        """The user of `token` for the requested `audiences` (the API's when empty).

        A token whose signature was verified is remembered (its claims, by the token's SHA-256, the last
        VERIFIED_CACHE of them): a client sends the same token with every request, and the RSA check is
        most of the cost (measured 364 us a request without, on a loaded 2-core machine). Only the
        signature is remembered: the times and the objects a token names are checked at every request,
        so a deleted pod or service account locks its tokens out at once (kube-apiserver caches the whole
        success for 10 s instead)."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        payload = self._verified.get(digest)
        if payload is not None:
            self._verified.move_to_end(digest)
            return self._judge(payload, audiences, token)
        result, verified = self._verify(token)
        if verified is None:
            return result
        self._verified[digest] = verified
        if len(self._verified) > VERIFIED_CACHE:
            self._verified.popitem(last=False)
        return self._judge(verified, audiences, token)

    def _verify(self, token: str) -> tuple[Result, dict[str, Any] | None]:
        """(NOT_MINE or the refusal, None), or (NOT_MINE, the payload) of a token this issuer signed."""
        parts = token.split(".")
        if len(parts) != 3:
            return NOT_MINE, None
        try:
            header = orjson.loads(_unb64(parts[0]))
            payload = orjson.loads(_unb64(parts[1]))
            signature = _unb64(parts[2])
        except (ValueError, binascii.Error, orjson.JSONDecodeError):
            return NOT_MINE, None
        # hasCorrectIssuer: a token of another issuer is someone else's to judge
        if not isinstance(payload, dict) or not isinstance(header, dict) or payload.get("iss") not in self.issuers:
            return NOT_MINE, None
        if header.get("alg") != "RS256":
            return NOT_MINE, None  # jwt.ParseSigned accepts it, but no key of ours verifies another algorithm
        kid = header.get("kid")
        keys = [self._keys[kid]] if isinstance(kid, str) and kid in self._keys else (
            [] if kid else list(self._keys.values()))
        if not keys:
            return Result(True, error="invalid signature, no keys found"), None
        try:
            signed = f"{parts[0]}.{parts[1]}".encode("ascii")
        except UnicodeEncodeError:
            return NOT_MINE, None
        for key in keys:
            try:
                key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
                break
            except InvalidSignature:
                continue
        else:
            return Result(True, error="go-jose/go-jose: error in cryptographic primitive"), None
        return NOT_MINE, payload

    def _judge(self, payload: Mapping[str, Any], audiences: Sequence[str], token: str) -> Result:
        """The audiences, then the claims (times, service account, bound objects) of a verified token."""
        token_audiences = payload.get("aud")
        if isinstance(token_audiences, str):
            token_audiences = [token_audiences]
        if not isinstance(token_audiences, list) or not token_audiences:
            token_audiences = list(self.audiences)  # a legacy token: the API's audiences only
        wanted = list(audiences) or list(self.audiences)
        both = tuple(a for a in wanted if a in token_audiences)
        if not both:
            return Result(True, error=f"token audiences {_go_quote_list(token_audiences)} is invalid for the "
                                      f"target audiences {_go_quote_list(wanted)}")
        warnings: tuple[str, ...] = ()
        if payload.get("iss") == legacy.ISSUER:
            user, error, warnings = self._validate_legacy(token, payload)
        else:
            user, error = self._validate(payload)
        if user is None:
            return Result(True, error=error)
        return Result(True, user=user, audiences=both, warnings=warnings)

    def _validate(self, claims: Mapping[str, Any]) -> tuple[UserInfo | None, str]:
        """claims.go validator.Validate: the times, then the service account and the bound objects."""
        now = self._now()
        nbf, exp, iat = claims.get("nbf"), claims.get("exp"), claims.get("iat")
        if isinstance(nbf, int | float) and now + LEEWAY < nbf:
            return None, "service account token is not valid yet"
        if isinstance(exp, int | float) and now - LEEWAY > exp:
            return None, "service account token has expired"
        if isinstance(iat, int | float) and now + LEEWAY < iat:
            return None, "service account token is issued in the future"
        private = claims.get("kubernetes.io")
        private = private if isinstance(private, Mapping) else {}
        namespace = str(private.get("namespace") or "")
        saref = _claim_ref(private.get("serviceaccount")) or {}
        sa_name = saref.get("name", "")
        sa = self._get("ServiceAccount", namespace, sa_name)
        if sa is None:
            return None, f'serviceaccounts "{sa_name}" not found'
        if _md(sa, "uid") != saref.get("uid", ""):
            return None, f"service account UID ({_md(sa, 'uid')}) does not match claim ({saref.get('uid', '')})"
        if self._deleted(sa, now):
            return None, f"service account {namespace}/{sa_name} has been deleted"
        extra: dict[str, tuple[str, ...]] = {}
        secref = _claim_ref(private.get("secret"))
        if secref is not None:
            error = self._check_bound("Secret", namespace, secref, now, "service account secret ref claim")
            if error:
                return None, error
        podref = _claim_ref(private.get("pod"))
        if podref is not None:
            error = self._check_bound("Pod", namespace, podref, now, "service account pod ref claim")
            if error:
                return None, error
            if podref.get("name") and podref.get("uid"):
                extra[POD_NAME], extra[POD_UID] = (podref["name"],), (podref["uid"],)
        noderef = _claim_ref(private.get("node"))
        if noderef is not None:
            if podref is None:
                error = self._check_bound("Node", "", noderef, now, "service account node ref claim")
                if error:
                    return None, error
            if noderef.get("name"):
                extra[NODE_NAME] = (noderef["name"],)
                if noderef.get("uid"):
                    extra[NODE_UID] = (noderef["uid"],)
        jti = claims.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID] = (f"JTI={jti}",)
        base = service_account_user(namespace, sa_name)
        return UserInfo(base.name, saref.get("uid", ""), base.groups, extra), ""

    def _validate_legacy(self, token: str,
                         payload: Mapping[str, Any]) -> tuple[UserInfo | None, str, tuple[str, ...]]:
        """legacy.validate, then the Secret's last-used day stamped (refused for invalid-since or not);
        an accepted token of an auto-generated Secret carries upstream's warning."""
        user, error, secret = legacy.validate(token, payload, self._get,
                                              lambda obj: bool(_md(obj, "deletionTimestamp")))
        if secret is not None and self._mark_used is not None:
            day = legacy.last_used_due(secret, self._now())
            if day:
                self._mark_used(secret, day)
        if user is None or secret is None:
            return user, error, ()
        sa = self._get("ServiceAccount", _md(secret, "namespace"), str(payload.get(legacy.SA_NAME) or ""))
        return user, error, legacy.warnings_of(secret, sa)

    def _check_bound(self, kind: str, namespace: str, ref: Mapping[str, str], now: float, claim: str) -> str:
        obj = self._get(kind, namespace, ref.get("name", ""))
        if obj is None:
            return INVALIDATED
        if _md(obj, "uid") != ref.get("uid", ""):
            return f"{_uid_subject(kind)} UID ({_md(obj, 'uid')}) does not match {claim} ({ref.get('uid', '')})"
        if self._deleted(obj, now):
            return INVALIDATED
        return ""

    @staticmethod
    def _deleted(obj: Mapping[str, Any], now: float) -> bool:
        """Deleted (a deletionTimestamp) longer than the leeway ago: invalidIfDeletedBefore."""
        stamp = _md(obj, "deletionTimestamp")
        if not stamp:
            return False
        try:
            deleted = dt.datetime.fromisoformat(stamp).timestamp()
        except ValueError:
            return False
        return deleted < now - LEEWAY


def _uid_subject(kind: str) -> str:
    return {"Secret": "secret", "Pod": "pod", "Node": "node"}[kind]


def _claim_ref(value: Any) -> dict[str, str] | None:
    if not isinstance(value, Mapping):
        return None
    return {k: str(value.get(k) or "") for k in ("name", "uid")}


OPENID_CONFIG_PATH = "/.well-known/openid-configuration"  # serviceaccount.OpenIDConfigPath
JWKS_PATH = "/openid/v1/jwks"  # serviceaccount.JWKSPath
OPENID_MAX_AGE = 3600  # staticPublicKeysGetter.GetCacheAgeMaxSeconds


def _b64_int(value: int) -> str:
    return _b64(value.to_bytes((value.bit_length() + 7) // 8 or 1, "big"))


def jwks(public_keys: Sequence[rsa.RSAPublicKey]) -> bytes:
    """The issuer's JSON Web Key Set (openidmetadata.go publicJWKSFromKeys, go-jose's field order)."""
    keys = []
    for key in public_keys:
        numbers = key.public_numbers()
        keys.append({"use": "sig", "kty": "RSA", "kid": key_id(key), "alg": "RS256", "n": _b64_int(numbers.n),
                     "e": _b64_int(numbers.e)})
    return orjson.dumps({"keys": keys})


def openid_configuration(jwks_uri: str, *, issuer: str = ISSUER) -> bytes:
    """The issuer's OIDC discovery document (openidmetadata.go openIDConfigJSON): jwks_uri is the API
    server's own address + JWKS_PATH when no --service-account-jwks-uri is set, as upstream builds it."""
    return orjson.dumps({"issuer": issuer, "jwks_uri": jwks_uri, "response_types_supported": ["id_token"],
                         "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["RS256"]})
