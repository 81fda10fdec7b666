"""The authenticator chain's pure parts: the token file (upstream's tokenfile semantics), the chain's
order and outcomes (x509 → token → anonymous, fail on a wrong token), and the failure throttle."""

from __future__ import annotations

import logging

import pytest

from nodeagent.apiserver.authn import tokens
from nodeagent.apiserver.authn.chain import INVALID_TOKEN, Authenticator, bearer, user_of_subject
from nodeagent.apiserver.authn.throttle import FailureThrottle
from nodeagent.apiserver.authn.tokens import TokenRow, TokenTable
from nodeagent.apiserver.authn.user import UserInfo

ADMIN = UserInfo("admin", "", ("system:masters",))


def test_token_file_as_upstream_reads_it(caplog: pytest.LogCaptureFixture) -> None:
    text = 'tok1,alice,uid-a,"g1,g2"\n\ntok2,bob,uid-b\n,nobody,x\ntok1,carol,uid-c,g3\n'
    with caplog.at_level(logging.WARNING):
        rows = tokens.parse(text, "/f.csv")
    # the later duplicate wins; the empty token is skipped; groups split on commas
    assert rows == [TokenRow("tok2", UserInfo("bob", "uid-b")), TokenRow("tok1", UserInfo("carol", "uid-c", ("g3",)))]
    assert "empty token has been found in token file '/f.csv', record number '3'" in caplog.text
    assert "duplicate token has been found in token file '/f.csv', record number '4'" in caplog.text
    with pytest.raises(tokens.TokenFileError, match=r"token file '/f.csv' must have at least 3 columns "
                                                    r"\(token, user name, user uid\), found 2"):
        tokens.parse("tok,user\n", "/f.csv")
    rows = [TokenRow("t", UserInfo("u", "1", ("a", "b"))), TokenRow("s", UserInfo("v", ""))]
    assert tokens.parse(tokens.render(rows), "x") == rows


def test_token_table_lookup() -> None:
    table = TokenTable([TokenRow("secret", ADMIN)])
    assert table.authenticate("secret") == ADMIN
    for wrong in ("", "secre", "secret1", "SECRET", "s\udcffecret"):
        assert table.authenticate(wrong) is None


@pytest.mark.parametrize(("header", "token"), [
    (None, None), ("", None), ("Bearer abc", "abc"), ("bearer abc", "abc"), ("  Bearer abc  ", "abc"),
    ("Bearer  abc", None), ("Basic abc", None), ("Bearer", None), ("Bearer abc def", "abc"),
])
def test_bearer_header_parsing(header: str | None, token: str | None) -> None:
    assert bearer(header) == token


def test_chain_order_and_outcomes() -> None:
    chain = Authenticator(TokenTable([TokenRow("secret", ADMIN)]), anonymous=False)
    node = [[("organizationName", "system:nodes")], [("commonName", "system:node:n1")]]
    out = chain.authenticate(node, "Bearer secret")  # the certificate answers first
    assert out.user == UserInfo("system:node:n1", "", ("system:nodes", "system:authenticated"))
    assert out.user.node_name() == "n1"
    # a certificate without a common name is no answer: the token is asked next
    out = chain.authenticate([[("organizationName", "x")]], "Bearer secret")
    assert out.user == UserInfo("admin", "", ("system:masters", "system:authenticated"))
    out = chain.authenticate(None, "Bearer wrong")
    assert (out.user, out.error, out.token_presented) == (None, INVALID_TOKEN, True)
    assert chain.authenticate(None, None).user is None
    assert chain.authenticate(None, "Basic dXNlcjpwdw==").user is None
    anon = Authenticator(TokenTable([TokenRow("secret", ADMIN)]), anonymous=True)
    assert anon.authenticate(None, None).user == UserInfo("system:anonymous", "", ("system:unauthenticated",))
    # a wrong token is never downgraded to anonymous (union.NewFailOnError)
    assert anon.authenticate(None, "Bearer wrong").error == INVALID_TOKEN
    out = anon.authenticate(None, "Bearer secret", may_check_token=False)
    assert out.user is None and out.throttled
    assert user_of_subject([[("commonName", "u")], [("organizationName", "a")], [("organizationName", "b")]]) \
        == UserInfo("u", "", ("a", "b"))


def test_throttle_bucket_and_log_lines() -> None:
    t = FailureThrottle(burst=3, rate=0.5, interval=60.0)
    now = 100.0
    first = t.failed("10.0.0.1", INVALID_TOKEN, now)
    assert first is not None and first.count == 1 and first.first
    assert t.retry_after("10.0.0.1", now) == 0
    assert t.failed("10.0.0.1", INVALID_TOKEN, now) is None
    assert t.failed("10.0.0.1", INVALID_TOKEN, now) is None
    assert t.retry_after("10.0.0.1", now) == 2  # empty: one failure back after 1/rate seconds
    assert t.retry_after("10.0.0.2", now) == 0  # another source is not affected
    for _ in range(996):
        t.failed("10.0.0.1", "throttled", now, checked=False)
    assert t.retry_after("10.0.0.1", now + 2) == 0  # refused unread, they drained nothing: refilled on time
    assert t.flush(now + 10) == []  # not an interval since the first line
    lines = t.flush(now + 60)
    assert [(x.source, x.count) for x in lines] == [("10.0.0.1", 998)]
    assert t.retry_after("10.0.0.1", now + 60) == 0  # refilled
    assert t.flush(now + 200) == [] and t.pending() == []
