"""Which links the driver moved into which per-claim namespace: a small JSON file, written atomically.

The kit's PreparedStore remembers what prepare answered; this file remembers what prepare
did to the host (links moved, their admin state and attributes before the move), so
unprepare can put everything back after a driver restart. An entry is written before the
first link moves (intent), so a crash mid-prepare leaves a record the retry or unprepare
completes. Without the file, unprepare still finds the links in the claim's namespace.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nodeagent.errors import ConfigError
from nodeagent.network.model import Link
from plugins.dra_kit.cdi import write_atomic

STATE_VERSION = 1


@dataclass(frozen=True)
class MovedLink:
    device: str
    ifname: str
    admin_up: bool  # administrative state before the move, restored on the way back
    link: Link  # attributes before the move (published while the link is away)


@dataclass(frozen=True)
class ClaimLinks:
    uid: str
    netns: str  # the claim's namespace
    links: tuple[MovedLink, ...]

    def ifnames(self) -> list[str]:
        return [m.ifname for m in self.links]


def _link_from(doc: dict[str, Any]) -> Link:
    return Link(
        index=int(doc["index"]), ifname=str(doc["ifname"]), mac=str(doc["mac"]), mtu=int(doc["mtu"]),
        kind=str(doc["kind"]), operstate=str(doc["operstate"]),
        pci_address=None if doc.get("pci_address") is None else str(doc["pci_address"]),
        netns=None if doc.get("netns") is None else str(doc["netns"]),
        admin_up=bool(doc.get("admin_up", False)),
    )


class LinkStore:
    """ClaimLinks by claim uid; persisted to `path` when one is given (None: memory only)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._claims: dict[str, ClaimLinks] = {}
        if path is not None and path.exists():
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            doc = json.loads(path.read_text())
            if doc.get("version") != STATE_VERSION:
                raise ValueError(f"unsupported version {doc.get('version')!r}")
            for uid, entry in doc["claims"].items():
                links = tuple(
                    MovedLink(str(m["device"]), str(m["ifname"]), bool(m["adminUp"]), _link_from(m["link"]))
                    for m in entry["links"]
                )
                self._claims[uid] = ClaimLinks(str(uid), str(entry["netns"]), links)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise ConfigError(f"netdev state {path}: cannot read: {err}") from None

    def _save(self) -> None:
        if self.path is None:
            return
        doc = {
            "version": STATE_VERSION,
            "claims": {
                uid: {"netns": c.netns,
                      "links": [{"device": m.device, "ifname": m.ifname, "adminUp": m.admin_up,
                                 "link": asdict(m.link)} for m in c.links]}
                for uid, c in sorted(self._claims.items())
            },
        }
        write_atomic(self.path, json.dumps(doc, indent=1).encode(), mode=0o600)

    def get(self, uid: str) -> ClaimLinks | None:
        return self._claims.get(uid)

    def put(self, entry: ClaimLinks) -> None:
        self._claims[entry.uid] = entry
        self._save()

    def delete(self, uid: str) -> None:
        if self._claims.pop(uid, None) is not None:
            self._save()

    def all(self) -> list[ClaimLinks]:
        return [self._claims[uid] for uid in sorted(self._claims)]
