"""Response header values as kube-apiserver writes them: Warning headers and the sanitising of every value.

Why: a header value comes from the request more often than it seems (a field name in an
`unknown field` warning, a name in a message), and aiohttp refuses to serialise a header holding
a control character: the response is then never written, after a write was already committed, and
the client sees the connection drop. Upstream never gets there:
- k8s.io/apiserver's warning recorder (endpoints/filters/warning.go) skips empty texts, keeps each
  text once, writes `299 - "text"` with `"` and `\\` escaped (apimachinery's NewWarningHeader), drops
  a text that is not valid UTF-8 or holds a control character (NewWarningHeader refuses it), and
  once the texts pass 4096 runes in all, cuts each to 256 runes and stops adding beyond the budget;
- net/http writes every HTTP/1.1 header value with CR and LF turned into spaces, and its HTTP/2
  server leaves out a value that still holds another control character.
`safe_headers` applies the last two to every answer, so no header value can break one. Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from multidict import CIMultiDict

TRUNCATE_AT_TOTAL_RUNES = 4 * 1024
TRUNCATE_ITEM_RUNES = 256
_NEWLINES = re.compile(r"[\r\n]")
_FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # what aiohttp refuses to write (and HTTP/2 omits)


def warning_header(text: str, agent: str = "-") -> str | None:
    """apimachinery's NewWarningHeader(299, agent, text); None where it refuses the text."""
    if not _valid_utf8(text) or any(unicodedata.category(ch) == "Cc" for ch in text):
        return None
    return f'299 {agent} "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def warning_headers(texts: Iterable[str]) -> list[tuple[str, str]]:
    """The Warning headers of an answer, as the warning recorder adds them one text at a time."""
    ordered: list[str] = []
    written = 0
    truncating = False
    out: list[str] = []
    for text in texts:
        if not text or text in ordered:
            continue
        if truncating and written >= TRUNCATE_AT_TOTAL_RUNES:
            break
        ordered.append(text)
        item = text[:TRUNCATE_ITEM_RUNES] if truncating else text
        header = warning_header(item)
        if header is None:
            continue
        if written + len(item) <= TRUNCATE_AT_TOTAL_RUNES or truncating:
            written += len(item)
            out.append(header)
            continue
        # over the budget: from here on every text is cut, and the ones so far are written again cut
        truncating, written, out = True, 0, []
        for earlier in ordered:
            cut = earlier[:TRUNCATE_ITEM_RUNES]
            again = warning_header(cut)
            if again is not None:
                written += len(cut)
                out.append(again)
    return [("Warning", h) for h in out]


def safe_headers(headers: CIMultiDict[str]) -> None:
    """Every header value as net/http writes it: CR and LF as spaces; one still holding a control
    character left out (as its HTTP/2 server does), never a response that cannot be written."""
    if not any(_FORBIDDEN.search(v) for v in headers.values()):
        return
    kept = [(k, _NEWLINES.sub(" ", v).strip(" \t")) for k, v in headers.items()]
    headers.clear()
    for key, value in kept:
        if not _FORBIDDEN.search(value):
            headers.add(key, value)


def _valid_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True
