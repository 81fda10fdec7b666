"""glibc malloc's mmap threshold for the daemon process (set once by `nodeagent run`).

Why: glibc serves a large allocation (128 KiB and up by default) with its own mmap and gives it
back to the system when freed, but it raises that threshold (up to 32 MiB) each time such a block
is freed, so from then on blocks of up to the new threshold come from the heap, where a freed
block is kept for reuse and rarely returned. The daemon's large, short-lived buffers (encoded
watch batches, a slow watcher's write buffer, request bodies) moved the threshold up after the
first burst, and the memory a burst used was never returned: 50 watchers that never read left
the daemon 40-90 MiB larger after they had gone (tests/integration/test_slow_watchers.py: +5 MiB
with the threshold fixed). Setting the threshold explicitly turns that adjustment off (mallopt(3)).

Not glibc (musl, macOS): nothing to do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

logger = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
MMAP_THRESHOLD = 64 * 1024
"""Bytes from which a block is mmapped and returned to the system when freed (fixed: no adjustment)."""


def apply() -> bool:
    """Process-wide: call from the program's entry point. True when glibc took the setting."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    if not ok:
        logger.debug("mallopt(M_MMAP_THRESHOLD) refused: allocator keeps its own threshold")
    return ok
