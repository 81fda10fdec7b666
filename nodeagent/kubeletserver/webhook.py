"""The kubelet's webhook authentication and authorization: TokenReview and SubjectAccessReview.

Why: the kubelet neither knows tokens nor holds policy; it asks the API server (its
authentication.webhook and authorization.mode Webhook settings) and caches the answers for
the configured TTLs (cacheTTL 2m; cacheAuthorizedTTL 5m, cacheUnauthorizedTTL 30s), so a
scraper's requests do not each cost a review. The reviews are posted through `post`, a callable
that creates an object at an API path and returns the answer (over HTTP with the node's
kubeconfig, or the embedded API server of this process called in place): the bodies are the
same either way. A review that fails is an error (the kubelet answers 401 or 500), never an
answer of its own. The clock is injected; the caches are bounded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

from nodeagent.kubeletserver.auth import Attributes, User

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
CACHE_SIZE = 1024
AUTHENTICATED = "system:authenticated"

Post = Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
K = TypeVar("K")
V = TypeVar("V")


class ReviewError(Exception):
    """The API server could not be asked (unreachable, refused the review, answered nonsense)."""


class TTLCache(Generic[K, V]):
    """Answers kept until their own expiry time, least recently used dropped beyond `size`."""

    def __init__(self, now: Callable[[], float], size: int = CACHE_SIZE) -> None:
        self._now = now
        self._size = size
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        hit = self._items.get(key)
        if hit is None:
            return None
        if hit[0] <= self._now():
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return hit[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._items[key] = (self._now() + ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


class WebhookReviews:
    """TokenReview and SubjectAccessReview through `post`, cached as the kubelet caches them."""

    def __init__(self, post: Post, now: Callable[[], float], *, token_ttl: float = 120.0,
                 authorized_ttl: float = 300.0, unauthorized_ttl: float = 30.0) -> None:
        self._post = post
        self._token_ttl = token_ttl
        self._authorized_ttl, self._unauthorized_ttl = authorized_ttl, unauthorized_ttl
        self._tokens: TTLCache[str, tuple[User | None]] = TTLCache(now)
        self._decisions: TTLCache[tuple[Any, ...], tuple[bool, str]] = TTLCache(now)

    async def authenticate(self, token: str) -> User | None:
        """The user of a bearer token; None when the API server says it is not authenticated."""
        hit = self._tokens.get(token)
        if hit is not None:
            return hit[0]
        answer = await self._create(TOKEN_REVIEWS, {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
        status = answer.get("status") or {}
        user: User | None = None
        # A refusal with its reason (`error: invalid bearer token`) is an answer, cached like any other, as
        # the kubelet's cached token authenticator keeps (nil, false, err) for the failure TTL.
        if status.get("authenticated"):
            info = status.get("user") or {}
            groups = tuple(str(g) for g in info.get("groups") or ())
            if AUTHENTICATED not in groups:
                groups += (AUTHENTICATED,)
            extra = info.get("extra")
            extra = extra if isinstance(extra, Mapping) else {}
            user = User(str(info.get("username") or ""), groups, str(info.get("uid") or ""),
                        tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items())))
        self._tokens.put(token, (user,), self._token_ttl)
        return user

    async def authorize(self, user: User, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason) of a SubjectAccessReview for `attrs` by `user`."""
        key = (user.name, user.groups, user.uid, user.extra, attrs.verb, attrs.subresource, attrs.name)
        hit = self._decisions.get(key)
        if hit is not None:
            return hit
        spec: dict[str, Any] = {
            "resourceAttributes": {"verb": attrs.verb, "version": "v1", "resource": "nodes",
                                   "subresource": attrs.subresource, "name": attrs.name},
            "user": user.name, "groups": list(user.groups),
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        answer = await self._create(ACCESS_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
        status = answer.get("status") or {}
        if status.get("evaluationError") and not status.get("allowed") and not status.get("denied"):
            raise ReviewError(str(status["evaluationError"]))
        decision = (bool(status.get("allowed")), str(status.get("reason") or ""))
        self._decisions.put(key, decision, self._authorized_ttl if decision[0] else self._unauthorized_ttl)
        return decision

    async def _create(self, path: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            answer = await self._post(path, body)
        except ReviewError:
            raise
        except Exception as err:
            raise ReviewError(f"{path}: {err}") from err
        if not isinstance(answer, Mapping):
            raise ReviewError(f"{path}: the answer is not an object")
        return answer
