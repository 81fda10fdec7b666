"""Which links the driver moved into which per-claim namespace: a small JSON file, written atomically.

The kit's PreparedStore remembers what prepare answered; this file remembers what prepare
did to the host (links moved, their admin state and attributes before the move), so
unprepare can put everything back after a driver restart. An entry is written before the
first link moves (intent), so a crash mid-prepare leaves a record the retry or unprepare
completes. Without the file, unprepare still finds the links in the claim's namespace.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nodeagent.plugin_kit.netlink import Link
from plugins.dra_kit.claimfile import ClaimFile

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


def _entry_to_json(entry: ClaimLinks) -> dict[str, Any]:
    return {"netns": entry.netns,
            "links": [{"device": m.device, "ifname": m.ifname, "adminUp": m.admin_up, "link": asdict(m.link)}
                      for m in entry.links]}


def _entry_from_json(uid: str, entry: Any) -> ClaimLinks:
    links = tuple(
        MovedLink(str(m["device"]), str(m["ifname"]), bool(m["adminUp"]), _link_from(m["link"]))
        for m in entry["links"]
    )
    return ClaimLinks(uid, str(entry["netns"]), links)


class LinkStore(ClaimFile[ClaimLinks]):
    """ClaimLinks by claim uid; persisted to `path` when one is given (None: memory only)."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(path, what="netdev state", version=STATE_VERSION, key=lambda e: e.uid,
                         encode=_entry_to_json, decode=_entry_from_json)
