"""Records kept per claim uid, persisted as one versioned JSON file rewritten atomically on each change.

The kit's PreparedStore (what prepare answered) and the netdev driver's LinkStore (what prepare
did to the host) are both this; only the record type, its JSON form and the file's name in
error texts differ, so those are passed in. The file: {"version": N, "claims": {uid: record}},
uids sorted, mode 0600. Without a path the records live in memory only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from nodeagent.plugin_kit import ConfigError
from plugins.dra_kit.cdi import write_atomic

R = TypeVar("R")


class ClaimFile(Generic[R]):
    """Records by claim uid. what: the file's name in errors ("checkpoint"); key(record) -> uid;
    encode(record) -> JSON object; decode(uid, JSON object) -> record (KeyError/TypeError/ValueError
    on a malformed entry, reported as a ConfigError naming the file)."""

    def __init__(
        self,
        path: Path | None,
        *,
        what: str,
        version: int,
        key: Callable[[R], str],
        encode: Callable[[R], dict[str, Any]],
        decode: Callable[[str, Any], R],
    ) -> None:
        self.path = path
        self._what = what
        self._version = version
        self._key = key
        self._encode = encode
        self._decode = decode
        self._records: dict[str, R] = {}
        if path is not None and path.exists():
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            doc = json.loads(path.read_text())
            if doc.get("version") != self._version:
                raise ValueError(f"unsupported version {doc.get('version')!r}")
            for uid, entry in doc["claims"].items():
                self._records[uid] = self._decode(str(uid), entry)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise ConfigError(f"{self._what} {path}: cannot read: {err}") from None

    def _save(self) -> None:
        if self.path is None:
            return
        doc = {
            "version": self._version,
            "claims": {uid: self._encode(record) for uid, record in sorted(self._records.items())},
        }
        write_atomic(self.path, json.dumps(doc, indent=1).encode(), mode=0o600)

    def get(self, uid: str) -> R | None:
        return self._records.get(uid)

    def put(self, record: R) -> None:
        self._records[self._key(record)] = record
        self._save()

    def delete(self, uid: str) -> None:
        if self._records.pop(uid, None) is not None:
            self._save()

    def uids(self) -> list[str]:
        return sorted(self._records)

    def all(self) -> list[R]:
        return [self._records[uid] for uid in sorted(self._records)]
