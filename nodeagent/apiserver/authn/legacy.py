"""Legacy service-account tokens: the JWTs of `kubernetes.io/service-account-token` Secrets.

Why as upstream (k8s.io/kubernetes pkg/serviceaccount/legacy.go): clients written before TokenRequest
(and operators who still create such a Secret by hand for a long-lived credential) read the token the
tokens controller put into the Secret and send it as a bearer token; it never expires, so it is worth
what the objects behind it say at each request: the Secret must still exist (not being deleted) and hold
that very token, the ServiceAccount must exist with the uid the token names and not be deleted, and a
Secret labelled `kubernetes.io/legacy-token-invalid-since` (the legacy-token cleaner's mark) refuses it.
Each use stamps the Secret's `kubernetes.io/legacy-token-last-used` label with the day (UTC), written
only when it names neither today nor tomorrow, so at most one write a day per Secret
(LegacyServiceAccountTokenTracking, GA).

Claims (LegacyClaims): iss `kubernetes/serviceaccount`, sub `system:serviceaccount:NS:NAME`, and the flat
`kubernetes.io/serviceaccount/{namespace,secret.name,service-account.name,service-account.uid}`; no aud
(the API's audiences only), no exp. The user carries no extra (no credential id), as upstream's.

A token whose Secret the ServiceAccount's `secrets` lists (one the old tokens controller generated)
is accepted with upstream's warning (AUTO_GENERATED_WARNING), which the API server sends with the
answer to that request, as kube-apiserver's warning recorder does.

Pure: the lookups and the time are passed in.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Callable, Mapping
from typing import Any

from nodeagent.apiserver.authn.identities import service_account_user
from nodeagent.apiserver.authn.user import UserInfo

ISSUER = "kubernetes/serviceaccount"
LAST_USED = "kubernetes.io/legacy-token-last-used"
INVALID_SINCE = "kubernetes.io/legacy-token-invalid-since"
NAMESPACE = "kubernetes.io/serviceaccount/namespace"
SECRET_NAME = "kubernetes.io/serviceaccount/secret.name"
SA_NAME = "kubernetes.io/serviceaccount/service-account.name"
SA_UID = "kubernetes.io/serviceaccount/service-account.uid"
SECRET_TYPE = "kubernetes.io/service-account-token"
NAME_ANNOTATION = "kubernetes.io/service-account.name"
UID_ANNOTATION = "kubernetes.io/service-account.uid"
INVALIDATED = "Token has been invalidated"
USERNAME_PREFIX = "system:serviceaccount:"


def _md(obj: Mapping[str, Any] | None, key: str) -> str:
    return str(((obj or {}).get("metadata") or {}).get(key) or "")


def claims(sa: Mapping[str, Any], secret_name: str) -> dict[str, Any]:
    """LegacyClaims + the generator's issuer: what the tokens controller signs into the Secret."""
    namespace, name = _md(sa, "namespace"), _md(sa, "name")
    return {"iss": ISSUER, NAMESPACE: namespace, SECRET_NAME: secret_name, SA_NAME: name,
            SA_UID: _md(sa, "uid"), "sub": f"{USERNAME_PREFIX}{namespace}:{name}"}


def _split_username(subject: str) -> tuple[str, str] | None:
    """apiserverserviceaccount.SplitUsername: (namespace, name) of system:serviceaccount:NS:NAME."""
    if not subject.startswith(USERNAME_PREFIX):
        return None
    parts = subject[len(USERNAME_PREFIX):].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def token_data(secret: Mapping[str, Any]) -> bytes:
    """The Secret's data.token, decoded (b"" when absent or not base64)."""
    raw = (secret.get("data") or {}).get("token")
    if not isinstance(raw, str):
        return b""
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return b""


Getter = Callable[[str, str, str], Mapping[str, Any] | None]


def validate(token: str, payload: Mapping[str, Any], get: Getter,
             deleted: Callable[[Mapping[str, Any]], bool]) -> tuple[UserInfo | None, str, Mapping[str, Any] | None]:
    """legacyValidator.Validate with lookup on: (user, "", secret) or (None, why, secret or None).

    `get(kind, namespace, name)` reads a stored object; `deleted(obj)` says whether its deletion
    started. The Secret is returned whenever the token matched it (the caller stamps its last-used
    label, refused for the invalid-since label or not, as upstream does)."""
    def claim(key: str) -> str:
        value = payload.get(key)
        return value if isinstance(value, str) else ""

    subject = claim("sub")
    if not subject:
        return None, "sub claim is missing", None
    namespace, secret_name, sa_name, sa_uid = claim(NAMESPACE), claim(SECRET_NAME), claim(SA_NAME), claim(SA_UID)
    for value, what in ((namespace, "namespace"), (secret_name, "secretName"), (sa_name, "serviceAccountName"),
                        (sa_uid, "serviceAccountUID")):
        if not value:
            return None, f"{what} claim is missing", None
    if _split_username(subject) != (namespace, sa_name):
        return None, "sub claim is invalid", None
    secret = get("Secret", namespace, secret_name)
    if secret is None or deleted(secret):
        return None, INVALIDATED, None
    if token_data(secret) != token.encode("utf-8", "surrogateescape"):
        return None, "Token does not match server's copy", None
    sa = get("ServiceAccount", namespace, sa_name)
    if sa is None:
        return None, f'serviceaccounts "{sa_name}" not found', None
    if deleted(sa):
        return None, f"ServiceAccount {namespace}/{sa_name} has been deleted", None
    if _md(sa, "uid") != sa_uid:
        return None, f"ServiceAccount UID ({_md(sa, 'uid')}) does not match claim ({sa_uid})", None
    if ((secret.get("metadata") or {}).get("labels") or {}).get(INVALID_SINCE):
        return None, (f"the token in secret {namespace}/{secret_name} for service account {namespace}/{sa_name} "
                      "has been marked invalid. Use tokens from the TokenRequest API or manually created "
                      f"secret-based tokens, or remove the '{INVALID_SINCE}' label from the secret to temporarily "
                      "allow use of this token"), secret
    base = service_account_user(namespace, sa_name)
    return UserInfo(base.name, sa_uid, base.groups), "", secret


AUTO_GENERATED_WARNING = ("Use tokens from the TokenRequest API or manually created secret-based tokens instead of "
                          "auto-generated secret-based tokens.")


def warnings_of(secret: Mapping[str, Any], sa: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The warning of an accepted legacy token: AUTO_GENERATED_WARNING when the ServiceAccount's
    `secrets` names its Secret (legacyValidator.Validate's auto-generated check), else none."""
    name = _md(secret, "name")
    refs = (sa or {}).get("secrets") or ()
    if any(isinstance(ref, Mapping) and ref.get("name") == name for ref in refs):
        return (AUTO_GENERATED_WARNING,)
    return ()


def last_used_due(secret: Mapping[str, Any], now: float) -> str:
    """patchSecretWithLastUsedDate: today's date (UTC, 2006-01-02) when the label must be written, else ""
    (it names today, or tomorrow: a server whose clock runs behind another's does not write it back)."""
    day = dt.datetime.fromtimestamp(now, dt.UTC).date()
    today, tomorrow = day.isoformat(), (day + dt.timedelta(days=1)).isoformat()
    current = ((secret.get("metadata") or {}).get("labels") or {}).get(LAST_USED)
    return "" if current in (today, tomorrow) else today


def is_token_secret_of(secret: Mapping[str, Any], sa: Mapping[str, Any]) -> bool:
    """apiserverserviceaccount.IsServiceAccountToken: a token Secret naming `sa` (and its uid, when it
    names one)."""
    if secret.get("type") != SECRET_TYPE or _md(secret, "namespace") != _md(sa, "namespace"):
        return False
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    if annotations.get(NAME_ANNOTATION) != _md(sa, "name"):
        return False
    uid = annotations.get(UID_ANNOTATION) or ""
    return not uid or uid == _md(sa, "uid")
