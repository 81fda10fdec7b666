"""A database's -wal file checked before SQLite opens it: a WAL cut short is refused, not recovered.

Why: SQLite recovers a WAL by keeping its frames up to the last valid commit and dropping the
rest without a word. A -wal file truncated after a crash (half of objects.db-wal gone) therefore
opened as an older database: the start's marker (marker.py) was in the part that stayed, so the
marker check passed, and the daemon started with every pod created since gone, saying nothing.

A WAL is a 32-byte header then frames of 24 + page-size bytes, each appended whole: a process
that dies (SIGKILL, a crash) leaves whole frames, so a file that ends inside a frame, or whose
header is not a WAL header, lost bytes after it was written. That is refused (StateDamaged: exit 2,
the file named and `--reset-state` offered). An empty or absent -wal file is the normal state
after a clean stop. Limit: a cut exactly on a frame boundary looks like a WAL with fewer commits
and is caught only by the markers' generation (marker.py); after a power loss (not a process
crash) a file system may keep a torn last frame, which this check refuses too. SQLite keeps a
WAL's size a whole number of frames unless `PRAGMA journal_size_limit` truncates it (neither
database sets it: setting it would need this check to allow that size).

Reads 32 bytes and a size; no SQLite, no writes.
"""

from __future__ import annotations

import struct
from pathlib import Path

from nodeagent.errors import StateDamaged
from nodeagent.state.marker import RESET_HINT

HEADER = 32
FRAME_HEADER = 24
MAGICS = (0x377F0682, 0x377F0683)  # the WAL's checksum byte order: little- or big-endian


def check_wal(db: Path) -> None:
    """Refuse `db` when its -wal file was cut short or is not a WAL (StateDamaged)."""
    wal = db.with_name(db.name + "-wal")
    try:
        size = wal.stat().st_size
        if size == 0:
            return
        with wal.open("rb") as f:
            header = f.read(HEADER)
    except FileNotFoundError:
        return
    except OSError as err:
        raise StateDamaged(f"{wal}: cannot be read: {err.strerror or err}; {RESET_HINT}") from None
    if len(header) < HEADER:
        raise StateDamaged(f"{wal}: {size} bytes, shorter than a WAL header (truncated after a crash?); the "
                           f"commits it held would be lost silently; {RESET_HINT}")
    magic, _version, page_size = struct.unpack(">III", header[:12])
    if magic not in MAGICS or not _valid_page_size(page_size):
        raise StateDamaged(f"{wal}: not a SQLite WAL (its header is damaged); the commits it held would be "
                           f"lost silently; {RESET_HINT}")
    frame = FRAME_HEADER + page_size
    whole, cut = divmod(size - HEADER, frame)
    if cut:
        raise StateDamaged(
            f"{wal}: ends inside a frame ({size} bytes: {whole} whole frames of {frame} bytes and {cut} more), "
            f"so it was cut short after it was written (truncated after a crash?); SQLite would drop its last "
            f"commits without a word; {RESET_HINT}")


def _valid_page_size(size: int) -> bool:
    """512 to 65536, a power of two (65536 is stored as 1)."""
    size = 65536 if size == 1 else size
    return 512 <= size <= 65536 and size & (size - 1) == 0
