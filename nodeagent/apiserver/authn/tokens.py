"""Bearer tokens: the API server's static token table (kube-apiserver's --token-auth-file).

Why a table and not one token: each identity has its own credential (the administrator's today,
and any row an operator adds), and a token is worth exactly the identity of its row. The file
format is upstream's (k8s.io/apiserver/pkg/authentication/token/tokenfile): CSV records
`token,user,uid[,"group1,group2"]`, at least three columns, an empty token skipped with a
warning, a later duplicate winning, also with a warning.

Lookup takes the same time wherever a guessed token first differs from a real one: the table is
keyed by each token's SHA-256 digest (a guess's digest says nothing about how close the guess is)
and the stored token is compared once more with hmac.compare_digest. Upstream looks tokens up in a
plain map; the difference only removes a timing signal. Pure: parsing and lookup, no file I/O.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from nodeagent.apiserver.authn.user import UserInfo

logger = logging.getLogger(__name__)


class TokenFileError(ValueError):
    """A token file upstream would refuse to start with (the text names the file and the record)."""


@dataclass(frozen=True)
class TokenRow:
    """One record of the token file: the secret and whom it authenticates."""

    token: str
    user: UserInfo


def parse(text: str, path: str) -> list[TokenRow]:
    """The rows of a token file's `text` (named `path` in errors), as tokenfile.NewCSV reads them."""
    rows: list[TokenRow] = []
    number = 0
    try:
        records = list(csv.reader(io.StringIO(text), strict=True))
    except csv.Error as err:
        raise TokenFileError(f"token file '{path}': {err}") from None
    seen: set[str] = set()
    for record in records:
        if not record:  # Go's encoding/csv skips empty lines
            continue
        if len(record) < 3:
            raise TokenFileError(f"token file '{path}' must have at least 3 columns (token, user name, user uid), "
                                 f"found {len(record)}")
        number += 1
        token = record[0]
        if not token:
            logger.warning("empty token has been found in token file '%s', record number '%d'", path, number)
            continue
        if token in seen:
            logger.warning("duplicate token has been found in token file '%s', record number '%d'", path, number)
            rows = [r for r in rows if r.token != token]
        seen.add(token)
        groups = tuple(record[3].split(",")) if len(record) >= 4 else ()
        rows.append(TokenRow(token, UserInfo(record[1], record[2], groups)))
    return rows


def render(rows: Iterable[TokenRow]) -> str:
    """The token file holding `rows` (groups quoted as one column, as upstream's examples write them)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        record = [row.token, row.user.name, row.user.uid]
        if row.user.groups:
            record.append(",".join(row.user.groups))
        writer.writerow(record)
    return out.getvalue()


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


class TokenTable:
    """token → UserInfo, looked up without a timing signal; rows can be added while serving."""

    def __init__(self, rows: Iterable[TokenRow] = ()) -> None:
        self._rows: dict[bytes, TokenRow] = {}
        for row in rows:
            self.add(row)

    def add(self, row: TokenRow) -> None:
        self._rows[_digest(row.token)] = row

    def rows(self) -> list[TokenRow]:
        return list(self._rows.values())

    def authenticate(self, token: str) -> UserInfo | None:
        """The user of `token`; None when no row holds it (an empty token never matches)."""
        if not token:
            return None
        row = self._rows.get(_digest(token))
        if row is None or not hmac.compare_digest(row.token.encode("utf-8", "surrogateescape"),
                                                  token.encode("utf-8", "surrogateescape")):
            return None
        return row.user
