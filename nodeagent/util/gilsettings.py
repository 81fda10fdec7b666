"""The interpreter's thread switch interval for the daemon process (set once by `nodeagent run`).

Why: one event loop serves every socket (the API, /healthz, pod-resources) while worker threads do
the heavy pure-Python work off it (a big object's decode, validation, size check and store write, the
node's status of thousands of containers, the state database's records). Each time the loop thread
gives the GIL up (every socket read or write, file operation, select) and a worker takes it, the loop
gets it back only when the worker is asked to drop it, after the switch interval: 5 ms by default.
A loop turn with a dozen such calls then waited up to 60 ms for nothing but the GIL (a pod
cgroup's removal: 59 ms for 12 syscalls beside a worker writing the terminal status of a pod of
7,400 containers, issue 25: "no single request delays a /healthz or pod-resources answer by more than
100 ms"). At 1 ms, side by side (tests/integration/test_huge_pod_stall.py, load 3): the worst stall of
admit and start 0.05-0.06 s against 0.19-0.24 s, pod-resources List 0.09-0.21 s against 0.24-0.43 s.
The cost is more switches while two threads both compute, which the daemon rarely has for long.
"""

from __future__ import annotations

import sys

SWITCH_INTERVAL = 0.001
"""Seconds a thread keeps the GIL while another asks for it (sys.setswitchinterval; default 0.005)."""


def apply() -> None:
    """Process-wide: call from the program's entry point, not from library code or tests."""
    sys.setswitchinterval(SWITCH_INTERVAL)
