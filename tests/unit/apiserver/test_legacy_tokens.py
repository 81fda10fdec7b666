"""Legacy service-account tokens (authn/legacy.py through TokenAuthenticator), pure: the claims the tokens
controller signs, legacyValidator's checks and texts in upstream's order, and the last-used day."""

from __future__ import annotations

import base64
import datetime as dt
import functools
from collections.abc import Mapping
from typing import Any

import pytest

from nodeagent.apiserver.authn import legacy
from nodeagent.apiserver.authn import serviceaccount as sat

NOW = dt.datetime(2026, 11, 29, 23, 59, tzinfo=dt.UTC).timestamp()


@functools.cache
def _key() -> Any:
    return sat.new_private_key()


class World:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.marked: list[tuple[str, str]] = []
        self.sa: dict[str, Any] = {"kind": "ServiceAccount",
                                   "metadata": {"name": "app", "namespace": "ns", "uid": "sa-1"}}
        self.add(self.sa)
        self.token = sat.Signer(_key()).sign(legacy.claims(self.sa, "app-token"))
        self.secret: dict[str, Any] = {
            "kind": "Secret", "type": legacy.SECRET_TYPE,
            "metadata": {"name": "app-token", "namespace": "ns", "uid": "sec-1", "labels": {}},
            "data": {"token": base64.b64encode(self.token.encode()).decode()}}
        self.add(self.secret)

    def add(self, obj: dict[str, Any]) -> None:
        md = obj["metadata"]
        self.objects[(obj["kind"], md.get("namespace", ""), md["name"])] = obj

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def authenticate(self, token: str | None = None) -> sat.Result:
        auth = sat.TokenAuthenticator([_key().public_key()], self.get, lambda: NOW,
                                      mark_used=lambda s, day: self.marked.append((s["metadata"]["name"], day)))
        return auth.authenticate(token or self.token)


def test_claims_are_upstreams_legacy_claims() -> None:
    assert legacy.claims({"metadata": {"name": "app", "namespace": "ns", "uid": "u"}}, "app-token") == {
        "iss": "kubernetes/serviceaccount", "kubernetes.io/serviceaccount/namespace": "ns",
        "kubernetes.io/serviceaccount/secret.name": "app-token",
        "kubernetes.io/serviceaccount/service-account.name": "app",
        "kubernetes.io/serviceaccount/service-account.uid": "u", "sub": "system:serviceaccount:ns:app"}


def test_a_legacy_token_is_its_accounts_user_without_extra_and_stamps_the_day() -> None:
    w = World()
    result = w.authenticate()
    assert result.mine and result.error == ""
    assert result.user is not None
    assert (result.user.name, result.user.uid, result.user.groups, dict(result.user.extra)) == (
        "system:serviceaccount:ns:app", "sa-1", ("system:serviceaccounts", "system:serviceaccounts:ns"), {})
    assert result.audiences == sat.API_AUDIENCES
    assert w.marked == [("app-token", "2026-11-29")]


def test_an_auto_generated_token_is_accepted_with_upstreams_warning() -> None:
    """legacyValidator: a Secret the account's `secrets` lists is auto-generated, and warned about."""
    w = World()
    assert w.authenticate().warnings == ()
    w.sa["secrets"] = [{"name": "other"}, {"name": "app-token"}]
    result = w.authenticate()
    assert result.user is not None
    assert result.warnings == ("Use tokens from the TokenRequest API or manually created secret-based tokens "
                               "instead of auto-generated secret-based tokens.",)
    w.secret["metadata"]["labels"][legacy.INVALID_SINCE] = "2026-11-01"
    assert w.authenticate().warnings == ()  # refused: no warning, as upstream checks invalid-since first


@pytest.mark.parametrize(("label", "written"), [
    (None, True), ("2026-11-28", True), ("2026-11-29", False), ("2026-11-30", False), ("garbage", True)])
def test_the_last_used_day_is_written_unless_today_or_tomorrow(label: str | None, written: bool) -> None:
    secret = {"metadata": {"labels": {legacy.LAST_USED: label} if label else {}}}
    assert legacy.last_used_due(secret, NOW) == ("2026-11-29" if written else "")


def test_without_mark_used_legacy_tokens_are_not_this_authenticators() -> None:
    w = World()
    assert not sat.TokenAuthenticator([_key().public_key()], w.get, lambda: NOW).authenticate(w.token).mine


def _refusal(change: Any) -> tuple[str, list[tuple[str, str]]]:
    w = World()
    change(w)
    result = w.authenticate()
    assert result.mine and result.user is None
    return result.error, w.marked


def test_refusals_in_upstreams_order_and_words() -> None:
    assert _refusal(lambda w: w.objects.pop(("Secret", "ns", "app-token"))) == ("Token has been invalidated", [])
    assert _refusal(lambda w: w.secret["metadata"].update(deletionTimestamp="2026-11-29T00:00:00Z")) == (
        "Token has been invalidated", [])
    assert _refusal(lambda w: w.secret["data"].update(token=base64.b64encode(b"other").decode())) == (
        "Token does not match server's copy", [])
    assert _refusal(lambda w: w.objects.pop(("ServiceAccount", "ns", "app"))) == (
        'serviceaccounts "app" not found', [])
    assert _refusal(lambda w: w.sa["metadata"].update(deletionTimestamp="2026-11-29T00:00:00Z")) == (
        "ServiceAccount ns/app has been deleted", [])
    assert _refusal(lambda w: w.sa["metadata"].update(uid="sa-2")) == (
        "ServiceAccount UID (sa-2) does not match claim (sa-1)", [])
    # marked invalid by the cleaner: refused, and still stamped as used, as upstream
    assert _refusal(lambda w: w.secret["metadata"]["labels"].update({legacy.INVALID_SINCE: "2026-11-01"})) == (
        "the token in secret ns/app-token for service account ns/app has been marked invalid. Use tokens from "
        "the TokenRequest API or manually created secret-based tokens, or remove the "
        "'kubernetes.io/legacy-token-invalid-since' label from the secret to temporarily allow use of this token",
        [("app-token", "2026-11-29")])


@pytest.mark.parametrize(("drop", "text"), [
    ("sub", "sub claim is missing"), (legacy.NAMESPACE, "namespace claim is missing"),
    (legacy.SECRET_NAME, "secretName claim is missing"), (legacy.SA_NAME, "serviceAccountName claim is missing"),
    (legacy.SA_UID, "serviceAccountUID claim is missing")])
def test_missing_claims(drop: str, text: str) -> None:
    w = World()
    claims = legacy.claims(w.sa, "app-token")
    del claims[drop]
    token = sat.Signer(_key()).sign(claims)
    result = w.authenticate(token)
    assert (result.mine, result.error) == (True, text)


def test_a_subject_naming_another_account_is_invalid() -> None:
    w = World()
    token = sat.Signer(_key()).sign({**legacy.claims(w.sa, "app-token"), "sub": "system:serviceaccount:ns:x"})
    assert w.authenticate(token).error == "sub claim is invalid"


def test_is_token_secret_of() -> None:
    sa = {"metadata": {"name": "app", "namespace": "ns", "uid": "u"}}

    def secret(**annotations: str) -> dict[str, Any]:
        return {"type": legacy.SECRET_TYPE, "metadata": {"namespace": "ns", "annotations": annotations}}

    assert legacy.is_token_secret_of(secret(**{legacy.NAME_ANNOTATION: "app"}), sa)
    assert legacy.is_token_secret_of(secret(**{legacy.NAME_ANNOTATION: "app", legacy.UID_ANNOTATION: "u"}), sa)
    assert not legacy.is_token_secret_of(secret(**{legacy.NAME_ANNOTATION: "app", legacy.UID_ANNOTATION: "v"}), sa)
    assert not legacy.is_token_secret_of(secret(**{legacy.NAME_ANNOTATION: "other"}), sa)
    assert not legacy.is_token_secret_of({**secret(**{legacy.NAME_ANNOTATION: "app"}), "type": "Opaque"}, sa)
